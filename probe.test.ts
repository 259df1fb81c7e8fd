import { it, expect } from "bun:test";
import { startTestGateway } from "./tests/support/gateway.ts";
it("probe", async () => {
  const gw = await startTestGateway();
  const t = await gw.account(1);
  const db = gw.services.db.$client;
  db.exec("CREATE TABLE dangling (id INTEGER PRIMARY KEY, ref INTEGER REFERENCES dangling(id) DEFERRABLE INITIALLY DEFERRED)");
  const commits = (gw.services as any).commits ?? (gw.services.ledger as any).commits;
  const p = commits.run(() => db.run("INSERT INTO dangling (ref) VALUES (-1)"));
  const ok = gw.services.ledger.credit(t.accountId, 1e9, "operator_credit", "inside");
  console.log("credit returned", ok, "inTransaction", db.inTransaction);
  try { await p; } catch (e) { console.log("batch failed", String(e)); }
  const m = gw.money(t.accountId);
  console.log("balance", m.balance, m.ledgerSum);
  await gw.stop();
});
