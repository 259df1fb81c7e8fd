// `gateway migrate-db`: an installation moved from its SQLite file into an empty PostgreSQL database,
// proved before it is committed (issue 18). A real PostgreSQL (tests/support/postgres.ts).
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { getTableName, is } from "drizzle-orm";
import { integer, sqliteTable, SQLiteTable } from "drizzle-orm/sqlite-core";
import { migrate, openDatabase } from "../../src/store/engine/sqlite/client.ts";
import { copyPlan } from "../../src/store/engine/copy-to-postgres.ts";
import { migratePostgres } from "../../src/store/engine/postgres/client.ts";
import { acquireServeLock } from "../../src/store/engine/sqlite/serve-lock.ts";
import * as schema from "../../src/store/schema/sqlite.ts";
import { expectOneLineFailure, gateway, tempInstallation } from "../support/cli.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";

// initdb, the server's start and a few thousand rows take seconds on a loaded 2-core machine.
setDefaultTimeout(120_000);

const REQUEST_LOGS = 3_100; // crosses the copy's 500-row batches several times, and ends mid-batch
const SQLITE_TABLES = Object.values(schema).filter((t) => is(t, SQLiteTable)) as SQLiteTable[];
const SCHEMA_TABLES = SQLITE_TABLES.map((t) => getTableName(t)).sort();

let pg: TestPostgres;
let install: ReturnType<typeof tempInstallation>;
let databases = 0;

/** A fresh empty database on the test server, by URL. */
const freshTarget = () => pg.createDatabase(`target_${++databases}`);

/** An installation with every kind of row, whose books balance: what a stopped gateway leaves behind. */
function fillSource(file: string): void {
  const db = openDatabase(file);
  migrate(db);
  const s = db.$client;
  s.run("INSERT INTO accounts (id, email, password_hash, balance_nano, created_at, admin, low_balance_nano) VALUES (1, 'ada@x', 'argon2id$h', 7000000000, 1000, 1, 500000000)");
  s.run("INSERT INTO accounts (id, email, balance_nano, created_at) VALUES (2, 'bob@x', 1500000000, 2000)");
  s.run("INSERT INTO accounts (id, email, balance_nano, disabled_at, created_at) VALUES (5, 'cy@x', 0, 9000, 3000)");
  s.run("INSERT INTO api_keys (id, account_id, name, prefix, key_hash, quota_nano, spent_nano, models, rpm, created_at) VALUES (1, 1, 'laptop', 'gk_sk_a1', 'h1', 5000000000, 2500000000, '[\"m\"]', 60, 1100)");
  s.run("INSERT INTO api_keys (id, account_id, prefix, key_hash, spent_nano, created_at) VALUES (2, 1, 'gk_sk_a2', 'h2', 500000000, 1200)");
  s.run("INSERT INTO api_keys (id, account_id, prefix, key_hash, spent_nano, revoked_at, created_at) VALUES (4, 2, 'gk_sk_b1', 'h4', 500000000, 8000, 2100)");
  const ledger = s.prepare("INSERT INTO ledger_entries (id, account_id, kind, amount_nano, shortfall_nano, key_id, request_id, note, external_ref, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  ledger.run(1, 1, "registration_credit", 1_000_000_000, 0, null, null, null, null, 1000);
  ledger.run(2, 1, "top_up", 10_000_000_000, 0, null, null, null, "pi_1", 1050);
  ledger.run(3, 1, "charge", -2_000_000_000, 0, 1, "gw_a", null, null, 1300);
  ledger.run(4, 1, "charge", -500_000_000, 0, 1, "gw_b", null, null, 1400);
  ledger.run(5, 1, "charge", -500_000_000, 0, 2, "gw_c", null, null, 1500);
  ledger.run(6, 1, "operator_debit", -1_000_000_000, 0, null, null, "refund correction", null, 1600);
  ledger.run(7, 2, "registration_credit", 1_000_000_000, 0, null, null, null, null, 2000);
  ledger.run(8, 2, "operator_credit", 1_000_000_000, 0, null, null, "goodwill", null, 2050);
  ledger.run(9, 2, "charge", -500_000_000, 120, 4, "gw_d", null, null, 2200);
  ledger.run(12, 5, "registration_credit", 1_000_000_000, 0, null, null, null, null, 3000);
  ledger.run(13, 5, "operator_debit", -1_000_000_000, 0, null, null, "closing", null, 3100);
  s.run("INSERT INTO checkout_sessions (id, account_id, amount_nano, status, created_at, credited_at) VALUES ('cs_paid', 1, 10000000000, 'credited', 1040, 1050)");
  s.run("INSERT INTO checkout_sessions (id, account_id, amount_nano, created_at) VALUES ('cs_open', 2, 5000000000, 2300)");
  s.run("INSERT INTO sessions (id, account_id, created_at, expires_at, last_seen_at) VALUES ('sha-of-token', 1, 1000, 99000, 1200)");
  s.run("INSERT INTO email_verifications (account_id, token_hash, expires_at, sent_at, verified_at) VALUES (1, 'sha-of-link', 87400, 1000, 1050), (2, 'sha-of-link-2', 88400, 2000, NULL)");
  s.run("INSERT INTO account_links (account_id, purpose, token_hash, new_email, expires_at, sent_at, used_at) VALUES (1, 'password_reset', 'sha-of-reset', NULL, 4600, 1000, NULL), (2, 'email_change', 'sha-of-change', 'new@x', 88400, 2000, 2100)");
  s.run("INSERT INTO audit_log (id, actor_account_id, action, target_account_id, detail, created_at) VALUES (1, NULL, 'account.disable', 5, NULL, 9000)");
  s.run("INSERT INTO audit_log (id, actor_account_id, action, target_account_id, detail, created_at) VALUES (3, 1, 'account.admin', 2, '{\"admin\":false}', 9100)");
  s.run("INSERT INTO account_notes (account_id, note, updated_at, updated_by) VALUES (2, 'pays by invoice', 9200, 1)");
  s.run("INSERT INTO two_factor (account_id, secret, enabled_at, last_step, created_at) VALUES (1, 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP', 1100, 59859781, 1090)");
  s.run("INSERT INTO recovery_codes (code_hash, account_id, created_at, used_at) VALUES ('sha-of-code-1', 1, 1100, NULL), ('sha-of-code-2', 1, 1100, 1150)");
  s.run("INSERT INTO login_challenges (id, account_id, created_at, expires_at, used_at) VALUES ('sha-of-challenge', 1, 1140, 1440, 1150)");
  s.run("INSERT INTO idempotency_records (key_id, idempotency_key, body_sha256, state, status, content_type, response_body, request_id, created_at) VALUES (1, 'idem-1', 'sha', 'done', 200, 'application/json', '{}', 'gw_a', 1300)");
  s.run("INSERT INTO idempotency_records (key_id, idempotency_key, body_sha256, state, request_id, created_at) VALUES (2, 'idem-2', 'sha2', 'in_flight', 'gw_c', 1500)");
  s.run("INSERT INTO settings (name, value) VALUES ('paused', 'false'), ('calibration:m', '{\"bytes\":[1]}')");
  const log = s.prepare("INSERT INTO request_logs (request_id, account_id, key_id, method, path, model, stream, status, input_tokens, output_tokens, cost_nano, latency_ms, attempts, created_at) VALUES (?, 1, 1, 'POST', '/v1/messages', 'm', ?, 200, 10, 20, 1000, 42, 1, ?)");
  s.transaction(() => {
    for (let i = 0; i < REQUEST_LOGS; i++) log.run(`gw_${(1_000_000 + i).toString(36)}`, i % 2, 1_000_000 + i);
  })();
  s.close();
}

const expectedRows: Record<string, number> = {
  accounts: 3,
  api_keys: 3,
  ledger_entries: 11,
  checkout_sessions: 2,
  sessions: 1,
  email_verifications: 2,
  account_links: 2,
  audit_log: 2,
  idempotency_records: 2,
  settings: 2,
  request_logs: REQUEST_LOGS,
  code_batches: 0,
  redemption_codes: 0,
  account_notes: 1,
  two_factor: 1,
  recovery_codes: 2,
  login_challenges: 1,
};

const migrateDb = (to: string, from = install.db) => gateway(["migrate-db", "--from", from, "--to", to, "--json"]);

async function onTarget<T>(url: string, run: (db: SQL) => Promise<T>): Promise<T> {
  const db = new SQL(url, { max: 1 });
  try {
    return await run(db);
  } finally {
    await db.close();
  }
}

const accountCount = (url: string) => onTarget(url, async (db) => Number((await db`SELECT count(*) AS n FROM accounts`)[0].n));

beforeAll(async () => {
  pg = await startPostgres();
  install = tempInstallation();
  fillSource(install.db);
});

afterAll(async () => {
  install?.remove();
  await pg?.stop();
});

describe("gateway migrate-db into an empty PostgreSQL database", () => {
  let url: string;
  let result: { code: number; stdout: string; stderr: string };

  beforeAll(async () => {
    url = await freshTarget();
    result = await migrateDb(url);
  });

  it("copies every table of the SQLite schema and reports each one's rows", () => {
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as { proved: boolean; rows: Record<string, number> };
    expect(report.proved).toBe(true);
    expect(Object.keys(report.rows).sort()).toEqual(SCHEMA_TABLES);
    expect(report.rows).toEqual(expectedRows);
  });

  it("keeps every row's values, ids and booleans included", async () => {
    const accounts = await onTarget(url, (db) => db`SELECT id::int, email, balance_nano::float8, held_nano::float8, admin, disabled_at::float8, low_balance_nano::float8 FROM accounts ORDER BY id`);
    expect(accounts).toEqual([
      { id: 1, email: "ada@x", balance_nano: 7_000_000_000, held_nano: 0, admin: true, disabled_at: null, low_balance_nano: 500_000_000 },
      { id: 2, email: "bob@x", balance_nano: 1_500_000_000, held_nano: 0, admin: false, disabled_at: null, low_balance_nano: null },
      { id: 5, email: "cy@x", balance_nano: 0, held_nano: 0, admin: false, disabled_at: 9000, low_balance_nano: null },
    ]);
    const ledgerIds = await onTarget(url, (db) => db`SELECT id::int FROM ledger_entries ORDER BY id`);
    expect(ledgerIds.map((r: { id: number }) => r.id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13]);
    const logs = await onTarget(url, (db) => db`SELECT count(*) FILTER (WHERE stream)::int AS streamed, min(request_id) AS first, max(created_at)::float8 AS last FROM request_logs`);
    expect(logs[0]).toEqual({ streamed: REQUEST_LOGS / 2, first: `gw_${(1_000_000).toString(36)}`, last: 1_000_000 + REQUEST_LOGS - 1 });
  });

  it("gives the next insert on the target an id past the copied ones", async () => {
    const ids = await onTarget(url, async (db) => ({
      account: (await db`INSERT INTO accounts (email, created_at) VALUES ('new@x', 1) RETURNING id::int`)[0].id,
      key: (await db`INSERT INTO api_keys (account_id, prefix, key_hash, created_at) VALUES (1, 'gk_sk_n', 'hn', 1) RETURNING id::int`)[0].id,
      entry: (await db`INSERT INTO ledger_entries (account_id, kind, amount_nano, created_at) VALUES (5, 'operator_credit', 1, 1) RETURNING id::int`)[0].id,
      audit: (await db`INSERT INTO audit_log (action, created_at) VALUES ('x', 1) RETURNING id::int`)[0].id,
    }));
    expect(ids).toEqual({ account: 6, key: 5, entry: 14, audit: 4 });
  });

  it("refuses a target that already holds an installation, naming what it holds", async () => {
    const r = await gateway(["migrate-db", "--from", install.db, "--to", url]);
    const line = expectOneLineFailure(r);
    expect(line).toContain("is not empty (accounts: 4, account_links: 2, account_notes: 1");
    expect(line).toContain("copies into an empty database only");
    expect(await accountCount(url)).toBe(4);
  });
});

describe("gateway migrate-db with U+0000 in the source's text", () => {
  // SQLite's text keeps U+0000 (rows written before the gateway refused it); PostgreSQL's refuses it,
  // and one such value refused the whole copy.
  let url: string;
  let result: { code: number; stdout: string; stderr: string };
  const nul = tempInstallation();

  beforeAll(async () => {
    fillSource(nul.db);
    const db = openDatabase(nul.db);
    db.$client.run("UPDATE api_keys SET name = ? WHERE id = 1", ["lap\u0000top"]);
    db.$client.run("UPDATE account_notes SET note = ? WHERE account_id = 2", ["pays\u0000by\u0000invoice"]);
    db.$client.run("UPDATE request_logs SET model = ? WHERE created_at IN (1000000, 1000001)", ["m\u0000"]);
    db.$client.close();
    url = await freshTarget();
    result = await migrateDb(url, nul.db);
  });
  afterAll(() => nul.remove());

  it("copies every row, each U+0000 written as U+FFFD, and proves the copy", async () => {
    expect(result.code).toBe(0);
    expect((JSON.parse(result.stdout) as { rows: Record<string, number> }).rows).toEqual(expectedRows);
    const texts = await onTarget(url, async (db) => ({
      name: (await db`SELECT name FROM api_keys WHERE id = 1`)[0].name,
      note: (await db`SELECT note FROM account_notes WHERE account_id = 2`)[0].note,
      models: (await db`SELECT model, count(*)::int AS n FROM request_logs GROUP BY model ORDER BY model`).map((r: { model: string; n: number }) => [r.model, r.n]),
    }));
    expect(texts).toEqual({ name: "lap\uFFFDtop", note: "pays\uFFFDby\uFFFDinvoice", models: [["m", REQUEST_LOGS - 2], ["m\uFFFD", 2]] });
  });

  it("reports how many values of each column it rewrote", async () => {
    expect(JSON.parse(result.stdout).nul_replaced).toEqual({ "api_keys.name": 1, "account_notes.note": 1, "request_logs.model": 2 });
    const human = await gateway(["migrate-db", "--from", nul.db, "--to", await freshTarget()]);
    expect(human.stdout).toContain("U+0000 written as U+FFFD (PostgreSQL's text cannot hold it) in ");
    expect(human.stdout).toContain("api_keys.name 1");
  });
});

describe("gateway migrate-db --help", () => {
  it("says what is copied, what is proved and how to serve from the copy", async () => {
    const r = await gateway(["migrate-db", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("gateway migrate-db --from FILE --to postgres://");
    expect(r.stdout).toContain("balance equals its ledger sum");
    expect(r.stdout).toContain("set [database] url to the same URL");
  });
});

describe("gateway migrate-db refuses", () => {
  it("a command without --to", async () => {
    expect(expectOneLineFailure(await gateway(["migrate-db", "--from", install.db]))).toBe("gateway: --to is required");
  });

  it("a SQLite file that does not exist", async () => {
    const line = expectOneLineFailure(await gateway(["migrate-db", "--from", `${install.dir}/nope.db`, "--to", pg.url]));
    expect(line).toContain(`no database at ${install.dir}/nope.db`);
  });

  it("a URL that is not PostgreSQL, without printing its password", async () => {
    const line = expectOneLineFailure(await gateway(["migrate-db", "--from", install.db, "--to", "mysql://admin:s3cret@db.example/gw"]));
    expect(line).toContain("--to must be a postgres:// or postgresql:// URL");
    expect(line).not.toContain("s3cret");
  });

  it("a PostgreSQL it cannot reach, without printing the password", async () => {
    const line = expectOneLineFailure(await gateway(["migrate-db", "--from", install.db, "--to", "postgres://gateway:s3cret@127.0.0.1:1/gw"]));
    expect(line).toContain("postgres://gateway:***@127.0.0.1:1/gw");
    expect(line).not.toContain("s3cret");
  });

  it("a source a running gateway serve holds, and copies nothing", async () => {
    const url = await freshTarget();
    const lock = acquireServeLock(install.db);
    try {
      const line = expectOneLineFailure(await gateway(["migrate-db", "--from", install.db, "--to", url]));
      expect(line).toContain(`a 'gateway serve' is running on ${install.db}: stop it first`);
    } finally {
      lock.release();
    }
    expect(await onTarget(url, async (db) => (await db`SELECT to_regclass('accounts')::text AS t`)[0].t)).toBeNull();
  });

  it("a source with a table this gateway does not know, before touching the target", async () => {
    const stray = tempInstallation();
    try {
      fillSource(stray.db);
      const db = openDatabase(stray.db);
      db.$client.run("CREATE TABLE loyalty_points (account_id INTEGER, points INTEGER)");
      db.$client.close();
      const line = expectOneLineFailure(await gateway(["migrate-db", "--from", stray.db, "--to", pg.url]));
      expect(line).toContain("has tables this gateway does not know (loyalty_points)");
    } finally {
      stray.remove();
    }
  });

  it("a source with a column this gateway does not know, copying nothing", async () => {
    const stray = tempInstallation();
    try {
      fillSource(stray.db);
      const db = openDatabase(stray.db);
      // An operator's own column (docs/operations.md#moving-to-postgresql-gateway-migrate-db): PostgreSQL's accounts has no place for it.
      db.$client.run("ALTER TABLE accounts ADD COLUMN crm_id TEXT");
      db.$client.run("UPDATE accounts SET crm_id = 'crm-' || id");
      db.$client.close();
      const url = await freshTarget();
      const line = expectOneLineFailure(await gateway(["migrate-db", "--from", stray.db, "--to", url]));
      expect(line).toContain("has columns this gateway does not know (accounts.crm_id)");
      expect(await onTarget(url, async (db) => (await db`SELECT to_regclass('accounts')::text AS t`)[0].t)).toBeNull();
    } finally {
      stray.remove();
    }
  });
});

describe("the copy's plan", () => {
  it("follows the references: accounts before the tables that name them", () => {
    const order = copyPlan().steps.map((s) => s.name);
    for (const child of ["api_keys", "ledger_entries", "sessions", "checkout_sessions"]) expect(order.indexOf("accounts")).toBeLessThan(order.indexOf(child));
  });

  it("fails loudly on a SQLite table that has no PostgreSQL twin", () => {
    const widgets = sqliteTable("widgets", { id: integer("id").primaryKey() });
    expect(() => copyPlan([...SQLITE_TABLES, widgets])).toThrow("the table widgets has no PostgreSQL twin in store/schema/postgres.ts");
  });

  it("fails loudly on a SQLite column that has no PostgreSQL twin", () => {
    const settings = sqliteTable("settings", { name: integer("name").primaryKey(), value: integer("value"), colour: integer("colour") });
    expect(() => copyPlan([settings])).toThrow("the column settings.colour has no PostgreSQL twin");
  });
});

describe("the proof of the copy", () => {
  /**
   * Runs migrate-db into a target migrated ahead whose inserts into each named table first pass
   * through the given PL/pgSQL (NEW in hand): the copy must notice, commit nothing, and say why.
   * Returns its one-line refusal.
   */
  async function copyThrough(tamper: Record<string, string>): Promise<string> {
    const url = await freshTarget();
    await migratePostgres(url);
    for (const [table, body] of Object.entries(tamper)) {
      await onTarget(url, (db) =>
        db.unsafe(`CREATE FUNCTION tamper_${table}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${body} RETURN NEW; END $$;
          CREATE TRIGGER tamper BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION tamper_${table}();`),
      );
    }
    const line = expectOneLineFailure(await gateway(["migrate-db", "--from", install.db, "--to", url]));
    expect(line).toContain("the copy does not match, so nothing was committed: ");
    expect(await accountCount(url)).toBe(0);
    return line;
  }

  it("rolls back a copy where a balance differs from its ledger, naming the account", async () => {
    const line = await copyThrough({ accounts: "IF NEW.id = 2 THEN NEW.balance_nano := NEW.balance_nano + 1; END IF;" });
    expect(line).toContain("account 2 has a balance of 1500000001 nano-USD, its ledger sums to 1500000000");
  });

  it("rolls back a copy where a key's spend differs from its charges, naming the key", async () => {
    const line = await copyThrough({ api_keys: "IF NEW.id = 4 THEN NEW.spent_nano := 0; END IF;" });
    expect(line).toContain("key 4 has spent 0 nano-USD, its charges sum to 500000000");
  });

  it("rolls back a copy whose money differs from the source's even though it reconciles", async () => {
    const line = await copyThrough({
      accounts: "IF NEW.id = 2 THEN NEW.balance_nano := NEW.balance_nano + 1; END IF;",
      ledger_entries: "IF NEW.id = 8 THEN NEW.amount_nano := NEW.amount_nano + 1; END IF;",
    });
    expect(line).toContain("the balances total 8500000001 nano-USD, the source's 8500000000; the ledger total 8500000001 nano-USD, the source's 8500000000");
    expect(line).not.toContain("account 2");
  });

  it("rolls back a copy that lost a row, naming the table and both counts", async () => {
    const line = await copyThrough({ request_logs: "IF NEW.created_at = 1002000 THEN RETURN NULL; END IF;" });
    expect(line).toContain(`request_logs has ${REQUEST_LOGS - 1} rows, the source ${REQUEST_LOGS}`);
  });

  it("rolls back a copy that leaves money held", async () => {
    const line = await copyThrough({ accounts: "IF NEW.id = 1 THEN NEW.held_nano := 7; END IF;" });
    expect(line).toContain("held by accounts: 7 nano-USD, expected 0");
  });
});
