import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { PASSWORD_CHECKS } from "../../src/auth/passwords.ts";
import { events } from "../../src/core/events.ts";
import type { TestGateway } from "../support/gateway.ts";
import { startTestRedis, type TestRedis } from "../support/redis-server.ts";
import { body, Browser, dashboardGateway, freshEmail, refusedWith } from "./support.ts";

// docs/dashboard.md#throttles and #the-daily-ceiling-on-starting-credits: the attacks of
// docs/reliability.md, "Login and registration throttles", on one instance (SQLite). Two instances
// sharing [limits] store and one PostgreSQL: tests/cluster/throttles.test.ts.

// Argon2id per login and registration: seconds on a loaded machine.
setDefaultTimeout(60_000);

let gw: TestGateway;
beforeAll(async () => {
  gw = await dashboardGateway();
});
afterAll(() => gw.stop());

/** The statuses of `answers`, counted: {401: 5, 429: 15}. */
async function tally(answers: Promise<Response>[]): Promise<Record<number, number>> {
  const counts: Record<number, number> = {};
  for (const res of await Promise.all(answers)) {
    counts[res.status] = (counts[res.status] ?? 0) + 1;
    if (res.status === 429) expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    await res.body?.cancel();
  }
  return counts;
}

describe("password checks from many addresses at once", () => {
  it("a flood within every address's throttle is held to the checks the process runs and queues: the rest are 429 at once, Retry-After 1", async () => {
    const { running, waiting } = PASSWORD_CHECKS;
    const n = running + waiting + 20;
    // Unknown emails, one address each: no per-account or per-address throttle is reached.
    const answers = Array.from({ length: n }, (_, i) => new Browser(gw.url, `10.251.${i >> 8}.${i & 255}`).call("POST", "/api/login", { email: freshEmail(), password: "wrong password" }));
    const counts = await tally(answers);
    expect((counts[401] ?? 0) + (counts[429] ?? 0)).toBe(n);
    // Checks that end while the flood still arrives free their turns: a few more than the cap may be checked.
    expect(counts[401]).toBeLessThanOrEqual(running + waiting + 10);
    expect(counts[429]).toBeGreaterThanOrEqual(10);
  });
});

describe("failed logins in parallel", () => {
  it("20 wrong passwords at once for one account from 5 addresses: 5 are checked (401), 15 are 429 with Retry-After", async () => {
    const { email } = await new Browser(gw.url).register();
    const ips = Array.from({ length: 5 }, (_, i) => `10.250.${i}.${Math.floor(Math.random() * 250)}`);
    const counts = await tally(Array.from({ length: 20 }, (_, i) => new Browser(gw.url, ips[i % 5]).call("POST", "/api/login", { email, password: "wrong password" })));
    expect(counts).toEqual({ 401: 5, 429: 15 });
  });

  it("20 wrong current passwords at once on one session: 5 are checked (401), 15 are 429", async () => {
    const b = new Browser(gw.url);
    await b.register();
    const counts = await tally(Array.from({ length: 20 }, () => b.call("POST", "/api/password", { current_password: "wrong password", new_password: "a new password" })));
    expect(counts).toEqual({ 401: 5, 429: 15 });
  });

  it("a refusal that is no wrong password (a weak new password) counts no failure", async () => {
    const b = new Browser(gw.url);
    const { email } = await b.register();
    for (let i = 0; i < 6; i++) await refusedWith(await b.call("POST", "/api/password", { current_password: "correct horse", new_password: "short" }), 400, "invalid_request");
    expect((await new Browser(gw.url).call("POST", "/api/login", { email, password: "correct horse" })).status).toBe(200);
  });
});

describe("registrations per address", () => {
  it("count an IPv6 /64 as one address: 100 from 10 addresses of one /64, 10 are opened and 90 are 429", async () => {
    const net = `2001:db8:${Math.floor(Math.random() * 0xffff).toString(16)}:7`;
    const counts: Record<number, number> = {};
    for (let round = 0; round < 10; round++) {
      const batch = Array.from({ length: 10 }, (_, i) => new Browser(gw.url, `${net}:${i}::${round + 1}`).register().then((r) => r.res));
      for (const [status, n] of Object.entries(await tally(batch))) counts[Number(status)] = (counts[Number(status)] ?? 0) + n;
    }
    expect(counts).toEqual({ 201: 10, 429: 90 });
  });

  it("count an IPv4-mapped IPv6 address as its IPv4 address", async () => {
    const v4 = `10.251.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
    for (let i = 0; i < 10; i++) expect((await new Browser(gw.url, i % 2 ? v4 : `::ffff:${v4}`).register()).res.status).toBe(201);
    await refusedWith((await new Browser(gw.url, v4).register()).res, 429, "rate_limit");
  });

  it("keep other addresses of the same IPv6 /48 apart: another /64 registers", async () => {
    const [a, b] = ["2001:db8:aaaa:1::1", "2001:db8:aaaa:2::1"];
    for (let i = 0; i < 10; i++) await new Browser(gw.url, a).register();
    await refusedWith((await new Browser(gw.url, a).register()).res, 429, "rate_limit");
    expect((await new Browser(gw.url, b).register()).res.status).toBe(201);
  });
});

describe("the daily ceiling on starting credits", () => {
  let capped: TestGateway;
  beforeAll(async () => {
    capped = await dashboardGateway({ dashboard: { starting_credit_usd: 1, starting_credit_daily_usd: 3 } });
  });
  afterAll(() => capped.stop());

  it("5 registrations at once under a 3 USD ceiling of 1 USD credits: exactly 3 USD granted, the other two open at 0 and say so", async () => {
    const answers = await Promise.all(Array.from({ length: 5 }, () => new Browser(capped.url).register().then((r) => body(r.res))));
    const credits = answers.map((a) => [a.starting_credit_usd, a.starting_credit_limited, a.balance_usd]).sort();
    expect(credits).toEqual([[0, true, 0], [0, true, 0], [1, false, 1], [1, false, 1], [1, false, 1]]);
    const granted = capped.services.db.$client.query("SELECT sum(amount_nano) AS n, count(*) AS c FROM ledger_entries WHERE kind = 'registration_credit'").get();
    expect(granted).toEqual({ n: 3_000_000_000, c: 3 });
  });

  it("does not count accounts the operator creates", async () => {
    const before = capped.services.db.$client.query("SELECT value FROM settings WHERE name LIKE 'registration_credit:%'").all();
    await capped.account(5);
    expect(capped.services.db.$client.query("SELECT value FROM settings WHERE name LIKE 'registration_credit:%'").all()).toEqual(before);
  });
});

describe("the throttles in [limits] store", () => {
  let redis: TestRedis;
  let shared: TestGateway;
  beforeAll(async () => {
    redis = await startTestRedis();
    shared = await dashboardGateway({ limits: { store: redis.url } });
  });
  afterAll(async () => {
    await shared?.stop();
    await redis?.stop();
  });

  it("are kept there: 20 wrong passwords at once, 5 checked, and the store holds no email", async () => {
    const { email } = await new Browser(shared.url).register();
    const counts = await tally(Array.from({ length: 20 }, () => new Browser(shared.url).call("POST", "/api/login", { email, password: "wrong password" })));
    expect(counts).toEqual({ 401: 5, 429: 15 });
    const keys = (await redis.send("KEYS", "gateway:th:*")) as string[];
    expect(keys.some((k) => k.startsWith("gateway:th:loginPerAccount:"))).toBe(true);
    expect(keys.join(" ")).not.toContain("@");
  });

  it("refuse logins and registrations with 503 rate_limit_unavailable while the store is down, and count again once it is back", async () => {
    await redis.stop();
    const lines: { event?: string }[] = [];
    const restoreEvents = events.redirect((line) => lines.push(JSON.parse(line) as { event?: string }));
    try {
      const b = new Browser(shared.url);
      const res = await b.call("POST", "/api/login", { email: freshEmail(), password: "wrong password" });
      await refusedWith(res, 503, "rate_limit_unavailable");
      expect(res.headers.get("retry-after")).toBe("1");
      const { email, res: reg } = await b.register();
      await refusedWith(reg, 503, "rate_limit_unavailable");
      expect(shared.services.db.$client.query("SELECT 1 FROM accounts WHERE email = ?").get(email)).toBeNull();
      expect(lines.filter((l) => l.event === "rate_limit_store_failed").length).toBe(2);
    } finally {
      restoreEvents();
      await redis.start();
    }
    expect((await new Browser(shared.url).register()).res.status).toBe(201);
  });
});
