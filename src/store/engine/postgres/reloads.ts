import type { SQL } from "bun";

// `gateway reload` on PostgreSQL reaches every instance (docs/scaling.md#reloading-the-fleet): it
// sends one notice on this channel, and each instance that hears it reads its own config file again,
// as on SIGHUP, and writes the outcome on its `instances` row, where the command (and the admin
// page) reads it. A notice sent while an instance's listening connection is down is lost: that
// instance writes nothing, and the command names it as not having answered.

export const RELOAD_CHANNEL = "gateway_reload";

/** A request's id: what the command sent, and what each instance's outcome names. */
const REQUEST = /^[0-9a-f-]{36}$/;

export interface ReloadFeed {
  stop(): Promise<void>;
}

/** Calls `asked(request)` on every reload notice; anything else on the channel is ignored. */
export async function listenForReloads(sql: SQL, asked: (request: string) => void): Promise<ReloadFeed> {
  const subscription = await sql.listen(RELOAD_CHANNEL, (payload) => {
    if (REQUEST.test(payload)) asked(payload);
  });
  return { stop: () => subscription.unlisten() };
}

/** Asks every listening instance to reload; answers the request's id. */
export async function askReload(sql: SQL): Promise<string> {
  const request = crypto.randomUUID();
  await sql`SELECT pg_notify(${RELOAD_CHANNEL}, ${request})`;
  return request;
}
