// The PostgreSQL migrations the program carries (`[database] url`; the same as drizzle-pg/: migration-order.test.ts), applied
// to an empty database once, and the invariants of docs/database.md held by the database itself.
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { migratePostgres } from "../../src/store/engine/postgres/client.ts";
import { embeddedMigrations } from "../../src/store/engine/postgres/migrations.gen.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";

// initdb and the server's start take seconds on a loaded 2-core machine.
setDefaultTimeout(60_000);

let pg: TestPostgres;
let url: string;
let db: SQL;
let firstRun: number;
let secondRun: number;

beforeAll(async () => {
  pg = await startPostgres();
  url = await pg.createDatabase("migrations");
  firstRun = await migratePostgres(url);
  secondRun = await migratePostgres(url);
  db = new SQL(url);
  await db`INSERT INTO accounts (email, balance_nano, created_at) VALUES ('a@x', 1000, 1)`;
  await db`INSERT INTO api_keys (account_id, prefix, key_hash, created_at) VALUES (1, 'gk_sk_ab', 'h', 1)`;
  await db`INSERT INTO ledger_entries (account_id, kind, amount_nano, external_ref, created_at) VALUES (1, 'top_up', 1000, 'pi_1', 1)`;
});

afterAll(async () => {
  await db?.close();
  await pg?.stop();
});

/** The message of the error a statement fails with, or null when it succeeds. */
async function refusal(statement: Promise<unknown>): Promise<string | null> {
  try {
    await statement;
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

describe("embedded PostgreSQL migrations", () => {
  it("apply every migration to an empty database", () => {
    expect(firstRun).toBe(embeddedMigrations.length);
  });

  it("apply nothing the second time", () => {
    expect(secondRun).toBe(0);
  });

  it("are applied once when several instances migrate at the same moment", async () => {
    const fresh = await pg.createDatabase("together");
    const applied = await Promise.all([migratePostgres(fresh), migratePostgres(fresh), migratePostgres(fresh)]);
    expect(applied.sort()).toEqual([0, 0, embeddedMigrations.length]);
  });

  it("create the partial indexes with their conditions", async () => {
    const rows = await db`SELECT indexname, indexdef FROM pg_indexes WHERE indexname IN ('ledger_account_credits', 'ledger_external_ref') ORDER BY indexname`;
    expect(rows.map((r: { indexdef: string }) => r.indexdef)).toEqual([
      expect.stringContaining("WHERE (kind <> 'charge'::ledger_kind)"),
      expect.stringMatching(/^CREATE UNIQUE INDEX .* WHERE \(external_ref IS NOT NULL\)$/),
    ]);
  });
});

describe("the ledger on PostgreSQL", () => {
  it("refuses a kind that is not one of the five", async () => {
    expect(await refusal(db`INSERT INTO ledger_entries (account_id, kind, amount_nano, created_at) VALUES (1, 'gift', 5, 2)`)).toContain(
      "invalid input value for enum ledger_kind",
    );
  });

  it("refuses a credit that is not positive", async () => {
    expect(await refusal(db`INSERT INTO ledger_entries (account_id, kind, amount_nano, created_at) VALUES (1, 'top_up', 0, 2)`)).toContain("ledger_kind_sign");
  });

  it("refuses a positive charge", async () => {
    expect(await refusal(db`INSERT INTO ledger_entries (account_id, kind, amount_nano, created_at) VALUES (1, 'charge', 5, 2)`)).toContain("ledger_kind_sign");
  });

  it("refuses an operator debit of zero", async () => {
    expect(await refusal(db`INSERT INTO ledger_entries (account_id, kind, amount_nano, created_at) VALUES (1, 'operator_debit', 0, 2)`)).toContain(
      "ledger_kind_sign",
    );
  });

  it("refuses a negative shortfall", async () => {
    expect(
      await refusal(db`INSERT INTO ledger_entries (account_id, kind, amount_nano, shortfall_nano, created_at) VALUES (1, 'charge', -5, -1, 2)`),
    ).toContain("ledger_shortfall_non_negative");
  });

  it("takes a charge of zero that is all shortfall", async () => {
    expect(
      await refusal(db`INSERT INTO ledger_entries (account_id, kind, amount_nano, shortfall_nano, created_at) VALUES (1, 'charge', 0, 7, 2)`),
    ).toBeNull();
  });

  it("refuses a payment reference twice", async () => {
    expect(
      await refusal(db`INSERT INTO ledger_entries (account_id, kind, amount_nano, external_ref, created_at) VALUES (1, 'top_up', 1, 'pi_1', 3)`),
    ).toContain("ledger_external_ref");
  });

  it("refuses an entry of an account that does not exist", async () => {
    expect(await refusal(db`INSERT INTO ledger_entries (account_id, kind, amount_nano, created_at) VALUES (99, 'top_up', 1, 3)`)).toContain(
      "ledger_entries_account_id_accounts_id_fk",
    );
  });

  it("refuses to update an entry", async () => {
    expect(await refusal(db`UPDATE ledger_entries SET amount_nano = 2000 WHERE external_ref = 'pi_1'`)).toContain("append-only");
  });

  it("refuses to delete an entry", async () => {
    expect(await refusal(db`DELETE FROM ledger_entries WHERE external_ref = 'pi_1'`)).toContain("append-only");
  });

  it("refuses to truncate the ledger", async () => {
    expect(await refusal(db`TRUNCATE ledger_entries`)).toContain("append-only");
  });
});

describe("balances, spend and holds on PostgreSQL", () => {
  it("refuses a negative balance", async () => {
    expect(await refusal(db`UPDATE accounts SET balance_nano = -1 WHERE id = 1`)).toContain("accounts_balance_not_negative");
  });

  it("refuses a new account with a negative balance, which SQLite's update trigger would not see", async () => {
    expect(await refusal(db`INSERT INTO accounts (email, balance_nano, created_at) VALUES ('b@x', -1, 1)`)).toContain("accounts_balance_not_negative");
  });

  it("refuses a negative amount held on an account", async () => {
    expect(await refusal(db`UPDATE accounts SET held_nano = -1 WHERE id = 1`)).toContain("accounts_held_not_negative");
  });

  it("refuses a negative spend on a key", async () => {
    expect(await refusal(db`UPDATE api_keys SET spent_nano = -1 WHERE id = 1`)).toContain("api_keys_spent_not_negative");
  });

  it("refuses a negative amount held on a key", async () => {
    expect(await refusal(db`UPDATE api_keys SET held_nano = -1 WHERE id = 1`)).toContain("api_keys_held_not_negative");
  });

  it("refuses a hold of an instance that never registered", async () => {
    expect(await refusal(db`INSERT INTO holds (account_id, key_id, amount_nano, instance_id, created_at) VALUES (1, 1, 5, 'gw-ghost', 1)`)).toContain(
      "holds_instance_id_instances_id_fk",
    );
  });

  it("refuses a negative hold", async () => {
    await db`INSERT INTO instances (id, heartbeat_at) VALUES ('gw-1', 1) ON CONFLICT DO NOTHING`;
    expect(await refusal(db`INSERT INTO holds (account_id, key_id, amount_nano, instance_id, created_at) VALUES (1, 1, -5, 'gw-1', 1)`)).toContain(
      "holds_amount_non_negative",
    );
  });

  it("keeps a hold of a registered instance", async () => {
    await db`INSERT INTO instances (id, heartbeat_at) VALUES ('gw-2', 1)`;
    expect(await refusal(db`INSERT INTO holds (account_id, key_id, amount_nano, instance_id, created_at) VALUES (1, 1, 5, 'gw-2', 1)`)).toBeNull();
  });
});

describe("the other tables on PostgreSQL", () => {
  it("refuses a checkout session for a non-positive amount", async () => {
    expect(await refusal(db`INSERT INTO checkout_sessions (id, account_id, amount_nano, created_at) VALUES ('cs_0', 1, 0, 1)`)).toContain(
      "checkout_sessions_amount_positive",
    );
  });

  it("refuses a checkout status that is not pending or credited", async () => {
    expect(await refusal(db`INSERT INTO checkout_sessions (id, account_id, amount_nano, status, created_at) VALUES ('cs_1', 1, 5, 'paid', 1)`)).toContain(
      "invalid input value for enum checkout_status",
    );
  });

  it("refuses a credited checkout session without its credit time", async () => {
    expect(
      await refusal(db`INSERT INTO checkout_sessions (id, account_id, amount_nano, status, created_at) VALUES ('cs_2', 1, 5, 'credited', 1)`),
    ).toContain("checkout_sessions_status");
  });

  it("refuses an idempotency state other than in_flight and done", async () => {
    expect(
      await refusal(
        db`INSERT INTO idempotency_records (key_id, idempotency_key, body_sha256, state, request_id, created_at) VALUES (1, 'k', 'h', 'gone', 'gw_1', 1)`,
      ),
    ).toContain("invalid input value for enum idempotency_state");
  });

  it("refuses a second record for the same key and Idempotency-Key", async () => {
    const insert = () =>
      db`INSERT INTO idempotency_records (key_id, idempotency_key, body_sha256, state, request_id, created_at) VALUES (1, 'same', 'h', 'in_flight', 'gw_1', 1)`;
    await insert();
    expect(await refusal(insert())).toContain("idempotency_records_key_id_idempotency_key_pk");
  });

  it("keeps a token count past int4, as an upstream may report", async () => {
    await db`INSERT INTO request_logs (request_id, method, path, status, input_tokens, latency_ms, created_at) VALUES ('gw_big', 'POST', '/v1/messages', 200, ${1e12}, 5, 1)`;
    const [row] = await db`SELECT input_tokens::text AS t FROM request_logs WHERE request_id = 'gw_big'`;
    expect(row.t).toBe("1000000000000");
  });
});
