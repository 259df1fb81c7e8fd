import type { SQL } from "bun";

// A provider key's rest (the upstream's 429/529 with its Retry-After, relay/capacity.ts) told to
// every instance of the cluster, so that the others do not spend a call each to learn it
// (docs/scaling.md#provider-keys-rests). A notice carries the key's SHA-256, never the key, and the
// time left in ms, never a clock time: the machines' clocks need not agree. A notice sent while an
// instance's listening connection is down is lost, and not replayed: that instance learns the rest
// from its own next call, as a single instance does.

export const RESTS_CHANNEL = "gateway_rests";

/** PostgreSQL refuses a NOTIFY payload of 8000 bytes or more. */
export const NOTIFY_LIMIT_BYTES = 8000;

export interface RestNotice {
  provider: string;
  keyHash: string;
  ms: number;
}

export interface RestFeed {
  /** Fire and forget: a failure goes to `failed`, never to the request that started the rest. */
  announce(notice: RestNotice): void;
  stop(): Promise<void>;
}

/** The payload's fields: short, a notice is sent per rest. */
type Payload = { i: string; p: string; k: string; ms: number };

/**
 * Listens for the rests of the other instances (`heard`); this instance's own notices, which
 * PostgreSQL delivers to it as well, are recognised by `instanceId` and dropped.
 */
export async function shareRests(
  sql: SQL,
  instanceId: string,
  heard: (notice: RestNotice) => void,
  failed: (notice: RestNotice, cause: unknown) => void,
): Promise<RestFeed> {
  const subscription = await sql.listen(RESTS_CHANNEL, (payload) => {
    const n = parse(payload);
    if (n && n.i !== instanceId) heard({ provider: n.p, keyHash: n.k, ms: n.ms });
  });
  return {
    announce(notice) {
      const { provider, keyHash, ms } = notice;
      const payload = JSON.stringify({ i: instanceId, p: provider, k: keyHash, ms: Math.ceil(ms) } satisfies Payload);
      // Instance ids are at most 200 characters and hashes 64: only a provider id of thousands of characters gets here.
      if (Buffer.byteLength(payload) >= NOTIFY_LIMIT_BYTES) return failed(notice, new Error(`notice of ${Buffer.byteLength(payload)} bytes, over PostgreSQL's ${NOTIFY_LIMIT_BYTES}: provider id too long`));
      sql`SELECT pg_notify(${RESTS_CHANNEL}, ${payload})`.then(() => {}, (e: unknown) => failed(notice, e));
    },
    stop: () => subscription.unlisten(),
  };
}

/** A notice as sent by shareRests; anything else on the channel (another version, a hand-made NOTIFY) is ignored. */
function parse(payload: string): Payload | null {
  try {
    const n = JSON.parse(payload) as Partial<Payload>;
    const ok = typeof n.i === "string" && typeof n.p === "string" && typeof n.k === "string" && /^[0-9a-f]{64}$/.test(n.k)
      && typeof n.ms === "number" && Number.isFinite(n.ms) && n.ms > 0;
    return ok ? (n as Payload) : null;
  } catch {
    return null;
  }
}
