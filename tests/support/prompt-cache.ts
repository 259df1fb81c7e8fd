import { createHash } from "node:crypto";
import type { UsageOverride } from "./mock-upstream.ts";

// Anthropic's prompt cache as the mock upstream's usage: a Messages body's blocks in cache order
// (tools, then system, then each message's content blocks), each prefix named by a running hash.
// A request reads the longest prefix written before (checked at each breakpoint and up to LOOKBACK
// blocks before it), writes the rest up to its last breakpoint, and bills what follows as input.
// A prefix shorter than the model's minimum is never cached. Tokens: 4 bytes of a block's JSON each.
//
//   const cache = new PromptCacheModel();
//   up.setDefault({ kind: "text", text: "ok", usage: (body) => cache.usageOf(body) });

/** Blocks before a breakpoint searched for an earlier write (Anthropic's documented look-back). */
export const LOOKBACK = 20;
/** The least prefix Sonnet caches, in tokens. */
export const MIN_CACHEABLE = 1024;
const TTL_MS = { "5m": 5 * 60_000, "1h": 60 * 60_000 };

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

interface Block {
  tokens: number;
  /** the prefix up to and including this block */
  key: string;
  /** the block's cache_control ttl, when it is a breakpoint */
  ttl?: "5m" | "1h";
}

/** The body's blocks in the order Anthropic caches them. */
function blocksOf(body: Obj): Obj[] {
  const out: Obj[] = [];
  const add = (content: unknown) => {
    if (typeof content === "string") out.push({ type: "text", text: content });
    else if (Array.isArray(content)) for (const b of content) if (isObject(b)) out.push(b);
  };
  for (const t of Array.isArray(body.tools) ? body.tools : []) if (isObject(t)) out.push(t);
  add(body.system);
  for (const m of Array.isArray(body.messages) ? body.messages : []) if (isObject(m)) add(m.content);
  return out;
}

export class PromptCacheModel {
  /** prefix key → when its entry expires (ms) */
  private readonly written = new Map<string, number>();
  constructor(private readonly now: () => number = Date.now) {}

  private index(body: Obj): Block[] {
    let key = String(body.model ?? "");
    return blocksOf(body).map((b) => {
      const { cache_control: cc, ...plain } = b;
      const json = JSON.stringify(plain);
      key = createHash("sha256").update(key).update(json).digest("hex");
      const ttl = isObject(cc) ? (cc.ttl === "1h" ? "1h" : "5m") : undefined;
      return { tokens: Math.ceil(Buffer.byteLength(json) / 4), key, ttl };
    });
  }

  private keep(key: string, ttl: "5m" | "1h"): void {
    this.written.set(key, Math.max(this.written.get(key) ?? 0, this.now() + TTL_MS[ttl]));
  }

  private live(key: string): boolean {
    const until = this.written.get(key);
    return until !== undefined && until > this.now();
  }

  /** The request's input split into read, written (5-minute and 1-hour) and uncached tokens; records its writes. */
  usageOf(body: Obj): Required<Pick<UsageOverride, "input" | "cacheRead" | "cacheWrite" | "cacheWrite1h">> {
    const blocks = this.index(body);
    const total = blocks.reduce((n, b) => n + b.tokens, 0);
    const upTo: number[] = [];
    blocks.reduce((n, b, i) => (upTo[i] = n + b.tokens), 0);
    const points = blocks.flatMap((b, i) => (b.ttl && upTo[i]! >= MIN_CACHEABLE ? [i] : []));
    if (points.length === 0) return { input: total, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 };
    // The longest prefix written before, found at a breakpoint or in the blocks just before it.
    let hit = -1;
    for (const p of points) for (let i = p; i >= Math.max(0, p - LOOKBACK + 1); i--) if (i > hit && this.live(blocks[i]!.key)) hit = i;
    const read = hit >= 0 ? upTo[hit]! : 0;
    // Each stretch after the hit is written at the ttl of the breakpoint that ends it.
    let w5 = 0;
    let w1h = 0;
    let from = read;
    for (const p of points) {
      if (p <= hit) continue;
      const n = upTo[p]! - from;
      if (blocks[p]!.ttl === "1h") w1h += n;
      else w5 += n;
      from = upTo[p]!;
    }
    // A read refreshes its entry; each breakpoint's prefix is (re)written.
    if (hit >= 0) this.keep(blocks[hit]!.key, "5m");
    for (const p of points) this.keep(blocks[p]!.key, blocks[p]!.ttl!);
    return { input: total - from, cacheRead: read, cacheWrite: w5, cacheWrite1h: w1h };
  }
}
