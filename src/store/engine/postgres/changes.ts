import type { SQL } from "bun";

// Each instance's copies of keys, of the accounts' disabled flag and of the pause switch are dropped
// when another writer commits a change to them: PostgreSQL's triggers (drizzle-pg/0002) notify the
// channel with the table's name at commit, and this listener passes it on. A notice is delivered
// within milliseconds of the commit; a lost connection is reconnected by Bun's client, and since
// notices sent meanwhile are lost, every copy is dropped when the LISTEN is acknowledged again.
//
// Bun's client says nothing when the listening connection drops, and a reconnect can fail for as
// long as the database refuses new connections while the pool's old ones keep serving. So the
// listener checks itself: it notifies its own echo channel every ECHO_MS through the pool, and
// while its echoes stop coming back it cannot hear changes, and drops every copy on each check
// instead, so no copy outlives a check by more than ECHO_MS.

export const CHANGES_CHANNEL = "gateway_changes";
/** Each listener's own echoes, on the listening connection: others ignore them. */
export const ECHO_CHANNEL = "gateway_changes_echo";
/** How often a listener checks that it still hears. */
export const ECHO_MS = 1_000;
/** Silent this long, a listener counts as deaf. */
export const DEAF_AFTER_MS = 2_500;

/** The tables whose changes the triggers announce. */
export type ChangedTable = "api_keys" | "accounts" | "settings";

export interface ChangeFeed {
  stop(): Promise<void>;
}

/**
 * Calls `changed(table)` on every notice, and `changed(null)` ("anything may have changed") each time
 * the subscription is (re)established after the first, and on every check while its echoes are lost.
 */
export async function listenForChanges(sql: SQL, changed: (table: ChangedTable | null) => void): Promise<ChangeFeed> {
  let acknowledged = 0;
  // Random, not the pid: every gateway container runs as pid 1, and one instance taking another's
  // echoes for its own would never notice that it had gone deaf.
  const me = crypto.randomUUID();
  let heardAt = performance.now();
  const subscription = await sql.listen(
    CHANGES_CHANNEL,
    (payload) => changed(payload as ChangedTable),
    () => {
      if (acknowledged++ > 0) changed(null);
    },
  );
  const echoes = await sql.listen(ECHO_CHANNEL, (payload) => {
    if (payload === me) heardAt = performance.now();
  });
  const check = setInterval(() => {
    if (performance.now() - heardAt > DEAF_AFTER_MS) changed(null);
    // A failed notify is a pool that cannot write either: the silence above covers it.
    sql.notify(ECHO_CHANNEL, me).catch(() => {});
  }, ECHO_MS);
  check.unref?.();
  return {
    async stop() {
      clearInterval(check);
      await Promise.all([subscription.unlisten(), echoes.unlisten()]);
    },
  };
}
