import { afterAll, describe, expect, it } from "bun:test";
import { chmodSync, existsSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openDatabase } from "../../src/store/engine/sqlite/client.ts";
import { startServe, tempInstallation } from "../support/cli.ts";

// The database holds password, key and session hashes and stored answers: the files the gateway
// makes are its user's alone (folder 700, gateway.db and its -wal and -shm 600).

const folders: { remove(): void }[] = [];
afterAll(() => folders.forEach((f) => f.remove()));
const folder = () => {
  const f = tempInstallation();
  folders.push(f);
  return f;
};
const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);

describe("the database's files at rest", () => {
  it("are created 700 (data/) and 600 (gateway.db, -wal, -shm) by a first start", async () => {
    const f = folder();
    const s = startServe(["--config", f.config, "--port", "0"], { cwd: f.dir });
    try {
      const url = await s.url();
      await s.until(/gk_sk_[A-Za-z0-9]+/);
      expect((await fetch(`${url}/status`)).status).toBe(200);
      const db = join(f.dir, "data", "gateway.db");
      expect(existsSync(`${db}-wal`) && existsSync(`${db}-shm`)).toBe(true);
      expect([join(f.dir, "data"), db, `${db}-wal`, `${db}-shm`].map(modeOf)).toEqual(["700", "600", "600", "600"]);
    } finally {
      s.kill();
      expect(await s.exited()).toBe(0);
    }
  });

  it("tightens an existing gateway.db readable by others to 600, and its new -wal and -shm follow", () => {
    const f = folder();
    const db = join(f.dir, "gateway.db");
    writeFileSync(db, "");
    chmodSync(db, 0o644);
    const opened = openDatabase(db);
    try {
      opened.$client.exec("CREATE TABLE t (x)");
      expect([db, `${db}-wal`, `${db}-shm`].map(modeOf)).toEqual(["600", "600", "600"]);
    } finally {
      opened.$client.close();
    }
  });

  it("leaves the mode of a folder the operator made", () => {
    const f = folder();
    chmodSync(f.dir, 0o750);
    const opened = openDatabase(join(f.dir, "gateway.db"));
    opened.$client.close();
    expect(modeOf(f.dir)).toBe("750");
  });
});
