import { afterAll, describe, expect, it } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate, openDatabase } from "../../src/db/client.ts";
import { embeddedMigrations } from "../../src/db/migrations.gen.ts";

// docs/operations.md (Upgrades) tells operators that a downgrade is a restore, because an older
// binary does not notice a newer database. This pins what it describes: a database that has a
// migration this binary does not know is "up to date" to it. If the gateway learns to refuse such
// a file, this test fails and the docs must say so instead.
const dir = mkdtempSync(join(tmpdir(), "gw-downgrade-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("an older gateway on a newer database", () => {
  it("applies nothing and raises nothing", () => {
    const db = openDatabase(join(dir, "gateway.db"));
    expect(migrate(db)).toBe(embeddedMigrations.length);
    // What a newer release's migration leaves behind: one more row, dated after all of ours.
    const newest = Math.max(...embeddedMigrations.map((m) => m.when));
    db.$client.run("ALTER TABLE accounts ADD COLUMN added_later INTEGER NOT NULL DEFAULT 0");
    db.$client.run("INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('from-a-newer-release', ?)", [newest + 1]);

    expect(migrate(db)).toBe(0);
    db.$client.close();
  });
});
