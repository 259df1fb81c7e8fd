import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { usdToNano } from "../../src/core/money.ts";
import { postJson } from "../support/http.ts";
import { eventLines, linkIn, noticeGateway, SITE, type NoticeRig } from "./support.ts";

// What the gateway sends outside a request (docs/operations.md#email-and-notifications): the low-balance email
// once per crossing, and the operator's signed webhook events, each verified as a receiver would.

let rig: NoticeRig;
beforeAll(async () => {
  rig = await noticeGateway();
});
afterAll(() => rig.stop());

const chat = (key: string) => postJson(rig.gw, "/v1/chat/completions", key, { model: "demo-text-1", messages: [{ role: "user", content: "hi" }], max_tokens: 16 });
const lowMails = (email: string) => rig.smtp.mails.filter((m) => m.to.includes(email) && /balance is low/i.test(m.data));
const settle = () => rig.gw.services.notices.drain(5_000);

describe("low balance", () => {
  test("one email and one balance.low event per crossing, not per request below the threshold", async () => {
    const a = await rig.gw.account(1);
    const { accounts } = rig.gw.services;
    await accounts.setLowBalanceThreshold(a.accountId, usdToNano(1));
    for (let i = 0; i < 3; i++) expect((await chat(a.key)).status).toBe(200);
    await settle();
    expect(lowMails(a.email)).toHaveLength(1);
    expect(lowMails(a.email)[0]!.text).toContain(`${SITE}/`);
    expect(rig.hook.deliveries.filter((d) => d.event.type === "balance.low" && d.event.data.account_id === a.accountId)).toHaveLength(1);
    // Back above the threshold (an operator credit), then below again: a second notice.
    const admin = await rig.gw.account(0);
    rig.gw.services.db!.$client.run("UPDATE accounts SET admin = 1 WHERE id = ?", [admin.accountId]);
    await rig.gw.services.ledger.credit(a.accountId, usdToNano(1), "operator_credit");
    rig.gw.services.notices.credited(a.accountId, usdToNano(1), "operator_credit");
    await settle();
    expect((await accounts.profileOf(a.accountId))!.lowBalanceNotifiedAt).toBeNull();
    await accounts.setLowBalanceThreshold(a.accountId, usdToNano(2));
    expect((await chat(a.key)).status).toBe(200);
    await settle();
    expect(lowMails(a.email)).toHaveLength(2);
  });
});

describe("webhook events", () => {
  test("registration, verification, top-up, low balance and budget reached arrive signed with the secret", async () => {
    const b = rig.browser();
    const mailsBefore = rig.smtp.mails.length;
    const { email } = await b.register();
    const reg = await rig.hook.waitFor("account.registered", { email });
    expect(reg.event.data).toMatchObject({ email, starting_credit_usd: 0, verification_pending: true });
    const mail = (await rig.smtp.waitFor(mailsBefore + 1)).find((m) => m.to.includes(email))!;
    expect((await rig.browser().call("POST", "/api/verify", linkIn(mail.text))).status).toBe(200);
    expect((await rig.hook.waitFor("account.verified", { email })).event.data).toMatchObject({ email, starting_credit_usd: 1 });

    const a = await rig.gw.account(5);
    rig.gw.services.notices.credited(a.accountId, usdToNano(2), "top_up", "cs_test_1");
    expect((await rig.hook.waitFor("topup.credited", { account_id: a.accountId })).event.data).toMatchObject({ account_id: a.accountId, kind: "top_up", amount_usd: 2, reference: "cs_test_1" });

    rig.gw.services.notices.budgetReached({ accountId: a.accountId, keyId: a.keyId, keyPrefix: "gw-abc", budgetNano: usdToNano(3), period: "day", resetsAt: Date.UTC(2030, 0, 2) });
    rig.gw.services.notices.budgetReached({ accountId: a.accountId, keyId: a.keyId, keyPrefix: "gw-abc", budgetNano: usdToNano(3), period: "day", resetsAt: Date.UTC(2030, 0, 2) });
    const budget = await rig.hook.waitFor("budget.reached");
    expect(budget.event.data).toMatchObject({ key_id: a.keyId, budget_usd: 3, period: "day", resets_at: "2030-01-02T00:00:00.000Z" });
    await settle();
    expect(rig.hook.deliveries.filter((d) => d.event.type === "budget.reached")).toHaveLength(1);
    expect(rig.smtp.mails.filter((m) => m.to.includes(a.email) && /reached its day budget/.test(m.text))).toHaveLength(1);

    // Every delivery so far, the low-balance test's balance.low among them.
    expect(rig.hook.deliveries.some((d) => d.event.type === "balance.low")).toBe(true);
    for (const d of rig.hook.deliveries) {
      expect(d.valid).toBe(true);
      expect(d.signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(d.event.id).toMatch(/^evt_[0-9a-f]{24}$/);
      expect(Math.abs(d.event.created - Date.now() / 1000)).toBeLessThan(60);
      expect(d.body).not.toContain("smtp-pass-1");
    }
  });

  test("an operator credit in the admin API sends topup.credited", async () => {
    const admin = rig.browser();
    const { res } = await admin.register();
    const adminId = ((await res.json()) as { id: number }).id;
    rig.gw.services.db!.$client.run("UPDATE accounts SET admin = 1 WHERE id = ?", [adminId]);
    const a = await rig.gw.account(1);
    expect((await admin.call("POST", `/api/admin/accounts/${a.accountId}/credit`, { usd: "4" })).status).toBe(200);
    await settle();
    const d = rig.hook.deliveries.find((x) => x.event.type === "topup.credited" && x.event.data.account_id === a.accountId)!;
    expect(d.event.data).toMatchObject({ kind: "operator_credit", amount_usd: 4 });
  });

  test("a receiver that fails is retried with the same event until it answers", async () => {
    rig.hook.failNext = 2;
    const a = await rig.gw.account(1);
    rig.gw.services.notices.credited(a.accountId, usdToNano(1), "operator_credit");
    await settle();
    const got = rig.hook.deliveries.filter((d) => d.event.type === "topup.credited" && d.event.data.account_id === a.accountId);
    expect(got).toHaveLength(1);
    expect(got[0]!.valid).toBe(true);
  });
});

describe("a mail server that is down", () => {
  test("the registration still succeeds and the failure is one operator event without the SMTP password", async () => {
    const down = await noticeGateway({ smtpUrl: "smtp://gw:smtp-pass-1@127.0.0.1:9" });
    try {
      const lines = await eventLines(async () => {
        const { res } = await down.browser().register();
        expect(res.status).toBe(201);
        await down.gw.services.notices.drain(10_000);
      });
      const failed = lines.map((l) => JSON.parse(l)).filter((e) => e.event === "notice_failed");
      expect(failed).toHaveLength(1);
      expect(failed[0]).toMatchObject({ channel: "email", type: "verification", attempts: 3 });
      expect(lines.join("\n")).not.toContain("smtp-pass-1");
    } finally {
      await down.stop();
    }
  });
});
