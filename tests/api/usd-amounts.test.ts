import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import type { TestGateway } from "../support/gateway.ts";
import { expectError } from "../support/errors.ts";
import { body, dashboardGateway, registeredBrowser, type Browser } from "./support.ts";

// Every login and registration hashes a password with Argon2id: a few seconds a test on a loaded machine.
setDefaultTimeout(30_000);

// docs/api.md#amounts-in-usd: a USD amount finer than the ledger's unit (1 nano-dollar, 9 decimals)
// is 400 invalid_request, never rounded. A number is read by its shortest decimal, so 0.1 is 0.1
// exactly, and 0.1 + 0.2, which arrives as 0.30000000000000004, is refused.

const NOISY = 0.1 + 0.2;
const TOO_FINE = "0.30000000000000004 has 17 decimals, finer than the ledger's unit of 1 nano-dollar (0.000000001 USD): at most 9 decimals";

let gw: TestGateway;
let b: Browser;
let me: { id: number };
beforeAll(async () => {
  gw = await dashboardGateway();
  b = await registeredBrowser(gw);
  me = await body(await b.call("GET", "/api/me"));
});
afterAll(() => gw.stop());

const balance = () => gw.money(me.id).balance;

describe("a key's quota_usd", () => {
  it("refuses 0.1 + 0.2 with 400 invalid_request naming quota_usd, creating no key", async () => {
    const before = (await body(await b.call("GET", "/api/keys"))).data.length;
    const err = await expectError(await b.call("POST", "/api/keys", { quota_usd: NOISY }), 400, "invalid_request");
    expect(err.message).toBe(`quota_usd: ${TOO_FINE}`);
    expect((await body(await b.call("GET", "/api/keys"))).data.length).toBe(before);
  });

  it("refuses the same amount written as text", async () => {
    const err = await expectError(await b.call("POST", "/api/keys", { quota_usd: "0.30000000000000004" }), 400, "invalid_request");
    expect(err.message).toBe(`quota_usd: ${TOO_FINE}`);
  });

  it("refuses 1e-10, a tenth of a nano-dollar", async () => {
    const err = await expectError(await b.call("POST", "/api/keys", { quota_usd: 1e-10 }), 400, "invalid_request");
    expect(err.message).toStartWith("quota_usd: 0.0000000001 has 10 decimals");
  });

  for (const [usd, shown] of [
    [0.1, 0.1],
    [0.3, 0.3],
    [1e-7, 1e-7],
    [1e-9, 1e-9],
    ["2.500000000", 2.5],
  ] as const) {
    it(`takes ${JSON.stringify(usd)} exactly`, async () => {
      const res = await b.call("POST", "/api/keys", { quota_usd: usd });
      expect(res.status).toBe(201);
      expect((await body(res)).quota_usd).toBe(shown);
    });
  }
});

describe("the low-balance threshold", () => {
  it("refuses 0.1 + 0.2 naming threshold_usd, leaving the threshold as it was", async () => {
    await b.call("PUT", "/api/me/low-balance", { threshold_usd: 2 });
    const err = await expectError(await b.call("PUT", "/api/me/low-balance", { threshold_usd: NOISY }), 400, "invalid_request");
    expect(err.message).toBe(`threshold_usd: ${TOO_FINE}`);
    expect((await body(await b.call("GET", "/api/me"))).low_balance.threshold_usd).toBe(2);
  });
});

describe("an admin's credit and debit", () => {
  it("refuses 0.1 + 0.2 with 400 invalid_request, changing no balance", async () => {
    await gw.services.accounts.setAdmin(me.id, true);
    const before = balance();
    for (const action of ["credit", "debit"]) {
      await expectError(await b.call("POST", `/api/admin/accounts/${me.id}/${action}`, { usd: NOISY, note: "x" }), 400, "invalid_request");
    }
    expect(balance()).toBe(before);
  });

  it("credits 0.1 as exactly 100 000 000 nano-dollars", async () => {
    await gw.services.accounts.setAdmin(me.id, true);
    const before = balance();
    expect((await b.call("POST", `/api/admin/accounts/${me.id}/credit`, { usd: 0.1, note: "x" })).status).toBe(200);
    expect(balance()).toBe(before + 100_000_000);
  });
});
