import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { hashPassword } from "../../src/auth/passwords.ts";
import { formatUsd } from "../../src/core/money.ts";
import { FIXED_MODEL, GATEWAY_ENGINES, type EngineGateway } from "../support/engine-gateway.ts";
import { stopEngines } from "../support/engines.ts";
import { expectError } from "../support/errors.ts";
import { messagesBody, postWithApiKey } from "../support/keyed.ts";
import type { MockUpstream } from "../support/mock-upstream.ts";
import { Browser, body } from "./support.ts";

// This file's PostgreSQL server (support/engines.ts), after the gateways' own afterAll.
afterAll(stopEngines);
setDefaultTimeout(60_000);

// docs/dashboard.md#closing-the-account over HTTP on both engines: the books after a closure, with
// and without a balance, and with a request in flight (SQLite holds it in the process, PostgreSQL in
// accounts.held_nano).

const USD = 1_000_000_000;
const PASSWORD = "correct horse";

/** A holder of an account with `usd` and one key, logged in with a password. */
async function holder(gw: EngineGateway, usd: number | string) {
  const { key, accountId } = await gw.account(usd);
  await gw.services.accounts.setPasswordHash(accountId, await hashPassword(PASSWORD));
  const b = new Browser(gw.url);
  b.cookie = (await gw.services.sessions.open(accountId)).token;
  const email = (await gw.services.accounts.findById(accountId))!.email;
  return { b, key, accountId, email };
}

const close = (b: Browser, email: string, forfeit?: string | number) =>
  b.call("POST", "/api/me/close", { password: PASSWORD, confirm: email, ...(forfeit === undefined ? {} : { forfeit_usd: forfeit }) });

for (const engine of GATEWAY_ENGINES) {
  describe(`POST /api/me/close on ${engine.name}`, () => {
    let gw: EngineGateway;
    let up: MockUpstream;
    let stop: () => Promise<void>;
    beforeAll(async () => {
      ({ gw, up, stop } = await engine.start({ models: [FIXED_MODEL] }));
    });
    afterAll(() => stop());

    it("closes an account with no balance: no ledger entry is written and the books still add up", async () => {
      const h = await holder(gw, 0);
      const res = await close(h.b, h.email);
      expect(res.status).toBe(200);
      expect(await body(res)).toMatchObject({ closed: true, forfeited_usd: 0, keys_revoked: 1 });
      expect(await gw.ledgerRows(h.accountId)).toEqual([]);
      const m = await gw.money(h.accountId);
      expect([m.balance, m.ledgerSum, m.reserved]).toEqual([0, 0, 0]);
    });

    it("forfeits a confirmed balance as one operator_debit entry: balance 0, ledger sum 0", async () => {
      const h = await holder(gw, "2.5");
      const res = await close(h.b, h.email, "2.5");
      expect(res.status).toBe(200);
      expect((await body(res)).forfeited_usd).toBe(2.5);
      expect((await gw.ledgerRows(h.accountId)).map((r) => [r.kind, r.amount_nano])).toEqual([
        ["registration_credit", 2.5 * USD],
        ["operator_debit", -2.5 * USD],
      ]);
      const m = await gw.money(h.accountId);
      expect([m.balance, m.ledgerSum]).toEqual([0, 0]);
    });

    it("refuses a balance not confirmed exactly (409 balance_not_forfeited) and changes nothing", async () => {
      const h = await holder(gw, "2.5");
      await expectError(await close(h.b, h.email), 409, "balance_not_forfeited");
      await expectError(await close(h.b, h.email, "2.4"), 409, "balance_not_forfeited");
      const m = await gw.money(h.accountId);
      expect([m.balance, m.ledgerSum]).toEqual([2.5 * USD, 2.5 * USD]);
      expect((await gw.services.accounts.findById(h.accountId))!.closedAt).toBeNull();
      expect((await postWithApiKey(gw, "/v1/messages", messagesBody(10, "fixed"), h.key)).status).toBe(200);
    });

    it("refuses while a request is in flight (409 requests_in_flight), then closes once it settled, with the books exact", async () => {
      const h = await holder(gw, 1);
      // A stream that would run for a minute: in flight for as long as the test needs, whatever the
      // machine's load (a password check takes a second or more); the client then goes away.
      up.script({ kind: "slow_stream", events: 600, intervalMs: 100 });
      const running = await postWithApiKey(gw, "/v1/messages", { ...messagesBody(50, "fixed"), stream: true }, h.key);
      expect(running.status).toBe(200);
      expect((await gw.money(h.accountId)).reserved).toBeGreaterThan(0);
      await expectError(await close(h.b, h.email, 1), 409, "requests_in_flight");
      await running.body!.cancel();
      const deadline = Date.now() + 15_000;
      while ((await gw.money(h.accountId)).reserved > 0 && Date.now() < deadline) await Bun.sleep(10);
      const settled = await gw.money(h.accountId);
      expect(settled.reserved).toBe(0);
      expect(settled.balance).toBeLessThan(USD);
      const res = await close(h.b, h.email, formatUsd(settled.balance));
      expect(res.status).toBe(200);
      const m = await gw.money(h.accountId);
      expect([m.balance, m.ledgerSum, m.reserved]).toEqual([0, 0, 0]);
      expect((await gw.ledgerRows(h.accountId)).map((r) => r.kind)).toEqual(["registration_credit", "charge", "operator_debit"]);
    });

    it("refuses the account's keys on /v1 at once after closing, and charges nothing for them", async () => {
      const h = await holder(gw, 1);
      expect((await postWithApiKey(gw, "/v1/messages", messagesBody(10, "fixed"), h.key)).status).toBe(200);
      const before = await gw.money(h.accountId);
      expect((await close(h.b, h.email, formatUsd(before.balance))).status).toBe(200);
      await expectError(await postWithApiKey(gw, "/v1/messages", messagesBody(10, "fixed"), h.key), 403, "inactive", "permission_error");
      const m = await gw.money(h.accountId);
      expect([m.balance, m.ledgerSum]).toEqual([0, 0]);
    });

    it("answers a replayed close 401 (its session ended) and a second session's close 409 account_closed", async () => {
      const h = await holder(gw, 0);
      const other = new Browser(gw.url);
      other.cookie = (await gw.services.sessions.open(h.accountId)).token;
      const saved = h.b.cookie;
      expect((await close(h.b, h.email)).status).toBe(200);
      h.b.cookie = saved;
      expect((await close(h.b, h.email)).status).toBe(401);
      expect((await close(other, h.email)).status).toBe(401);
      // Straight to the store, as a session that raced the first would meet it.
      await expect(gw.services.accounts.close(h.accountId, 0)).rejects.toMatchObject({ code: "account_closed" });
      expect(await gw.ledgerRows(h.accountId)).toEqual([]);
    });

    it("frees the address (the row keeps an anonymised one) and removes the password", async () => {
      const h = await holder(gw, 0);
      expect((await close(h.b, h.email)).status).toBe(200);
      const row = (await gw.services.accounts.findById(h.accountId))!;
      expect(row.email).toBe(`closed-account-${h.accountId}`);
      expect(row.closedAt).not.toBeNull();
      expect(row.disabledAt).not.toBeNull();
      expect((await gw.services.accounts.loginOf(h.accountId))!.passwordHash).toBeNull();
      const again = await gw.services.accounts.create(h.email, { balanceNano: 0 });
      expect(again.id).not.toBe(h.accountId);
    });

    it("deletes the two-factor secret, recovery codes, pending login steps and emailed links", async () => {
      const h = await holder(gw, 0);
      const { twoFactor, links } = gw.services;
      const now = Date.now();
      await twoFactor.begin(h.accountId, "JBSWY3DPEHPK3PXP", now);
      expect(await twoFactor.enable(h.accountId, "JBSWY3DPEHPK3PXP", 1, [`rc-${h.accountId}`], now)).toBe(true);
      await twoFactor.openChallenge(h.accountId, `ch-${h.accountId}`, now, now + 300_000);
      await links.issue(h.accountId, "email_change", { tokenHash: `ln-${h.accountId}`, expiresAt: now + 3_600_000, newEmail: `next-${h.accountId}@test.local` }, now, now);
      expect((await close(h.b, h.email)).status).toBe(200);
      expect(await twoFactor.stateOf(h.accountId)).toBeNull();
      expect(await twoFactor.recoveryCodesLeft(h.accountId)).toBe(0);
      expect(await twoFactor.challengeOf(`ch-${h.accountId}`, Date.now())).toBeNull();
      expect(await links.peek(`ln-${h.accountId}`, "email_change", Date.now())).toBeNull();
    });
  });
}
