// The CLI of DESIGN.md on an installation that serves from PostgreSQL: the same commands, the same
// answers, written to and read from the shared database (a running instance is not needed).
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { migratePostgres } from "../../src/store/engine/postgres/client.ts";
import { gateway, tempInstallation, type CliResult } from "../support/cli.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";

setDefaultTimeout(60_000);

let pg: TestPostgres;
let db: SQL;
let config: string;
let remove: () => void;

beforeAll(async () => {
  pg = await startPostgres();
  const url = await pg.createDatabase("cli_commands");
  await migratePostgres(url);
  db = new SQL(url);
  const inst = tempInstallation(`[server]\nhost = "127.0.0.1"\n\n[database]\nurl = "${url}"\n`);
  config = inst.config;
  remove = inst.remove;
});

afterAll(async () => {
  await db?.close();
  remove?.();
  await pg?.stop();
});

const cli = (...args: string[]): Promise<CliResult> => gateway([...args, "--config", config]);

async function json<T = Record<string, unknown>>(...args: string[]): Promise<T> {
  const r = await cli(...args, "--json");
  if (r.code !== 0) throw new Error(`gateway ${args.join(" ")}: ${r.code}\n${r.stdout}\n${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

describe("gateway account on PostgreSQL", () => {
  it("creates, credits, debits and shows an account, each entry in the ledger", async () => {
    await json("account", "create", "--email", "a@pg.test", "--balance", "2");
    await json("account", "credit", "--email", "a@pg.test", "--usd", "3", "--note", "gift");
    const debited = await json<{ balance_usd: number }>("account", "debit", "--email", "a@pg.test", "--usd", "1", "--note", "refund");
    expect(debited.balance_usd).toBe(4);
    const shown = await json<{ balance_usd: number; recent_ledger: { kind: string }[] }>("account", "show", "--email", "a@pg.test");
    expect(shown.balance_usd).toBe(4);
    expect(shown.recent_ledger.map((e) => e.kind).sort()).toEqual(["operator_credit", "operator_debit", "registration_credit"]);
    const [r] = await db`SELECT a.balance_nano, (SELECT sum(amount_nano) FROM ledger_entries e WHERE e.account_id = a.id) AS ledger FROM accounts a WHERE email = 'a@pg.test'`;
    expect(Number(r.balance_nano)).toBe(Number(r.ledger));
  });

  it("moves a credit run twice with one --idempotency-key once, and replays the first result", async () => {
    await json("account", "create", "--email", "idem@pg.test", "--balance", "2");
    const args = ["account", "credit", "--email", "idem@pg.test", "--usd", "3", "--note", "retried", "--idempotency-key", "job-1"];
    const first = await json(...args);
    expect(await json(...args)).toEqual({ ...first, replayed: true });
    const [r] = await db`SELECT a.balance_nano, (SELECT count(*) FROM ledger_entries e WHERE e.account_id = a.id AND e.kind = 'operator_credit') AS credits FROM accounts a WHERE email = 'idem@pg.test'`;
    expect([Number(r.balance_nano), Number(r.credits)]).toEqual([5e9, 1]);
  });

  it("refuses a second account with the same email in one line", async () => {
    await json("account", "create", "--email", "twice@pg.test");
    const r = await cli("account", "create", "--email", "twice@pg.test");
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n").at(-1)).toContain("twice@pg.test");
  });

  it("disables and enables an account, and lists it with its keys", async () => {
    await json("account", "create", "--email", "d@pg.test");
    await json("key", "create", "--email", "d@pg.test");
    expect((await json<{ status: string }>("account", "disable", "--email", "d@pg.test")).status).toBe("disabled");
    expect((await json<{ status: string }>("account", "enable", "--email", "d@pg.test")).status).toBe("active");
    const list = await json<{ email: string; keys: number }[]>("account", "list");
    expect(list.find((a) => a.email === "d@pg.test")?.keys).toBe(1);
  });

  it("grants admin with an audit row", async () => {
    await json("account", "create", "--email", "admin@pg.test", "--admin");
    const [r] = await db`SELECT count(*)::int AS n FROM audit_log WHERE action = 'admin_granted'`;
    expect(r.n).toBe(1);
  });

  it("update --reset-2fa removes the account's two-factor rows, with an audit row; list and show say it was on", async () => {
    const made = await json<{ id: number }>("account", "create", "--email", "tf@pg.test");
    await db`INSERT INTO two_factor (account_id, secret, enabled_at, last_step, created_at) VALUES (${made.id}, 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP', 1000, 5, 900)`;
    await db`INSERT INTO recovery_codes (code_hash, account_id, created_at) VALUES ('sha-tf-1', ${made.id}, 1000)`;
    expect((await json<{ email: string; two_factor: boolean }[]>("account", "list")).find((a) => a.email === "tf@pg.test")?.two_factor).toBe(true);
    expect((await json<{ two_factor: boolean }>("account", "show", "--email", "tf@pg.test")).two_factor).toBe(true);
    expect(await json("account", "update", "--email", "tf@pg.test", "--reset-2fa")).toEqual({ id: made.id, email: "tf@pg.test", two_factor_reset: true });
    const [rows] = await db`SELECT (SELECT count(*)::int FROM two_factor WHERE account_id = ${made.id}) AS f, (SELECT count(*)::int FROM recovery_codes WHERE account_id = ${made.id}) AS c, (SELECT count(*)::int FROM audit_log WHERE action = 'two_factor_reset' AND target_account_id = ${made.id}) AS a`;
    expect(rows).toEqual({ f: 0, c: 0, a: 1 });
  });
});

describe("gateway key on PostgreSQL", () => {
  it("creates a key with restrictions, lists, updates, finds and revokes it", async () => {
    await json("account", "create", "--email", "k@pg.test");
    const created = await json<{ id: number; key: string; rpm: number; quota_usd: number }>("key", "create", "--email", "k@pg.test", "--rpm", "7", "--quota", "2.5", "--name", "ci");
    expect(created.key).toStartWith("gk_sk_");
    expect([created.rpm, created.quota_usd]).toEqual([7, 2.5]);
    expect((await json<unknown[]>("key", "list", "--email", "k@pg.test")).length).toBe(1);
    expect((await json<{ rpm: number }>("key", "update", String(created.id), "--rpm", "9")).rpm).toBe(9);
    const found = await json<{ id: number; account: string }[]>("key", "find", created.key);
    expect(found.map((k) => [k.id, k.account])).toEqual([[created.id, "k@pg.test"]]);
    expect(await json("key", "revoke", String(created.id))).toEqual({ id: created.id, revoked: true, already_revoked: false });
    expect(await json("key", "revoke", String(created.id))).toEqual({ id: created.id, revoked: true, already_revoked: true });
  });

  it("says in one line that no key has an id", async () => {
    const r = await cli("key", "revoke", "999999");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("no key with id 999999");
  });
});

describe("gateway pause, logs and usage on PostgreSQL", () => {
  it("pause and resume write the switch every instance reads", async () => {
    await json("pause");
    expect((await db`SELECT value FROM settings WHERE name = 'paused'`)[0].value).toBe("true");
    await json("resume");
    expect((await db`SELECT value FROM settings WHERE name = 'paused'`)[0].value).toBe("false");
  });

  it("logs show, logs list and usage read the request log", async () => {
    const [acc] = await db`SELECT id FROM accounts WHERE email = 'a@pg.test'`;
    const now = Date.now();
    await db`INSERT INTO request_logs (request_id, account_id, method, path, endpoint, model, status, cost_nano, input_tokens, output_tokens, stream, latency_ms, created_at)
      VALUES ('gw_cli_pg_1', ${acc.id}, 'POST', '/v1/messages', 'messages', 'claude-x', 200, 1500, 10, 20, false, 12, ${now})`;
    const shown = await json<{ request_id: string; account_email: string; cost_usd: number }>("logs", "show", "gw_cli_pg_1");
    expect([shown.request_id, shown.account_email, shown.cost_usd]).toEqual(["gw_cli_pg_1", "a@pg.test", 0.0000015]);
    const listed = await json<{ request_id: string }[]>("logs", "list", "--account", "a@pg.test");
    expect(listed.map((r) => r.request_id)).toEqual(["gw_cli_pg_1"]);
    const usage = await json<{ requests: number; model: string }[]>("usage", "--account", "a@pg.test");
    expect(usage.map((u) => [u.model, u.requests])).toEqual([["claude-x", 1]]);
  });

  it("logs prune removes what is older than the retention", async () => {
    const old = Date.now() - 400 * 24 * 3600 * 1000;
    await db`INSERT INTO request_logs (request_id, method, path, endpoint, status, cost_nano, stream, latency_ms, created_at) VALUES ('gw_0000_old', 'POST', '/v1/messages', 'messages', 200, 0, false, 1, ${old})`;
    const pruned = await json<{ removed: number }>("logs", "prune");
    expect(pruned.removed).toBe(1);
  });

  it("usage --calibration reads the estimator's rows", async () => {
    expect(await json<unknown[]>("usage", "--calibration")).toEqual([]);
  });
});
