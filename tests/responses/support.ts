// Shared by tests/responses/*.test.ts: the text rig plus one model the Responses route must refuse,
// raw POSTs for what the SDK would not send.

import type { JsonObject } from "../../src/wire/shapes.ts";
import { PRICES } from "../support/prices.ts";
import { startTextRig, type TextRig } from "../support/text-rig.ts";
import { keyHeaders, send } from "../support/http.ts";

/** Sold only on Messages: /v1/responses rides on chat.completions, so it must refuse this one. */
export const MESSAGES_ONLY = "claude-messages-only";
/** Like gpt-native, with its own catalog output cap instead of the 32 000 default. */
export const CAPPED = { id: "gpt-capped", maxOutputTokens: 64_000 };

export function startResponsesRig(): Promise<TextRig> {
  return startTextRig([
    {
      id: MESSAGES_ONLY,
      modalities: ["text"],
      endpoints: ["messages"],
      pricing: PRICES,
      routes: [{ provider: "anthropic", model: "claude-upstream-1" }],
    },
    {
      id: CAPPED.id,
      modalities: ["text"],
      endpoints: ["messages", "chat.completions"],
      pricing: PRICES,
      max_output_tokens: CAPPED.maxOutputTokens,
      routes: [{ provider: "openai", model: "gpt-upstream-2" }],
    },
  ]);
}

export function request(rig: TextRig, method: string, path: string, body?: unknown, key = rig.acct.key): Promise<Response> {
  return send(rig.gw, path, { method, headers: keyHeaders(key), body: body === undefined ? undefined : JSON.stringify(body) });
}

export const postResponses = (rig: TextRig, body: unknown, key?: string) => request(rig, "POST", "/v1/responses", body, key);

/** The upstream request the gateway sent last. */
export function lastUpstream(rig: TextRig): JsonObject {
  return rig.up.requests.at(-1)!.body as JsonObject;
}
