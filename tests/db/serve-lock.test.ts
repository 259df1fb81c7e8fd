import { afterEach, describe, expect, it } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { acquireServeLock, ServeLockError } from "../../src/store/engine/sqlite/serve-lock.ts";
import { ROOT } from "../support/cli.ts";

// One `gateway serve` per database: the lock is held by a process and dies with it.
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Another process that takes the lock, says so, and holds it for `ms`. */
async function holdElsewhere(database: string, ms: number) {
  const proc = Bun.spawn(
    ["bun", "-e", `const { acquireServeLock } = await import(${JSON.stringify(join(ROOT, "src/store/engine/sqlite/serve-lock.ts"))}); acquireServeLock(${JSON.stringify(database)}); console.log("held"); await Bun.sleep(${ms});`],
    { stdout: "pipe", stderr: "inherit" },
  );
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  const { value } = await reader.read();
  expect(new TextDecoder().decode(value)).toContain("held");
  return proc;
}

const database = () => {
  const d = mkdtempSync(join(tmpdir(), "gw-lock-"));
  dirs.push(d);
  return join(d, "gateway.db");
};

describe("the serve lock", () => {
  it("is taken again at once after its holder released it", () => {
    const db = database();
    acquireServeLock(db).release();
    expect(() => acquireServeLock(db).release()).not.toThrow();
  });

  it("waits for a server that is still stopping (a restart overlapping the old process)", async () => {
    const db = database();
    const other = await holdElsewhere(db, 800);
    const started = performance.now();
    const lock = acquireServeLock(db);
    expect(performance.now() - started).toBeGreaterThan(300);
    lock.release();
    await other.exited;
  });

  it("refuses, naming the database, when another server keeps it", async () => {
    const db = database();
    const other = await holdElsewhere(db, 10_000);
    try {
      expect(() => acquireServeLock(db)).toThrow(ServeLockError);
    } finally {
      other.kill();
      await other.exited;
    }
  });

  it("refuses a symlink to a served database", async () => {
    const db = database();
    const other = await holdElsewhere(db, 10_000);
    const link = join(db, "..", "link.db");
    symlinkSync(db, link);
    try {
      expect(() => acquireServeLock(link)).toThrow(ServeLockError);
    } finally {
      other.kill();
      await other.exited;
    }
  });

  it("refuses a path with `..` that names a served database", async () => {
    const db = database();
    const other = await holdElsewhere(db, 10_000);
    const dir = join(db, "..");
    mkdirSync(join(dir, "x"));
    try {
      expect(() => acquireServeLock(`${dir}/x/../gateway.db`)).toThrow(ServeLockError);
    } finally {
      other.kill();
      await other.exited;
    }
  });

  it("is released by the operating system when its holder is killed", async () => {
    const db = database();
    const other = await holdElsewhere(db, 60_000);
    other.kill("SIGKILL");
    await other.exited;
    expect(() => acquireServeLock(db).release()).not.toThrow();
  });
});
