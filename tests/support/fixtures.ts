import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { SseEvent } from "../../src/wire/sse.ts";
import type { ChatChunk, JsonObject, MessagesEvent } from "../../src/wire/shapes.ts";
import { readSse } from "./sse.ts";

// The files under tests/fixtures/, each named by its path there ("streams/chat-text.sse").

const FIXTURES = join(import.meta.dir, "..", "fixtures");

export const fixtureText = (path: string): string => readFileSync(join(FIXTURES, path), "utf8");

export const fixtureJson = <T = JsonObject>(path: string): T => JSON.parse(fixtureText(path)) as T;

/** A recorded SSE body, its bytes read as the gateway reads an upstream's. */
export const fixtureEvents = (path: string): SseEvent[] => readSse(readFileSync(join(FIXTURES, path)));

/** A recorded Chat Completions stream as a translator is fed it: parsed chunks, and "[DONE]". */
export function chatItems(path: string): (ChatChunk | "[DONE]")[] {
  return fixtureEvents(path).map((e) => (e.data === "[DONE]" ? "[DONE]" : (JSON.parse(e.data) as ChatChunk)));
}

/** The chunks alone, [DONE] left out. */
export const chatChunks = (path: string): ChatChunk[] => chatItems(path).filter((c): c is ChatChunk => c !== "[DONE]");

/** A recorded Messages stream: event names and parsed data. */
export function messagesEvents(path: string): MessagesEvent[] {
  return fixtureEvents(path).map((e) => ({ event: e.event ?? "", data: JSON.parse(e.data) }));
}

/** The files of one folder under tests/fixtures/ whose names end with `suffix`, sorted. */
export const fixtureNames = (folder: string, suffix: string): string[] =>
  readdirSync(join(FIXTURES, folder))
    .filter((f) => f.endsWith(suffix))
    .sort();
