import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig, type Config } from "../../src/config/load.ts";
import { usdToNano } from "../../src/core/money.ts";
import type { NewKey } from "../../src/store/keys/contract.ts";
import type { SqliteServices } from "../../src/services.ts";
import { startGateway, type ListenOptions, type RunningGateway } from "../../src/server.ts";
import { startMockUpstream, type MockUpstream } from "./mock-upstream.ts";
import { tempInstallation } from "./cli.ts";
import { stringify } from "smol-toml";

/** Accounts and keys made straight in the database, and the books read back, for any running gateway. */
export interface Accounts {
  /** A new account with `usd` dollars (default 10) and one key; returns the key text and ids. */
  account(usd?: number | string, key?: NewKey): Promise<{ key: string; accountId: number; keyId: number; email: string }>;
  /** Another key on an existing account. */
  key(accountId: number, opts?: NewKey): Promise<{ key: string; keyId: number }>;
  /** balance_nano, the holds of running requests (in the server's memory) and the ledger sum of an account. */
  money(accountId: number): { balance: number; reserved: number; ledgerSum: number; openHolds: number };
}

export interface TestGateway extends RunningGateway<SqliteServices>, Accounts {
  config: Config;
  dir: string;
}

let seq = 0;

export function accountsOf(svc: SqliteServices): Accounts {
  return {
    async account(usd = 10, key = {}) {
      const email = `user${process.pid}-${++seq}@test.local`;
      const acc = await svc.accounts.create(email, { balanceNano: usdToNano(usd) });
      const k = await svc.keys.create(acc.id, key);
      return { key: k.key, accountId: acc.id, keyId: k.record.id, email };
    },
    async key(accountId, opts = {}) {
      const k = await svc.keys.create(accountId, opts);
      return { key: k.key, keyId: k.record.id };
    },
    money(accountId) {
      const q = (sql: string) => svc.db.$client.query(sql).get(accountId) as { v: number | null };
      return {
        balance: q("SELECT balance_nano AS v FROM accounts WHERE id = ?").v!,
        reserved: svc.ledger.holds.account(accountId),
        ledgerSum: q("SELECT coalesce(sum(amount_nano), 0) AS v FROM ledger_entries WHERE account_id = ?").v!,
        openHolds: svc.ledger.holds.list().filter((h) => h.accountId === accountId).length,
      };
    },
  };
}

/**
 * A test's config in a fresh temporary folder: `config` is the TOML document as an object (parsed
 * exactly like a file); without it the built-in demo catalog is served.
 */
export function testConfig(config: Record<string, unknown>): { config: Config; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), "gw-test-"));
  // The access log (stdout) is off unless a test turns it on: the suite's output stays readable.
  const raw = { ...config, server: { host: "127.0.0.1", access_log: false, ...(config.server as object), database: join(dir, "gateway.db") } };
  return { config: parseConfig(raw, "test config"), dir };
}

/** Boots the real server on a random port with a fresh SQLite file (see testConfig); `listen` as `gateway serve`'s own (the idle collector). */
export async function startTestGateway(config: Record<string, unknown> = {}, listen: ListenOptions = {}): Promise<TestGateway> {
  const { config: cfg, dir } = testConfig(config);
  const gw = startGateway(cfg, { port: 0, quiet: true, ...listen });
  return {
    ...gw,
    ...accountsOf(gw.services),
    config: cfg,
    dir,
    async stop() {
      await gw.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The mock vendor on loopback and a gateway whose providers point at it, serving `models`: an
 * anthropic provider (and, with `openai`, an openai one), or the `providers` a test writes for the
 * mock's URLs. stop() stops both.
 */
export async function startGatewayOnMock(opts: {
  models: Record<string, unknown>[];
  openai?: boolean;
  providers?: (up: MockUpstream) => Record<string, unknown>[];
  limits?: Record<string, unknown>;
  listen?: ListenOptions;
}): Promise<{ up: MockUpstream; gw: TestGateway; stop(): Promise<void> }> {
  const up = await startMockUpstream();
  const gw = await startTestGateway(
    {
      providers: opts.providers ? opts.providers(up) : mockProviders(up, opts.openai),
      models: opts.models,
      ...(opts.limits ? { limits: opts.limits } : {}),
    },
    opts.listen,
  );
  return {
    up,
    gw,
    async stop() {
      await gw.stop();
      await up.stop();
    },
  };
}

/**
 * The gateway of startGatewayOnMock (both vendors, 10,000 requests a minute) and an installation
 * folder whose config holds the same catalog, for the CLI's own processes: what a test needs to
 * compare the server's answers with the CLI's. stop() stops both and removes the folder.
 */
export async function startGatewayWithInstallation(models: Record<string, unknown>[]): Promise<{
  up: MockUpstream;
  gw: TestGateway;
  install: ReturnType<typeof tempInstallation>;
  stop(): Promise<void>;
}> {
  const rig = await startGatewayOnMock({ openai: true, models, limits: { default_rpm: 10_000 } });
  const install = tempInstallation(stringify({ server: { host: "127.0.0.1" }, providers: mockProviders(rig.up, true), models }));
  return {
    ...rig,
    install,
    async stop() {
      await rig.stop();
      install.remove();
    },
  };
}

export function mockProviders(up: MockUpstream, openai = false): Record<string, unknown>[] {
  const anthropic = { id: "anthropic", kind: "anthropic", base_url: up.url, api_key: "sk-ant-upstream" };
  return openai ? [anthropic, { id: "openai", kind: "openai", base_url: up.openaiURL, api_key: "sk-openai-upstream" }] : [anthropic];
}
