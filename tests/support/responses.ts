// Shared by the Responses translator's tests (tests/dialects) and the route's (tests/responses): id
// normalization, and two client models used as oracles: the real openai SDK (fed through a fake
// fetch) and a small model of how Codex reads a stream (protocols/responses.md §5).

import OpenAI from "openai";
import type { JsonObject } from "../../src/wire/shapes.ts";
import type { ResponsesEvent } from "../../src/dialects/responses-via-chat/types.ts";
import { toSse } from "./sse.ts";

/**
 * Random ids → stable placeholders in order of appearance (resp_1, msg_1, fc_1, …) and wall-clock
 * times → 0, so a stream can be compared with a fixture.
 */
export function normalize<T>(value: T): T {
  const seen = new Map<string, string>();
  const counters = new Map<string, number>();
  const text = JSON.stringify(value)
    .replace(/\b(resp|msg|fc|ctc|rs|call)_[0-9a-f]{24,48}\b/g, (id, prefix: string) => {
      if (!seen.has(id)) {
        const n = (counters.get(prefix) ?? 0) + 1;
        counters.set(prefix, n);
        seen.set(id, `${prefix}_${n}`);
      }
      return seen.get(id)!;
    })
    .replace(/"(completed_at|created_at)":\d+/g, '"$1":0');
  return JSON.parse(text) as T;
}

/** An OpenAI SDK client whose every request is answered by `answer`. */
export function sdkClient(answer: (body: JsonObject) => Response): { client: OpenAI; requests: JsonObject[] } {
  const requests: JsonObject[] = [];
  const fetch = async (_url: string | URL | Request, init?: RequestInit) => {
    const body = JSON.parse(String(init?.body)) as JsonObject;
    requests.push(body);
    return answer(body);
  };
  const client = new OpenAI({ apiKey: "gk_sk_test", baseURL: "http://gateway.test/v1", fetch: fetch as typeof globalThis.fetch, maxRetries: 0 });
  return { client, requests };
}

export const sseResponse = (events: ResponsesEvent[]) => new Response(toSse(events), { headers: { "content-type": "text/event-stream" } });
export const jsonResponse = (body: unknown) => new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });

export interface CodexTurn {
  items: JsonObject[];
  outcome: "completed" | "failed" | "incomplete" | "closed";
  responseId?: string;
  usage?: JsonObject | null;
  error?: JsonObject;
  incompleteReason?: string;
  problems: string[];
}

/**
 * What Codex (codex-api sse/responses.rs, June 2026) takes from a stream: items only from
 * output_item.done, a text delta only inside an added item, completed needs response.id, usage
 * (when present) needs integer counts; failed and incomplete end the turn.
 */
export function codexRead(events: ResponsesEvent[]): CodexTurn {
  const turn: CodexTurn = { items: [], outcome: "closed", problems: [] };
  const open = new Set<number>();
  for (const { data } of events) {
    const d = data as JsonObject & { response?: JsonObject };
    switch (d.type) {
      case "response.output_item.added":
        open.add(d.output_index as number);
        break;
      case "response.output_text.delta":
        if (!open.has(d.output_index as number)) turn.problems.push("text delta without an open item");
        break;
      case "response.output_item.done":
        open.delete(d.output_index as number);
        turn.items.push(d.item as JsonObject);
        break;
      case "response.completed": {
        turn.outcome = "completed";
        if (typeof d.response?.id !== "string") turn.problems.push("completed without response.id");
        turn.responseId = d.response?.id as string;
        const usage = d.response?.usage as JsonObject | null | undefined;
        turn.usage = usage;
        if (usage) {
          for (const k of ["input_tokens", "output_tokens", "total_tokens"]) {
            if (!Number.isInteger(usage[k])) turn.problems.push(`usage.${k} is not an integer`);
          }
          const inDetails = usage.input_tokens_details as JsonObject | null;
          if (inDetails && !Number.isInteger(inDetails.cached_tokens)) turn.problems.push("bad input_tokens_details");
          const outDetails = usage.output_tokens_details as JsonObject | null;
          if (outDetails && !Number.isInteger(outDetails.reasoning_tokens)) turn.problems.push("bad output_tokens_details");
        }
        return turn; // Codex stops reading at completed
      }
      case "response.failed":
        turn.outcome = "failed";
        turn.error = d.response?.error as JsonObject;
        return turn;
      case "response.incomplete":
        turn.outcome = "incomplete";
        turn.incompleteReason = (d.response?.incomplete_details as JsonObject | null)?.reason as string;
        return turn;
    }
  }
  return turn;
}
