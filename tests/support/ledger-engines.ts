// The two databases, each with its ledger, for the contract suites of the owners that move money or need one (accounts, sessions, audit, top-ups): a fresh SQLite file, and a fresh
// migrated database on one throwaway PostgreSQL server per test file (started on first use; the
// file's afterAll calls `stopEngines`). Each opened engine carries its ledger, which the owners that
// move money (accounts, top-ups) write through.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Keys } from "../../src/store/keys/sqlite.ts";
import { migrate, openDatabase, type Db } from "../../src/store/engine/sqlite/client.ts";
import { GroupCommit } from "../../src/store/commits/sqlite.ts";
import { closePostgres, migratePostgres, openPostgres, type PgDb } from "../../src/store/engine/postgres/client.ts";
import { Accounts } from "../../src/store/accounts/sqlite.ts";
import type { AccountStore } from "../../src/store/accounts/contract.ts";
import { Ledger } from "../../src/store/ledger/sqlite.ts";
import { PgAccounts } from "../../src/store/accounts/postgres.ts";
import { PgLedger } from "../../src/store/ledger/postgres.ts";
import { startPostgres, type TestPostgres } from "./postgres.ts";

export type Opened =
  | { engine: "sqlite"; db: Db; ledger: Ledger; commits: GroupCommit; close(): void }
  | { engine: "pg"; db: PgDb; ledger: PgLedger; close(): Promise<void> };

export interface Engine {
  name: string;
  open(): Promise<Opened>;
}

let server: TestPostgres | undefined;
let made = 0;

function sqlite(): Opened {
  const dir = mkdtempSync(join(tmpdir(), "gw-engine-"));
  const db = openDatabase(join(dir, "gateway.db"));
  migrate(db);
  const commits = new GroupCommit(db.$client);
  return {
    engine: "sqlite",
    db,
    ledger: new Ledger(db, commits),
    commits,
    close: () => (db.$client.close(), rmSync(dir, { recursive: true, force: true })),
  };
}

async function postgres(): Promise<Opened> {
  server ??= await startPostgres();
  const url = await server.createDatabase(`engine_${process.pid}_${++made}`);
  await migratePostgres(url);
  const db = openPostgres(url);
  const ledger = await PgLedger.start(db.$client, { instanceId: `gw-test-${made}`, holdTimeoutMs: 30_000 });
  return {
    engine: "pg",
    db,
    ledger,
    async close() {
      await ledger.stop();
      await closePostgres(db);
    },
  };
}

export const ENGINES: Engine[] = [
  { name: "SQLite", open: async () => sqlite() },
  { name: "PostgreSQL", open: postgres },
];

/** Stops this file's PostgreSQL server, if it started one. */
export async function stopEngines(): Promise<void> {
  await server?.stop();
  server = undefined;
}

export function accountStore(o: Opened): AccountStore {
  return o.engine === "sqlite" ? new Accounts(o.db, o.ledger) : new PgAccounts(o.db, o.ledger);
}

let keys = 0;

/** A key of the account, written by its owner on SQLite and as a row on PostgreSQL (its PostgreSQL owner is another's work). */
export async function keyOf(o: Opened, accountId: number): Promise<number> {
  if (o.engine === "sqlite") return (await new Keys(o.db).create(accountId, {})).record.id;
  const [k] = await o.db.$client`INSERT INTO api_keys (account_id, prefix, key_hash, created_at) VALUES (${accountId}, 'gw-test', ${`hash-${process.pid}-${++keys}`}, ${Date.now()}) RETURNING id`;
  return Number(k.id);
}
