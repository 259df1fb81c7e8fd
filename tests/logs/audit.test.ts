import { afterAll, describe, expect, it } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate, openDatabase } from "../../src/db/client.ts";
import { recentAudit, recordAudit } from "../../src/logs/audit.ts";

const dir = mkdtempSync(join(tmpdir(), "gw-audit-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const db = openDatabase(join(dir, "g.db"));
migrate(db);

describe("the audit log", () => {
  it("keeps who did what to whom and when, newest first", () => {
    recordAudit(db, { actorAccountId: 1, action: "account_disabled", targetAccountId: 2 }, 1000);
    recordAudit(db, { actorAccountId: null, action: "product_paused", detail: "maintenance" }, 2000);
    expect(recentAudit(db).map(({ id: _, ...e }) => e)).toEqual([
      { actorAccountId: null, action: "product_paused", targetAccountId: null, detail: "maintenance", createdAt: 2000 },
      { actorAccountId: 1, action: "account_disabled", targetAccountId: 2, detail: null, createdAt: 1000 },
    ]);
  });
});
