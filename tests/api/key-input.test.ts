import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import type { TestGateway } from "../support/gateway.ts";
import { expectError } from "../support/errors.ts";
import { getWithKey } from "../support/keyed.ts";
import { body, dashboardGateway, registeredBrowser, type Browser } from "./support.ts";

// Every login and registration hashes a password with Argon2id: a few seconds a test on a loaded machine.
setDefaultTimeout(30_000);

// docs/dashboard.md, Keys: an expiry must be a date the calendar has, and an allow-list entry an
// address or CIDR; a refusal is 400 invalid_request naming the field, and no key is created.

let gw: TestGateway;
let b: Browser;
beforeAll(async () => {
  gw = await dashboardGateway();
  b = await registeredBrowser(gw);
});
afterAll(() => gw.stop());

const keyCount = async () => (await body(await b.call("GET", "/api/keys"))).data.length as number;

/** POST /api/keys refused with 400 invalid_request; its message, once no key was created. */
async function refused(rules: Record<string, unknown>): Promise<string> {
  const before = await keyCount();
  const err = await expectError(await b.call("POST", "/api/keys", rules), 400, "invalid_request");
  expect(await keyCount()).toBe(before);
  return err.message;
}

describe("expires_at", () => {
  it("refuses 30 February instead of storing 2 March", async () => {
    expect(await refused({ expires_at: "2099-02-30" })).toBe("expires_at: 2099-02-30 is not a date: February 2099 has 28 days");
  });

  it("refuses month 13", async () => {
    expect(await refused({ expires_at: "2099-13-01" })).toBe("expires_at: 2099-13-01 is not a date: there is no month 13");
  });

  it("refuses 29 February of a year that is not a leap year", async () => {
    expect(await refused({ expires_at: "2099-02-29T12:00:00Z" })).toBe("expires_at: 2099-02-29 is not a date: February 2099 has 28 days");
  });

  it("refuses 31 April", async () => {
    expect(await refused({ expires_at: "2099-04-31" })).toStartWith("expires_at: 2099-04-31 is not a date");
  });

  it("refuses a change to an impossible date on PATCH too, leaving the expiry as it was", async () => {
    const k = await body(await b.call("POST", "/api/keys", { expires_at: "2099-01-01" }));
    await expectError(await b.call("PATCH", `/api/keys/${k.id}`, { expires_at: "2099-02-30" }), 400, "invalid_request");
    const listed = (await body(await b.call("GET", "/api/keys"))).data.find((x: { id: number }) => x.id === k.id);
    expect(listed.expires_at).toBe("2099-01-01T00:00:00.000Z");
  });

  for (const [given, stored] of [
    ["2096-02-29", "2096-02-29T00:00:00.000Z"],
    ["2099-12-31T23:59:59Z", "2099-12-31T23:59:59.000Z"],
    ["2099-01-01T10:00:00.123+02:00", "2099-01-01T08:00:00.123Z"],
    ["2099-01-01T10:00", "2099-01-01T10:00:00.000Z"],
  ]) {
    it(`still takes a valid date or time: ${given}`, async () => {
      const res = await b.call("POST", "/api/keys", { expires_at: given });
      expect(res.status).toBe(201);
      expect((await body(res)).expires_at).toBe(stored);
    });
  }
});

describe("ip_allow", () => {
  it("refuses an IPv6 address with a zone id, naming the entry", async () => {
    expect(await refused({ ip_allow: ["10.0.0.0/8", "fe80::1%eth0"] })).toBe(
      "ip_allow: not an IP address or CIDR: fe80::1%eth0 (a zone id such as %eth0 names a network interface, not an address)",
    );
  });

  it("refuses a CIDR with a zone id", async () => {
    expect(await refused({ ip_allow: ["fe80::%1/64"] })).toStartWith("ip_allow: not an IP address or CIDR: fe80::%1/64");
  });

  for (const entry of ["example.com", "10.0.0", "10.0.0.256", "10.0.0.0/8/8", "::1/129", "10.0.0.1/"]) {
    it(`refuses what is not an address or CIDR: ${entry}`, async () => {
      expect(await refused({ ip_allow: [entry] })).toContain(entry);
    });
  }

  it("still takes IPv4 and IPv6 addresses and CIDRs", async () => {
    const list = ["10.0.0.0/8", "192.168.1.7", "fe80::/10", "2001:db8::1", "::ffff:10.1.0.0/112"];
    const res = await b.call("POST", "/api/keys", { ip_allow: list });
    expect(res.status).toBe(201);
    expect((await body(res)).ip_allow).toEqual(list);
  });

  it("keeps serving a key stored with a zone id before they were refused, reading the entry without it", async () => {
    const k = await body(await b.call("POST", "/api/keys", { ip_allow: ["10.9.9.9"] }));
    gw.services.db.$client.query("UPDATE api_keys SET ip_allow = ? WHERE id = ?").run(JSON.stringify(["fe80::1%eth0", "10.9.9.9"]), k.id);
    // A change through the gateway drops the keys it holds in memory, as another process's commit would.
    expect((await b.call("PATCH", `/api/keys/${k.id}`, { name: "legacy" })).status).toBe(200);
    expect((await getWithKey(gw, "/v1/me", k.key, { "x-forwarded-for": "10.9.9.9" })).status).toBe(200);
    expect((await getWithKey(gw, "/v1/me", k.key, { "x-forwarded-for": "fe80::1" })).status).toBe(200);
    await expectError(await getWithKey(gw, "/v1/me", k.key, { "x-forwarded-for": "10.9.9.8" }), 403, "ip", "permission_error");
  });
});
