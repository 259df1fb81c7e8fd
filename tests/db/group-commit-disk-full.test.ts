import { afterEach, beforeEach, describe, expect, it } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GroupCommit } from "../../src/store/commits/sqlite.ts";
import { databaseUnavailableCode } from "../../src/core/errors.ts";

// SQLite rolls the whole transaction back when a statement fails with SQLITE_FULL: the group commit
// must fail the batch's writes with a database-unavailable code (a 503), not with COMMIT's
// "no transaction is active" (a 500), and carry on with the next batch.

let dir: string;
let db: Database;
let commits: GroupCommit;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "gc-full-"));
  db = new Database(join(dir, "t.db"), { create: true, strict: true });
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("CREATE TABLE t (b BLOB)");
  const pages = (db.query("PRAGMA page_count").get() as { page_count: number }).page_count;
  db.exec(`PRAGMA max_page_count = ${pages}`);
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const big = () => db.run("INSERT INTO t VALUES (zeroblob(8000))");
const small = () => db.run("UPDATE t SET b = b WHERE 0");
const quietly = (fn: () => void) => () => {
  try {
    fn();
  } catch {
    // a request log row: its failure is reported, never thrown
  }
};
const codeOf = (p: Promise<unknown>) => p.then(() => "committed", (e: { code?: string }) => e.code ?? String(e));

describe("group commit on a full disk", () => {
  beforeEach(() => {
    commits = new GroupCommit(db);
  });

  it("fails the first write with SQLITE_FULL", async () => {
    expect(await codeOf(commits.run(big))).toBe("SQLITE_FULL");
  });

  it("fails the earlier writes of a batch that a later write's SQLITE_FULL rolled back, with that code", async () => {
    const first = codeOf(commits.run(small));
    const second = codeOf(commits.run(big));
    expect([await first, await second]).toEqual(["SQLITE_FULL", "SQLITE_FULL"]);
  });

  it("fails a batch that a swallowed failure rolled back with a code that reads as database unavailable", async () => {
    const code = await codeOf(commits.run(quietly(big)));
    expect(code).not.toBe("SQLITE_ERROR");
    expect(databaseUnavailableCode({ code })).toBe(code);
  });

  it("commits a write that came after a swallowed failure rolled its batch back, and tells its caller so", async () => {
    const lost = codeOf(commits.run(small));
    const quiet = codeOf(commits.run(quietly(big)));
    const after = codeOf(commits.run(() => db.run("INSERT INTO t VALUES (x'01')")));
    expect([await lost, await quiet, await after]).toEqual(["SQLITE_ABORT_ROLLBACK", "SQLITE_ABORT_ROLLBACK", "committed"]);
    expect(db.query("SELECT count(*) AS n FROM t").get()).toEqual({ n: 1 });
  });

  it("commits the next batch once there is room again", async () => {
    await codeOf(commits.run(big));
    db.exec("PRAGMA max_page_count = 1000000");
    expect(await codeOf(commits.run(big))).toBe("committed");
  });
});
