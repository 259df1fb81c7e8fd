import type { SQL } from "bun";

// Each instance's copies of keys, of the accounts' disabled flag and of the pause switch are dropped
// when another writer commits a change to them: PostgreSQL's triggers (drizzle-pg/0002) notify the
// channel with the table's name at commit, and this listener passes it on. A notice is delivered
// within milliseconds of the commit; a lost connection is reconnected by Bun's client, and since
// notices sent meanwhile are lost, every copy is dropped when the LISTEN is acknowledged again.

export const CHANGES_CHANNEL = "gateway_changes";

/** The tables whose changes the triggers announce. */
export type ChangedTable = "api_keys" | "accounts" | "settings";

export interface ChangeFeed {
  stop(): Promise<void>;
}

/**
 * Calls `changed(table)` on every notice, and `changed(null)` ("anything may have changed") each time
 * the subscription is (re)established after the first.
 */
export async function listenForChanges(sql: SQL, changed: (table: ChangedTable | null) => void): Promise<ChangeFeed> {
  let acknowledged = 0;
  const subscription = await sql.listen(
    CHANGES_CHANNEL,
    (payload) => changed(payload as ChangedTable),
    () => {
      if (acknowledged++ > 0) changed(null);
    },
  );
  return { stop: () => subscription.unlisten() };
}
