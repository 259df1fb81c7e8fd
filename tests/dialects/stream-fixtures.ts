// Loads the recorded-style SSE fixtures under tests/fixtures/streams and a fixed price table.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { tokenCost, type TokenPrices, type TokenUsage } from "../../src/core/money.ts";
import type { ChatChunk, MessagesEvent } from "../../src/wire/shapes.ts";
import { SseParser, type SseEvent } from "../../src/wire/sse.ts";

const dir = join(import.meta.dir, "..", "fixtures", "streams");

export const fixtureText = (name: string): string => readFileSync(join(dir, name), "utf8");

export function sseEvents(name: string): SseEvent[] {
  const p = new SseParser();
  return [...p.push(readFileSync(join(dir, name))), ...p.end()];
}

/** Chat upstream fixture as the translator sees it: parsed chunks, and "[DONE]". */
export function chatItems(name: string): (ChatChunk | "[DONE]")[] {
  return sseEvents(name).map((e) => (e.data === "[DONE]" ? "[DONE]" : (JSON.parse(e.data) as ChatChunk)));
}

export function messagesEvents(name: string): MessagesEvent[] {
  return sseEvents(name).map((e) => ({ event: e.event ?? "", data: JSON.parse(e.data) }));
}

/** $3 / $15 / $0.30 / $3.75 per million tokens, in nano-dollars per million. */
export const PRICES: TokenPrices = { input: 3_000_000_000, output: 15_000_000_000, cacheRead: 300_000_000, cacheWrite: 3_750_000_000 };
export const costOf = (u: TokenUsage): number => tokenCost(PRICES, u);
