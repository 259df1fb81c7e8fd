// The change notices of PostgreSQL (drizzle-pg/0002, src/store/engine/postgres/changes.ts): what an instance keeps a
// copy of announces its changes at commit, whoever writes; what every request writes (money) does not.
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { migratePostgres } from "../../src/store/engine/postgres/client.ts";
import { listenForChanges, type ChangedTable, type ChangeFeed } from "../../src/store/engine/postgres/changes.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";

setDefaultTimeout(60_000);

let pg: TestPostgres;
let writer: SQL;
let listener: SQL;
let feed: ChangeFeed;
let heard: (ChangedTable | null)[] = [];

beforeAll(async () => {
  pg = await startPostgres();
  const url = await pg.createDatabase("changes");
  await migratePostgres(url);
  writer = new SQL(url);
  listener = new SQL(url);
  feed = await listenForChanges(listener, (t) => heard.push(t));
  await writer`INSERT INTO accounts (email, balance_nano, created_at) VALUES ('a@x', 1000, 1)`;
  await writer`INSERT INTO api_keys (account_id, prefix, key_hash, created_at) VALUES (1, 'gk_sk_ab', 'h', 1)`;
});

afterAll(async () => {
  await feed?.stop();
  await listener?.close();
  await writer?.close();
  await pg?.stop();
});

/** What the listener hears within a second of `write` committing. */
async function heardAfter(write: () => Promise<unknown>): Promise<(ChangedTable | null)[]> {
  // A round trip on the listener's side first, so that notices of earlier writes have arrived.
  await writer`SELECT pg_notify('gateway_changes_flush', '')`;
  await Bun.sleep(100);
  heard = [];
  await write();
  const deadline = Date.now() + 1000;
  while (heard.length === 0 && Date.now() < deadline) await Bun.sleep(10);
  await Bun.sleep(50);
  return heard;
}

describe("change notices on PostgreSQL", () => {
  it("a revoked key is announced within a second of its commit", async () => {
    expect(await heardAfter(() => writer`UPDATE api_keys SET revoked_at = 5 WHERE id = 1`)).toEqual(["api_keys"]);
  });

  it("a new key is announced", async () => {
    expect(await heardAfter(() => writer`INSERT INTO api_keys (account_id, prefix, key_hash, created_at) VALUES (1, 'gk_sk_cd', 'h2', 1)`)).toEqual(["api_keys"]);
  });

  it("a key's new budget is announced: every instance keeps it in its copy of the key", async () => {
    expect(await heardAfter(() => writer`UPDATE api_keys SET budget_nano = 5000, budget_period = 'day' WHERE id = 1`)).toEqual(["api_keys"]);
  });

  it("a disabled account is announced", async () => {
    expect(await heardAfter(() => writer`UPDATE accounts SET disabled_at = 7 WHERE id = 1`)).toEqual(["accounts"]);
  });

  it("the pause switch is announced", async () => {
    expect(await heardAfter(() => writer`INSERT INTO settings (name, value) VALUES ('paused', '1') ON CONFLICT (name) DO UPDATE SET value = '1'`)).toEqual(["settings"]);
  });

  it("a removed setting is announced", async () => {
    expect(await heardAfter(() => writer`DELETE FROM settings WHERE name = 'paused'`)).toEqual(["settings"]);
  });

  it("a spend (the budget's period counters too), a hold and a balance change announce nothing", async () => {
    const heardNow = await heardAfter(async () => {
      await writer`UPDATE api_keys SET spent_nano = spent_nano + 5, held_nano = held_nano + 1, period_start = 9, period_spent_nano = 5, budget_reached_at = 9 WHERE id = 1`;
      await writer`UPDATE accounts SET balance_nano = balance_nano - 5, held_nano = held_nano + 1 WHERE id = 1`;
    });
    expect(heardNow).toEqual([]);
  });

  it("the estimator's rows announce nothing", async () => {
    expect(await heardAfter(() => writer`INSERT INTO settings (name, value) VALUES ('calibration:m', '{}')`)).toEqual([]);
  });

  it("a rolled-back change announces nothing", async () => {
    const heardNow = await heardAfter(() =>
      writer.begin(async (tx) => {
        await tx`UPDATE api_keys SET rpm = 3 WHERE id = 1`;
        throw new Error("rolled back");
      }).catch(() => {}),
    );
    expect(heardNow).toEqual([]);
  });

  it("a lost listening connection, once back, drops every copy (notices meanwhile are lost)", async () => {
    heard = [];
    await writer`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()`;
    const deadline = Date.now() + 10_000;
    while (!heard.includes(null) && Date.now() < deadline) await Bun.sleep(50);
    expect(heard).toContain(null);
    expect(await heardAfter(() => writer`UPDATE api_keys SET rpm = 4 WHERE id = 1`)).toEqual(["api_keys"]);
  });
});
