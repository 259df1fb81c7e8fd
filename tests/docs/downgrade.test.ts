import { afterAll, describe, expect, it } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate, openDatabase } from "../../src/store/engine/sqlite/client.ts";
import { embeddedMigrations } from "../../src/store/engine/sqlite/migrations.gen.ts";
import { OperatorError } from "../../src/core/operator-error.ts";
import { expectOneLineFailure, gateway } from "../support/cli.ts";

// docs/operations.md (Upgrades): a downgrade is a restore. An older gateway refuses a database that a
// newer one migrated, at start and in the CLI, instead of failing later on a column it does not know.
const dir = mkdtempSync(join(tmpdir(), "gw-downgrade-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A database as a newer release leaves it: one more migration row, dated after all of ours. */
function newerDatabase(name: string): string {
  const file = join(dir, name);
  const db = openDatabase(file);
  expect(migrate(db)).toBe(embeddedMigrations.length);
  const newest = Math.max(...embeddedMigrations.map((m) => m.when));
  db.$client.run("ALTER TABLE accounts ADD COLUMN added_later INTEGER NOT NULL DEFAULT 0");
  db.$client.run("INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('from-a-newer-release', ?)", [newest + 1]);
  db.$client.close();
  return file;
}

describe("an older gateway on a newer database", () => {
  it("refuses to migrate it, saying a newer gateway migrated it", () => {
    const db = openDatabase(newerDatabase("a.db"));
    try {
      expect(() => migrate(db)).toThrow(OperatorError);
      expect(() => migrate(db)).toThrow(/migrated by a newer gateway/);
    } finally {
      db.$client.close();
    }
  });

  it("refuses it in one line in serve and in read-only commands", async () => {
    const file = newerDatabase("b.db");
    for (const args of [["serve", "--port", "0"], ["account", "list"]]) {
      const line = expectOneLineFailure(await gateway([...args, "--db", file]));
      expect(line).toContain("migrated by a newer gateway");
    }
  });
});
