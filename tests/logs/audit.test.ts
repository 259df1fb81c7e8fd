import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import type { AuditTrail } from "../../src/store/audit/contract.ts";
import { Audit } from "../../src/store/audit/sqlite.ts";
import { PgAudit } from "../../src/store/audit/postgres.ts";
import { ENGINES, stopEngines, type Opened } from "../support/ledger-engines.ts";

// One AuditTrail, two implementations (logs/audit.ts on SQLite, logs/pg-audit.ts on PostgreSQL).

setDefaultTimeout(30_000);
afterAll(() => stopEngines());

for (const engine of ENGINES) {
  describe(`the audit log on ${engine.name}`, () => {
    let o: Opened;
    let audit: AuditTrail;
    beforeAll(async () => {
      o = await engine.open();
      audit = o.engine === "sqlite" ? new Audit(o.db) : new PgAudit(o.db);
    });
    afterAll(() => o.close());

    it("keeps who did what to whom and when, newest first", async () => {
      await audit.record({ actorAccountId: 1, action: "account_disabled", targetAccountId: 2 }, 1000);
      await audit.record({ actorAccountId: null, action: "product_paused", detail: "maintenance" }, 2000);
      expect((await audit.recent()).map(({ id: _, ...e }) => e)).toEqual([
        { actorAccountId: null, action: "product_paused", targetAccountId: null, detail: "maintenance", createdAt: 2000 },
        { actorAccountId: 1, action: "account_disabled", targetAccountId: 2, detail: null, createdAt: 1000 },
      ]);
    });

    it("gives at most the limit asked", async () => {
      await audit.record({ actorAccountId: null, action: "product_resumed" }, 3000);
      expect((await audit.recent(1)).map((e) => e.action)).toEqual(["product_resumed"]);
    });
  });
}
