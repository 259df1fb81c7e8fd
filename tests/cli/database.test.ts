import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { acquireServeLock } from "../../src/store/engine/sqlite/serve-lock.ts";
import { expectOneLineFailure, gateway, gatewayJson, ROOT, tempInstallation } from "../support/cli.ts";

// Each test starts gateway processes; on a loaded 2-core machine that takes more than the default 5 s.
setDefaultTimeout(30_000);

// Which database a command acts on, and what it may do to it: only serve and migrate create one,
// every command names the one it used, and the read-only commands leave the file as it was.

const install = tempInstallation();
afterAll(() => install.remove());
beforeAll(async () => {
  await gatewayJson(["migrate", "--db", install.db]);
  await gatewayJson(["account", "create", "--email", "owner@db.test", "--db", install.db]);
});

const readOnly = (email: string): string[][] => [
  ["key", "list", "--email", email],
  ["key", "find", "gk_sk_abc"],
  ["logs", "show", "gw_x"],
  ["logs", "list"],
  ["account", "show", "--email", email],
  ["account", "list"],
  ["usage"],
];

describe("a database that does not exist", () => {
  const missing = join(install.dir, "nested", "typo.db");
  for (const args of [["key", "list", "--email", "a@b.c"], ["account", "create", "--email", "a@b.c"], ["pause"], ["logs", "prune"], ["usage"]]) {
    it(`is not created by gateway ${args.slice(0, 2).join(" ")}: one line names the path`, async () => {
      const line = expectOneLineFailure(await gateway([...args, "--db", missing]));
      expect(line).toContain(missing);
      expect(existsSync(missing)).toBe(false);
      expect(existsSync(join(install.dir, "nested"))).toBe(false);
    });
  }
});

describe("every command names the database it used", () => {
  it("on stderr, while --json keeps stdout one JSON document", async () => {
    const r = await gateway(["account", "list", "--db", install.db, "--json"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(`gateway: database ${install.db}\n`);
    expect(JSON.parse(r.stdout)).toBeArray();
  });

  it("as an absolute path when given a relative one", async () => {
    // Relative to the command's working folder (the repository), wherever CI cloned it.
    const r = await gateway(["account", "list", "--db", relative(ROOT, install.db)]);
    expect(r.stderr).toBe(`gateway: database ${install.db}\n`);
  });

  it("in migrate's JSON too", async () => {
    expect(await gatewayJson(["migrate", "--db", install.db])).toMatchObject({ database: install.db });
  });
});

describe("GATEWAY_DB", () => {
  it("sets the database like --db", async () => {
    const r = await gateway(["account", "list", "--json"], { env: { GATEWAY_DB: install.db } });
    expect(r.stderr).toBe(`gateway: database ${install.db}\n`);
    expect(JSON.parse(r.stdout)).toMatchObject([{ email: "owner@db.test" }]);
  });

  it("loses to --db", async () => {
    const r = await gateway(["account", "list", "--db", install.db], { env: { GATEWAY_DB: join(install.dir, "other.db") } });
    expect(r.stderr).toBe(`gateway: database ${install.db}\n`);
  });

  it("beats the config file's [server] database", async () => {
    const config = join(install.dir, "elsewhere.toml");
    writeFileSync(config, `[server]\ndatabase = "${join(install.dir, "configured.db")}"\n`);
    const r = await gateway(["account", "list", "--config", config], { env: { GATEWAY_DB: install.db } });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(`gateway: database ${install.db}\n`);
  });
});

describe("a write command on a database behind this gateway's migrations", () => {
  it("is refused in one line while a server holds the file, and leaves its schema as it was", async () => {
    const file = join(install.dir, "behind-served.db");
    await gatewayJson(["migrate", "--db", file]);
    const db = new Database(file);
    db.exec("DELETE FROM __drizzle_migrations WHERE created_at = (SELECT max(created_at) FROM __drizzle_migrations)");
    db.close();
    // The older server still running on it, as after installing a new binary and before restarting the server.
    const lock = acquireServeLock(file);
    try {
      const line = expectOneLineFailure(await gateway(["account", "create", "--email", "new@db.test", "--db", file]));
      expect(line).toContain(`a 'gateway serve' is running on ${file}: stop it first`);
    } finally {
      lock.release();
    }
    const check = new Database(file, { readonly: true });
    expect(check.query("SELECT count(*) AS n FROM accounts").get()).toEqual({ n: 0 });
    check.close();
  });
});

describe("read-only commands", () => {
  it("leave a database on an older schema unmigrated and its file unchanged, and say so in one line", async () => {
    // One migration behind, as an older gateway left it.
    const file = join(install.dir, "older.db");
    await gatewayJson(["migrate", "--db", file]);
    const db = new Database(file);
    db.exec("ALTER TABLE accounts DROP COLUMN disabled_at");
    db.exec("DELETE FROM __drizzle_migrations WHERE created_at = (SELECT max(created_at) FROM __drizzle_migrations)");
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    db.close();
    const before = { bytes: readFileSync(file), mtime: statSync(file).mtimeMs };
    for (const args of readOnly("owner@db.test")) {
      const line = expectOneLineFailure(await gateway([...args, "--db", file]));
      expect(line).toContain("gateway migrate");
    }
    expect(readFileSync(file).equals(before.bytes)).toBe(true);
    expect(statSync(file).mtimeMs).toBe(before.mtime);
    const check = new Database(file, { readonly: true });
    expect(check.query("SELECT name FROM pragma_table_info('accounts') WHERE name = 'disabled_at'").all()).toEqual([]);
    check.close();
  });

  it("work on a file nobody may write (immutable, so even root cannot), where a write command fails in one line", async () => {
    const file = join(install.dir, "immutable.db");
    await gatewayJson(["migrate", "--db", file]);
    await gatewayJson(["account", "create", "--email", "frozen@db.test", "--db", file]);
    if (Bun.spawnSync(["chattr", "+i", file]).exitCode !== 0) {
      // chattr needs root and an ext2/3/4-like file system; without them a 0444 file is the best we have.
      chmodSync(file, 0o444);
      if (process.getuid?.() === 0) return console.warn("skipped: cannot make a file read-only for root here");
    }
    try {
      for (const args of readOnly("frozen@db.test")) {
        const r = await gateway([...args, "--db", file]);
        // logs show of an unknown id and key find of an unknown prefix fail for that reason alone.
        if (r.code !== 0) expect(r.stderr).toMatch(/no request gw_x|no key matches/);
      }
      expect(JSON.parse((await gateway(["account", "list", "--db", file, "--json"])).stdout)).toMatchObject([{ email: "frozen@db.test" }]);
      const line = expectOneLineFailure(await gateway(["account", "create", "--email", "new@db.test", "--db", file]));
      expect(line).toContain(file);
      expect(line).toContain("readonly");
    } finally {
      Bun.spawnSync(["chattr", "-i", file]);
      chmodSync(file, 0o644);
    }
  });
});

describe("a file that is not a database", () => {
  it("is refused in one line naming it, by read and write commands alike", async () => {
    const file = join(install.dir, "notes.txt");
    writeFileSync(file, "this is not a database, just some notes about one\n".repeat(100));
    for (const args of [["account", "list"], ["pause"]]) {
      const line = expectOneLineFailure(await gateway([...args, "--db", file]));
      expect(line).toContain(file);
      expect(line).toMatch(/not a (SQLite )?database/);
    }
  });
});

describe("a folder given as the database", () => {
  it("is refused in one line saying it is a folder, by read and write commands alike", async () => {
    for (const args of [["account", "list"], ["pause"]]) {
      const line = expectOneLineFailure(await gateway([...args, "--db", install.dir]));
      expect(line).toContain(`${install.dir} is a folder`);
    }
  });
});
