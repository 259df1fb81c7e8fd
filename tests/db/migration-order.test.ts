// The migration folders' order, which nothing else guards: the migrator applies what is newer than a
// database's last recorded migration by the journal's `when` alone, so a migration merged with an
// earlier `when` than the one before it is skipped for good on every database already past that one.
// Also the journal against the files, and the embedded modules (what the binary carries) against both.
import { afterAll, describe, expect, it } from "bun:test";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EMBEDDED, journalProblems, renderEmbeddedMigrations } from "../../scripts/embed-migrations.ts";
import { ROOT } from "../support/cli.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Journal = { entries: { idx: number; tag: string; when: number; breakpoints: boolean }[] };

/** A copy of drizzle/ in a scratch root, its journal changed by `edit`: the problems found in it. */
function problemsAfter(edit: (journal: Journal, folder: string) => void): string[] {
  const root = mkdtempSync(join(tmpdir(), "gw-journal-"));
  dirs.push(root);
  const folder = join(root, "drizzle");
  cpSync(join(ROOT, "drizzle"), folder, { recursive: true });
  const path = join(folder, "meta/_journal.json");
  const journal = JSON.parse(readFileSync(path, "utf8")) as Journal;
  edit(journal, folder);
  writeFileSync(path, JSON.stringify(journal, null, 2));
  return journalProblems(root, "drizzle");
}

const last = (j: Journal) => j.entries[j.entries.length - 1]!;
const beforeLast = (j: Journal) => j.entries[j.entries.length - 2]!;

describe("the migration folders as they are", () => {
  for (const { folder, module } of EMBEDDED) {
    it(`${folder}/ is in order: each when later than the one before, tags numbered by their index, journal and files alike`, () => {
      expect(journalProblems(ROOT, folder)).toEqual([]);
    });

    it(`${module} is exactly ${folder}/ (run \`bun run db:generate\` after changing the schema)`, () => {
      expect(readFileSync(join(ROOT, module), "utf8")).toBe(renderEmbeddedMigrations(ROOT, folder));
    });
  }
});

describe("a migration folder gone wrong is caught", () => {
  it("a migration whose when is earlier than the one before it (two branches merged out of order)", () => {
    const problems = problemsAfter((j) => {
      last(j).when = beforeLast(j).when - 1;
    });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain("is not later than");
  });

  it("two migrations with the same when", () => {
    const problems = problemsAfter((j) => {
      last(j).when = beforeLast(j).when;
    });
    expect(problems.join("\n")).toContain("is not later than");
  });

  it("a tag that appears twice", () => {
    const problems = problemsAfter((j) => {
      j.entries.push({ ...last(j), idx: j.entries.length, when: last(j).when + 1 });
    });
    expect(problems.join("\n")).toContain("appears twice");
  });

  it("two migrations under one number (both branches generated the same next one)", () => {
    const problems = problemsAfter((j, folder) => {
      const tag = `${last(j).tag.slice(0, 4)}_other_branch`;
      cpSync(join(folder, `${last(j).tag}.sql`), join(folder, `${tag}.sql`));
      j.entries.push({ ...last(j), idx: j.entries.length, tag, when: last(j).when + 1 });
    });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/_other_branch\): the tag must start with \d{4}_$/);
  });

  it("a migration file the journal does not list", () => {
    const problems = problemsAfter((_, folder) => writeFileSync(join(folder, "9999_stray.sql"), "SELECT 1;"));
    expect(problems).toEqual(["drizzle/9999_stray.sql: not in drizzle/meta/_journal.json, so never applied"]);
  });

  it("a journal entry whose file is missing", () => {
    const problems = problemsAfter((j, folder) => rmSync(join(folder, `${last(j).tag}.sql`)));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/: no file drizzle\/\d{4}_\w+\.sql$/);
  });
});
