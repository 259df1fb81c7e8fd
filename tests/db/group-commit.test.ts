import { afterEach, beforeEach, describe, expect, it } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GroupCommit } from "../../src/store/commits/sqlite.ts";

let dir: string;
let db: Database;
let commits: GroupCommit;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "gc-"));
  db = new Database(join(dir, "t.db"), { create: true, strict: true });
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("CREATE TABLE t (v INTEGER NOT NULL UNIQUE)");
  commits = new GroupCommit(db);
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const insert = (v: number) => () => db.prepare("INSERT INTO t (v) VALUES (?)").run(v).changes;
const values = () => (db.query("SELECT v FROM t ORDER BY v").all() as { v: number }[]).map((r) => r.v);

describe("group commit", () => {
  it("resolves each write with its own result once committed", async () => {
    const [a, b] = await Promise.all([commits.run(insert(1)), commits.run(() => 42)]);
    expect(a).toBe(1);
    expect(b).toBe(42);
    expect(values()).toEqual([1]);
  });

  it("commits the writes queued in one turn in one transaction", async () => {
    const other = new Database(join(dir, "t.db"), { readonly: true });
    let seenByOther = -1;
    await Promise.all([
      commits.run(insert(1)),
      commits.run(insert(2)),
      commits.run(() => {
        insert(3)();
        // The first two are written but not committed yet: they share this write's transaction.
        seenByOther = (other.query("SELECT count(*) AS n FROM t").get() as { n: number }).n;
      }),
    ]);
    expect(seenByOther).toBe(0);
    expect(values()).toEqual([1, 2, 3]);
    other.close();
  });

  it("rolls back a failing write alone and rejects only its caller", async () => {
    const results = await Promise.allSettled([commits.run(insert(1)), commits.run(insert(1)), commits.run(insert(2))]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(values()).toEqual([1, 2]);
  });

  it("undoes every statement of the failing write, not just the one that threw", async () => {
    const half = () => {
      insert(5)();
      insert(1)(); // duplicate of the write before it in the batch
    };
    const results = await Promise.allSettled([commits.run(insert(1)), commits.run(half)]);
    expect(results[1]!.status).toBe("rejected");
    expect(values()).toEqual([1]);
  });

  it("undoes a failing first write of a batch entirely and commits the writes after it", async () => {
    db.exec("INSERT INTO t (v) VALUES (1)");
    const first = () => {
      insert(5)();
      insert(1)(); // duplicate of a committed row: the first write of the batch fails half-way
    };
    const results = await Promise.allSettled([commits.run(first), commits.run(insert(2)), commits.run(insert(3))]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "fulfilled", "fulfilled"]);
    expect(values()).toEqual([1, 2, 3]);
  });

  it("leaves no transaction open after a lone failing write, and the next batch commits", async () => {
    db.exec("INSERT INTO t (v) VALUES (1)");
    await expect(commits.run(insert(1))).rejects.toThrow(/UNIQUE/);
    expect(db.inTransaction).toBe(false);
    await commits.run(insert(2));
    expect(values()).toEqual([1, 2]);
    expect(db.inTransaction).toBe(false);
  });

  it("is durable before the caller resumes: another connection sees the write", async () => {
    await commits.run(insert(7));
    const other = new Database(join(dir, "t.db"), { readonly: true });
    expect(other.query("SELECT count(*) AS n FROM t").get()).toEqual({ n: 1 });
    other.close();
  });
});

describe("a failing write in the middle of a batch", () => {
  it("commits the batch's other writes with the results of the run that committed them", async () => {
    // The batch is rolled back and its other writes run again: each caller gets what its write returned then.
    const runs = [0, 0];
    const counted = (i: number, v: number) => () => {
      insert(v)();
      return ++runs[i]!;
    };
    const results = await Promise.allSettled([commits.run(counted(0, 1)), commits.run(insert(1)), commits.run(counted(1, 2))]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    // The first write ran twice (before and after the failure), the last once, after it.
    expect(results.map((r) => (r.status === "fulfilled" ? r.value : null))).toEqual([2, null, 1]);
    expect(values()).toEqual([1, 2]);
  });

  it("fails a write alone that fails again when the batch runs again, and commits the rest", async () => {
    let first = true;
    // Succeeds once, then fails: the second run of the batch finds it failing too.
    const flaky = () => {
      insert(3)();
      if (!first) throw new Error("failed on the second run");
      first = false;
    };
    const results = await Promise.allSettled([commits.run(insert(1)), commits.run(flaky), commits.run(insert(1)), commits.run(insert(2))]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "rejected", "fulfilled"]);
    expect(values()).toEqual([1, 2]);
    expect(db.inTransaction).toBe(false);
  });

  it("keeps a write made on the connection outside the group commit while its batch was open", async () => {
    const pending = [commits.run(insert(1))];
    // An operator's write in the same turn: part of the open batch, unknown to the group commit.
    db.run("INSERT INTO t (v) VALUES (10)");
    pending.push(commits.run(insert(1)), commits.run(insert(2)));
    const results = await Promise.allSettled(pending);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(values()).toEqual([1, 2, 10]);
  });

  it("keeps a write it is told of (a WITHOUT ROWID table's, which SQLite's update hook does not report)", async () => {
    db.exec("CREATE TABLE w (k TEXT PRIMARY KEY) WITHOUT ROWID");
    const pending = [commits.run(insert(1))];
    db.run("INSERT INTO w (k) VALUES ('kept')");
    commits.wrote();
    pending.push(commits.run(insert(1)));
    await Promise.allSettled(pending);
    expect(values()).toEqual([1]);
    expect(db.query("SELECT k FROM w").all()).toEqual([{ k: "kept" }]);
  });

  it("keeps the writes that need not wait, run again with the rest", async () => {
    commits.now(insert(1));
    expect(() => commits.now(insert(1))).toThrow(/UNIQUE/);
    commits.now(insert(2));
    await commits.run(insert(3));
    expect(values()).toEqual([1, 2, 3]);
  });
});

describe("writes that need not wait", () => {
  it("returns the result of a write at once and commits it with the turn's batch", async () => {
    const other = new Database(join(dir, "t.db"), { readonly: true });
    expect(commits.now(insert(1))).toBe(1);
    expect(other.query("SELECT count(*) AS n FROM t").get()).toEqual({ n: 0 });
    await new Promise((r) => setImmediate(r));
    expect(other.query("SELECT count(*) AS n FROM t").get()).toEqual({ n: 1 });
    other.close();
  });

  it("throws a failing write to its caller and keeps the rest of the batch", async () => {
    commits.now(insert(1));
    expect(() => commits.now(insert(1))).toThrow(/UNIQUE/);
    await commits.run(insert(2));
    expect(values()).toEqual([1, 2]);
  });

  it("refuses to run inside a transaction it did not open", () => {
    const outer = db.transaction(() => commits.now(insert(1)));
    expect(() => outer()).toThrow(/another transaction/);
    expect(values()).toEqual([]);
  });
});

describe("a write's settled hook", () => {
  /** The order in which the hook and the waiter see a write end: "settled" must come first, once. */
  const traced = (fn: () => unknown) => {
    const seen: string[] = [];
    const done = commits.run(fn, () => seen.push("settled")).then(
      () => seen.push("resolved"),
      () => seen.push("rejected"),
    );
    return { seen, done };
  };

  it("is told once, before the waiter, when the batch commits", async () => {
    const t = traced(insert(1));
    expect(t.seen).toEqual([]);
    await t.done;
    expect(t.seen).toEqual(["settled", "resolved"]);
  });

  it("is told once, before the waiter, when the write fails alone", async () => {
    const ok = traced(insert(1));
    const failing = traced(insert(1));
    await Promise.all([ok.done, failing.done]);
    expect([ok.seen, failing.seen]).toEqual([["settled", "resolved"], ["settled", "rejected"]]);
  });

  it("is told once, before the waiter, when the write fails again as its batch runs again", async () => {
    let runs = 0;
    // Passes its first run, fails once another write of the batch has failed and the batch runs again.
    const flaky = traced(() => {
      if (++runs > 1) throw new Error("fails when run again");
    });
    const failing = traced(() => {
      throw new Error("fails at once");
    });
    await Promise.all([flaky.done, failing.done]);
    expect([flaky.seen, failing.seen]).toEqual([["settled", "rejected"], ["settled", "rejected"]]);
  });

  it("is told once, before the waiter, when the COMMIT fails", async () => {
    db.exec("CREATE TABLE must_point (ref INTEGER REFERENCES t(v) DEFERRABLE INITIALLY DEFERRED)");
    db.exec("PRAGMA foreign_keys = ON");
    const t = traced(() => db.run("INSERT INTO must_point VALUES (999)"));
    await t.done;
    expect(t.seen).toEqual(["settled", "rejected"]);
  });

  it("is told once, before the waiter, when another process held the write lock for a while", async () => {
    const other = new Database(join(dir, "t.db"));
    other.exec("BEGIN IMMEDIATE");
    const t = traced(insert(1));
    await Bun.sleep(30);
    expect(t.seen).toEqual([]);
    other.exec("COMMIT");
    await t.done;
    expect(t.seen).toEqual(["settled", "resolved"]);
    expect(values()).toEqual([1]);
    other.close();
  });
});
