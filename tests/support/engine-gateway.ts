// The real server on the mock vendor, on either database, for suites that hold the request path to
// the same money guarantees on both: SQLite (holds in the serving process) and PostgreSQL (holds as
// rows, held sums on the accounts and keys). Accounts and keys are made through the gateway's own
// owners (`services.accounts`, `services.keys`); the books are read back with plain SQL, and the
// holds where each engine keeps them. PostgreSQL is engines.ts's one server per test file, stopped
// by that file's `afterAll(stopEngines)`: stop the gateway in a describe's afterAll, which runs first.
import { parseConfig } from "../../src/config/load.ts";
import { usdToNano } from "../../src/core/money.ts";
import type { NewKey } from "../../src/store/keys/contract.ts";
import { closePostgres, openPostgres } from "../../src/store/engine/postgres/client.ts";
import { startGateway, startGatewayOnPostgres, type RunningGateway } from "../../src/server.ts";
import type { Services, SqliteServices } from "../../src/services.ts";
import { freshPostgresUrl, run, type Opened } from "./engines.ts";
import { mockProviders, testConfig } from "./gateway.ts";
import { rmSync } from "node:fs";
import { startMockUpstream, type MockUpstream } from "./mock-upstream.ts";

export interface LedgerRow {
  kind: string;
  amount_nano: number;
  shortfall_nano: number;
  key_id: number | null;
  request_id: string | null;
}

export interface Money {
  balance: number;
  /** What running requests hold: the process's holds on SQLite, accounts.held_nano on PostgreSQL. */
  reserved: number;
  ledgerSum: number;
  /** Open holds of the account: in the process on SQLite, rows of `holds` on PostgreSQL. */
  openHolds: number;
}

export interface KeyBooks {
  spent: number;
  quota: number | null;
  /** What the key's running requests hold: the process's holds on SQLite, api_keys.held_nano on PostgreSQL. */
  held: number;
}

export interface EngineGateway {
  engine: GatewayEngine["name"];
  url: string;
  services: Services;
  /** A new account with `usd` dollars (default 10) and one key. */
  account(usd?: number | string, key?: NewKey): Promise<{ key: string; accountId: number; keyId: number }>;
  /** Another key on an existing account. */
  key(accountId: number, opts?: NewKey): Promise<{ key: string; keyId: number }>;
  money(accountId: number): Promise<Money>;
  /** The account's ledger rows, oldest first. */
  ledgerRows(accountId: number): Promise<LedgerRow[]>;
  keyBooks(keyId: number): Promise<KeyBooks>;
  /** One row of plain SQL ($1, $2…) whose columns are all numbers (or null), on either engine. */
  numbers(sql: string, ...params: (string | number)[]): Promise<Record<string, number | null>>;
}

/** A text model on the mock's Anthropic route at 3 / 15 USD per million tokens: the engine suites' usual catalog. */
export const FIXED_MODEL = { id: "fixed", modalities: ["text"], endpoints: ["messages"], pricing: { input: 3, output: 15 }, routes: [{ provider: "anthropic", model: "fixed-upstream" }] };

export interface MockGatewayOptions {
  models: Record<string, unknown>[];
  /** The mock's OpenAI side as a second provider, `openai` (mockProviders). */
  openai?: boolean;
  /** More of the config file's sections (a `[payments.stripe]` pointing at a mock). */
  config?: Record<string, unknown>;
}

export interface GatewayEngine {
  name: "SQLite" | "PostgreSQL";
  /** The mock vendor and a gateway serving `models` from it; stop() stops both and closes the database. */
  start(opts: MockGatewayOptions): Promise<{ up: MockUpstream; gw: EngineGateway; stop(): Promise<void> }>;
}

let seq = 0;

/** PostgreSQL's bigint columns come back as text; SQLite's as numbers. */
const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/** What both engines answer alike: accounts, keys, the ledger rows, the spend. */
function books(
  services: Services,
  opened: Opened,
  holds: { account(accountId: number): Promise<{ reserved: number; openHolds: number }>; key(keyId: number): Promise<number> },
): Omit<EngineGateway, "engine" | "url" | "services"> {
  const numbers = async (sql: string, ...params: (string | number)[]) => {
    const [row] = await run(opened, sql, ...params);
    return Object.fromEntries(Object.entries(row ?? {}).map(([k, v]) => [k, num(v)]));
  };
  return {
    async account(usd = 10, key = {}) {
      const acc = await services.accounts.create(`user${process.pid}-${++seq}@test.local`, { balanceNano: usdToNano(usd) });
      const k = await services.keys.create(acc.id, key);
      return { key: k.key, accountId: acc.id, keyId: k.record.id };
    },
    async key(accountId, opts = {}) {
      const k = await services.keys.create(accountId, opts);
      return { key: k.key, keyId: k.record.id };
    },
    async money(accountId) {
      const m = await numbers(
        "SELECT balance_nano AS balance, (SELECT coalesce(sum(amount_nano), 0) FROM ledger_entries WHERE account_id = $1) AS ledger_sum FROM accounts WHERE id = $1",
        accountId,
      );
      return { balance: m.balance!, ledgerSum: m.ledger_sum!, ...(await holds.account(accountId)) };
    },
    async ledgerRows(accountId) {
      const rows = await run(opened, "SELECT kind, amount_nano, shortfall_nano, key_id, request_id FROM ledger_entries WHERE account_id = $1 ORDER BY id", accountId);
      return rows.map((r) => ({
        kind: String(r.kind),
        amount_nano: num(r.amount_nano)!,
        shortfall_nano: num(r.shortfall_nano)!,
        key_id: num(r.key_id),
        request_id: (r.request_id as string | null) ?? null,
      }));
    },
    async keyBooks(keyId) {
      const k = await numbers("SELECT spent_nano AS spent, quota_nano AS quota FROM api_keys WHERE id = $1", keyId);
      return { spent: k.spent!, quota: k.quota ?? null, held: await holds.key(keyId) };
    },
    numbers,
  };
}

async function withMock(
  opts: MockGatewayOptions,
  boot: (config: Record<string, unknown>) => Promise<{ gw: EngineGateway; stop(): Promise<void> }>,
): Promise<{ up: MockUpstream; gw: EngineGateway; stop(): Promise<void> }> {
  const up = await startMockUpstream();
  try {
    const { gw, stop } = await boot({ ...opts.config, providers: mockProviders(up, opts.openai), models: opts.models });
    return {
      up,
      gw,
      async stop() {
        await stop();
        await up.stop();
      },
    };
  } catch (e) {
    await up.stop();
    throw e;
  }
}

export const SQLITE_GATEWAY: GatewayEngine = {
  name: "SQLite",
  start: (opts) =>
    withMock(opts, async (raw) => {
      const { config, dir } = testConfig(raw);
      const running: RunningGateway<SqliteServices> = startGateway(config, { port: 0, quiet: true });
      const svc = running.services;
      const gw: EngineGateway = {
        engine: "SQLite",
        url: running.url,
        services: svc,
        ...books(svc, { kind: "sqlite", db: svc.db }, {
          account: async (accountId) => ({
            reserved: svc.ledger.holds.account(accountId),
            openHolds: svc.ledger.holds.list().filter((h) => h.accountId === accountId).length,
          }),
          key: async (keyId) => svc.ledger.holds.key(keyId),
        }),
      };
      return {
        gw,
        async stop() {
          await running.stop();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }),
};

export const POSTGRES_GATEWAY: GatewayEngine = {
  name: "PostgreSQL",
  start: (opts) =>
    withMock(opts, async (raw) => {
      const url = await freshPostgresUrl();
      // As testConfig's, with the database on PostgreSQL instead of a temporary file.
      const config = parseConfig({ ...raw, server: { host: "127.0.0.1", access_log: false }, database: { url } }, "test config");
      const running = await startGatewayOnPostgres(config, { port: 0, quiet: true });
      const db = openPostgres(url, { max: 2 });
      const opened: Opened = { kind: "pg", db };
      const gw: EngineGateway = {
        engine: "PostgreSQL",
        url: running.url,
        services: running.services,
        ...books(running.services, opened, {
          async account(accountId) {
            const [r] = await run(
              opened,
              "SELECT held_nano AS reserved, (SELECT count(*) FROM holds WHERE account_id = $1) AS open_holds FROM accounts WHERE id = $1",
              accountId,
            );
            return { reserved: num(r!.reserved)!, openHolds: num(r!.open_holds)! };
          },
          async key(keyId) {
            const [r] = await run(opened, "SELECT held_nano AS held FROM api_keys WHERE id = $1", keyId);
            return num(r!.held)!;
          },
        }),
      };
      return {
        gw,
        async stop() {
          await running.stop();
          await closePostgres(db);
        },
      };
    }),
};

export const GATEWAY_ENGINES: GatewayEngine[] = [SQLITE_GATEWAY, POSTGRES_GATEWAY];
