import { it, expect, setDefaultTimeout } from "bun:test";
import { adminOn, holderOn, body, dashboardGateway } from "./tests/api/support.ts";
setDefaultTimeout(120_000);
it("probe", async () => {
  const gw = await dashboardGateway();
  const admin = await adminOn(gw);
  const h = await holderOn(gw);
  const amounts: unknown[] = [0, -1, "-1", "abc", "1e3", 1e3, "1E3", " 1 ", "0x10", "Infinity", null, true, 1e21, "9007199.254740992", "9007199.254740991", "1.", ".5", "", "1,5", "1_000", "+1", -0, 5e-324, "0.0000000001", [1], {}, 1.0000000001];
  for (const op of ["credit", "debit"]) for (const usd of amounts) {
    const before = gw.money(h.id);
    const res = await admin.b.call("POST", `/api/admin/accounts/${h.id}/${op}`, { usd, note: "n" });
    const after = gw.money(h.id);
    const t = await res.text();
    console.log(op, JSON.stringify(usd), res.status, after.balance - before.balance, after.balance === after.ledgerSum, res.status >= 400 ? t.slice(0, 160) : "");
  }
  for (const usd of amounts) {
    const res = await admin.b.call("POST", `/api/admin/codes`, { usd, count: 1 });
    const t = await res.text();
    console.log("codes", JSON.stringify(usd), res.status, res.status >= 400 ? t.slice(0, 140) : t.slice(0,100));
  }
  for (const count of [0, -1, 1.5, 10001, "5", 1e4]) {
    const res = await admin.b.call("POST", `/api/admin/codes`, { usd: 0.01, count });
    console.log("count", JSON.stringify(count), res.status, (await res.text()).slice(0, 120));
  }
  await gw.stop();
});
