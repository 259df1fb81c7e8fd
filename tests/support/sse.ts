import { SseParser, type SseEvent } from "../../src/wire/sse.ts";
import type { JsonObject } from "../../src/wire/shapes.ts";

// Server-sent events in tests: one reader (the gateway's own parser, whose rules tests/dialects/sse.test.ts
// pins down) and one writer, for bodies read off an answer, recorded fixtures and scripted upstreams.

/** Every event of an SSE body given whole or in chunks, the last one even without its blank line. */
export function readSse(...chunks: (string | Uint8Array)[]): SseEvent[] {
  const p = new SseParser();
  const out: SseEvent[] = [];
  for (const c of chunks) out.push(...p.push(c));
  out.push(...p.end());
  return out;
}

export interface SseFrame {
  event: string | undefined;
  data: JsonObject;
}

/** An SSE body → its events with the JSON of each data line. Comments and [DONE] are left out. */
export function sseFrames(text: string): SseFrame[] {
  return readSse(text)
    .filter((e) => e.data !== "" && e.data !== "[DONE]")
    .map((e) => ({ event: e.event, data: JSON.parse(e.data) as JsonObject }));
}

/** One event as a vendor writes it: `event:` when named, then one data line (JSON unless a string). */
export const sse = (event: string | undefined, data: unknown): string =>
  `${event ? `event: ${event}\n` : ""}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;

/** A whole body of named events. */
export const toSse = (events: { event: string; data: unknown }[]): string => events.map((e) => sse(e.event, e.data)).join("");
