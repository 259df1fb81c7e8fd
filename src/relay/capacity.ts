// A provider's keys and a model's weighted routes (docs/operations.md#several-keys-and-weighted-routes).
// Requests go to the key with fewest in flight; a key the upstream calls overloaded rests for its
// Retry-After. Weighted routes share a model's traffic by smooth weighted round-robin (the nginx
// scheme: deterministic, and never two picks of a heavy route in a row more than its share needs).

import { createHash } from "node:crypto";
import type { Model, Route } from "../catalog/catalog.ts";
import type { ProviderConfig } from "../config/schema.ts";
import { isoTime } from "../core/time.ts";

/** Without a Retry-After the key rests this long. */
export const DEFAULT_REST_S = 30;
/** A key the provider refused (revoked, out of credit) among several sits out this long before it is tried again. */
export const REJECTED_REST_S = 300;
/** A Retry-After past this is read as this: one bad header must not bench a key for days. */
export const MAX_REST_S = 3600;

export interface KeySlot {
  /** Its place in api_keys (0 for api_key): how status pages name it. */
  readonly index: number;
  readonly key: string | undefined;
  /** The key's SHA-256 in hex ("" without a key): how the instances of a cluster name it to each other. */
  readonly hash: string;
  /** The start of `hash`: tells keys apart on a status page without revealing one. */
  readonly fingerprint: string;
  inFlight: number;
  restUntil: number;
  rests: number;
}

export interface KeyView {
  index: number;
  fingerprint: string | null;
  in_flight: number;
  state: "ready" | "resting";
  resting_until: string | null;
  rests: number;
}

const sha256 = (key: string | undefined) => (key ? createHash("sha256").update(key).digest("hex") : "");

/**
 * Tells the other instances of a cluster that a key of `provider` rests for `ms` more
 * (docs/scaling.md#provider-keys-rests): relative, so that their clocks need not agree.
 */
export type RestAnnouncer = (provider: string, keyHash: string, ms: number) => void;

/** The keys of one provider. */
export class KeyPool {
  readonly slots: KeySlot[];
  private readonly id: string;

  constructor(config: ProviderConfig, private readonly announce: RestAnnouncer = () => {}) {
    const keys = config.api_keys ?? [config.api_key];
    this.slots = keys.map((key, index) => {
      const hash = sha256(key);
      return { index, key, hash, fingerprint: hash.slice(0, 8), inFlight: 0, restUntil: 0, rests: 0 };
    });
    this.id = config.id;
  }

  /** The ready key not in `tried` (a bitmask of indexes) with fewest in flight; null when none. */
  pick(tried: number, now: number): KeySlot | null {
    let best: KeySlot | null = null;
    for (const s of this.slots) {
      if ((tried & (1 << s.index)) !== 0 || s.restUntil > now) continue;
      if (!best || s.inFlight < best.inFlight) best = s;
    }
    return best;
  }

  /** When the first resting key wakes (ms since epoch); 0 while a key is ready. */
  wake(now: number): number {
    let first = Infinity;
    for (const s of this.slots) {
      if (s.restUntil <= now) return 0;
      first = Math.min(first, s.restUntil);
    }
    return first;
  }

  rest(slot: KeySlot, seconds: number, now: number): void {
    slot.restUntil = Math.max(slot.restUntil, now + seconds * 1000);
    slot.rests++;
    if (seconds > 0 && slot.hash) this.announce(this.id, slot.hash, slot.restUntil - now);
  }

  /**
   * Another instance's rest of the key hashed `keyHash`: kept if it ends later than this one's own,
   * never announced again (no echo between instances). Bounded as a Retry-After is.
   */
  heard(keyHash: string, ms: number, now: number): void {
    const until = now + Math.min(ms, MAX_REST_S * 1000);
    for (const s of this.slots) if (s.hash === keyHash) s.restUntil = Math.max(s.restUntil, until);
  }

  views(now: number): KeyView[] {
    return this.slots.map((s) => ({
      index: s.index,
      fingerprint: s.fingerprint || null,
      in_flight: s.inFlight,
      state: s.restUntil > now ? "resting" : "ready",
      resting_until: s.restUntil > now ? isoTime(s.restUntil) : null,
      rests: s.rests,
    }));
  }
}

/** Seconds a key rests for an answer's Retry-After: delta-seconds or an HTTP date; else DEFAULT_REST_S. */
export function restSeconds(header: string | null, now: number): number {
  if (header === null) return DEFAULT_REST_S;
  const v = header.trim();
  let s = /^\d+(\.\d+)?$/.test(v) ? Number(v) : NaN;
  if (Number.isNaN(s)) {
    // Every HTTP date form opens with a day name; Date.parse alone would read "-5" as a year.
    const at = /^[A-Za-z]/.test(v) ? Date.parse(v) : NaN;
    s = Number.isNaN(at) ? DEFAULT_REST_S : (at - now) / 1000;
  }
  // 0 (or a date passed): no rest, though this request still moves on to another key.
  return Math.min(MAX_REST_S, Math.max(0, Math.ceil(s)));
}

/** A model's weighted routes and their running weights. */
class Weighted {
  readonly current: number[];
  readonly total: number;
  constructor(readonly routes: Route[], readonly weights: number[], readonly fallbacks: Route[]) {
    this.current = weights.map(() => 0);
    this.total = weights.reduce((a, b) => a + b, 0);
  }

  /** This request's order: the pick, the other weighted routes by running weight, then the fallbacks. */
  order(): Route[] {
    const c = this.current;
    let best = 0;
    for (let i = 0; i < c.length; i++) {
      c[i]! += this.weights[i]!;
      if (c[i]! > c[best]!) best = i;
    }
    c[best]! -= this.total;
    const rest = this.routes.map((_, i) => i).filter((i) => i !== best).sort((a, b) => c[b]! - c[a]!);
    return [this.routes[best]!, ...rest.map((i) => this.routes[i]!), ...this.fallbacks];
  }
}

export class Capacity {
  private readonly pools = new Map<string, KeyPool>();
  private readonly weighted = new Map<string, Weighted>();
  /** Set on PostgreSQL: the rests this instance starts are told to the others (null: one instance, nobody to tell). */
  announce: RestAnnouncer | null = null;

  constructor(providers: readonly ProviderConfig[], models: readonly Model[], readonly now: () => number = Date.now) {
    const announce: RestAnnouncer = (provider, keyHash, ms) => this.announce?.(provider, keyHash, ms);
    for (const p of providers) this.pools.set(p.id, new KeyPool(p, announce));
    for (const m of models) {
      const w = m.routes.filter((r) => r.weight !== undefined);
      if (w.length) this.weighted.set(m.id, new Weighted(w, w.map((r) => r.weight!), m.routes.filter((r) => r.weight === undefined)));
    }
  }

  pool(providerId: string): KeyPool {
    return this.pools.get(providerId)!;
  }

  /** Another instance put a key to rest: unknown providers (a config not reloaded everywhere yet) are ignored. */
  heard(provider: string, keyHash: string, ms: number): void {
    this.pools.get(provider)?.heard(keyHash, ms, this.now());
  }

  /** The routes in the order this request tries them: as listed unless some carry a weight. */
  routes(model: Model): readonly Route[] {
    const w = model.weighted ? this.weighted.get(model.id) : undefined;
    return w ? w.order() : model.routes;
  }
}
