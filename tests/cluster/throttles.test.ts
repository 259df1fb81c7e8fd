// The dashboard's throttles and the daily ceiling on starting credits across two instances that share
// one PostgreSQL and one [limits] store (docs/scaling.md#login-and-registration-throttles): what one
// instance counts, the other sees.
import { SQL } from "bun";
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { startGatewayOnPostgres, type RunningGateway } from "../../src/server.ts";
import { body, Browser } from "../api/support.ts";
import { postgresConfig } from "../support/cluster.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";
import { startTestRedis, type TestRedis } from "../support/redis-server.ts";

// Argon2id per login and registration: seconds on a loaded machine.
setDefaultTimeout(90_000);

let pg: TestPostgres;
let redis: TestRedis;
let one: RunningGateway;
let two: RunningGateway;
let databaseUrl: string;

beforeAll(async () => {
  [pg, redis] = await Promise.all([startPostgres(), startTestRedis()]);
  databaseUrl = await pg.createDatabase("throttles");
  const config = (instanceId: string) =>
    postgresConfig(databaseUrl, {
      instanceId,
      server: { trust_proxy: ["127.0.0.1"] },
      sections: { limits: { store: redis.url }, dashboard: { starting_credit_usd: 1, starting_credit_daily_usd: 3 } },
      providers: [],
      models: [],
    });
  one = await startGatewayOnPostgres(config("th-1"), { port: 0, quiet: true });
  two = await startGatewayOnPostgres(config("th-2"), { port: 0, quiet: true });
});

afterAll(async () => {
  await one?.stop();
  await two?.stop();
  await Promise.all([redis?.stop(), pg?.stop()]);
});

/** The statuses of `answers`, counted: {401: 5, 429: 15}. */
async function tally(answers: Promise<Response>[]): Promise<Record<number, number>> {
  const counts: Record<number, number> = {};
  for (const res of await Promise.all(answers)) {
    counts[res.status] = (counts[res.status] ?? 0) + 1;
    await res.body?.cancel();
  }
  return counts;
}

const either = (i: number) => (i % 2 ? two : one).url;

describe("two instances on one PostgreSQL and one [limits] store", () => {
  it("grant at most the daily ceiling between them: 6 registrations at once, 3 USD in all", async () => {
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => new Browser(either(i)).register().then((r) => body(r.res))));
    expect(answers.map((a) => a.starting_credit_usd).sort()).toEqual([0, 0, 0, 1, 1, 1]);
    expect(answers.filter((a) => a.starting_credit_limited).length).toBe(3);
    const db = new SQL(databaseUrl);
    try {
      const [row] = await db`SELECT sum(amount_nano)::text AS n, count(*)::int AS c FROM ledger_entries WHERE kind = 'registration_credit'`;
      expect(row).toEqual({ n: "3000000000", c: 3 });
    } finally {
      await db.close();
    }
  });

  it("count one account's failed logins together: 20 wrong passwords at once over both, 5 checked", async () => {
    const { email } = await new Browser(one.url).register();
    const counts = await tally(Array.from({ length: 20 }, (_, i) => new Browser(either(i)).call("POST", "/api/login", { email, password: "wrong password" })));
    expect(counts).toEqual({ 401: 5, 429: 15 });
  });

  it("count one address's registrations together: 10 over both, the 11th refused on either", async () => {
    const ip = `2001:db8:77:${Math.floor(Math.random() * 0xffff).toString(16)}::1`;
    for (let i = 0; i < 10; i++) expect((await new Browser(either(i), ip).register()).res.status).toBe(201);
    for (const url of [one.url, two.url]) expect((await new Browser(url, ip).register()).res.status).toBe(429);
  });
});
