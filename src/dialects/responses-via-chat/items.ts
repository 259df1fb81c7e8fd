// Building blocks of a Responses `response` object, shared by the JSON answer and the stream:
// the echo of the request, output items, and the finish → status map.

import { isObject } from "../fields.ts";
import type { JsonObject } from "../../wire/shapes.ts";
import type { ResponsesRequest, ToolTarget } from "./types.ts";

export interface ResponseContext {
  /** The model id the client sees (canonical id, never the upstream's). */
  model: string;
  request: ResponsesRequest;
}

/**
 * The response object minus output, status and usage: every field the OpenAPI schema requires, echoed
 * from the request with OpenAI's defaults. `store` is always false: nothing is kept.
 */
export function responseShell(id: string, createdAt: number, ctx: ResponseContext): JsonObject {
  const req = ctx.request;
  const reasoning = isObject(req.reasoning) ? req.reasoning : {};
  const text = isObject(req.text) ? req.text : {};
  return {
    id,
    object: "response",
    created_at: createdAt,
    status: "in_progress",
    background: false,
    completed_at: null,
    error: null,
    incomplete_details: null,
    instructions: typeof req.instructions === "string" ? req.instructions : null,
    max_output_tokens: req.max_output_tokens ?? null,
    max_tool_calls: req.max_tool_calls ?? null,
    model: ctx.model,
    output: [],
    parallel_tool_calls: req.parallel_tool_calls ?? true,
    previous_response_id: null,
    prompt_cache_key: req.prompt_cache_key ?? null,
    reasoning: { effort: reasoning.effort ?? null, summary: reasoning.summary ?? null },
    safety_identifier: req.safety_identifier ?? null,
    // service_tier is never forwarded (request.ts), so the upstream always ran the default tier.
    service_tier: "default",
    store: false,
    temperature: req.temperature ?? 1,
    text: { format: text.format ?? { type: "text" }, verbosity: text.verbosity ?? "medium" },
    tool_choice: req.tool_choice ?? "auto",
    tools: req.tools ?? [],
    top_logprobs: req.top_logprobs ?? 0,
    top_p: req.top_p ?? 1,
    truncation: "disabled",
    usage: null,
    user: req.user ?? null,
    metadata: req.metadata ?? {},
  };
}

export type ItemStatus = "in_progress" | "completed" | "incomplete";

export interface Finish {
  status: "completed" | "incomplete";
  incomplete_details: { reason: "max_output_tokens" | "content_filter" } | null;
}

/** Chat finish_reason → Responses status (responses.md §7). stop, tool_calls and anything else: completed. */
export function finishOf(reason: string | null | undefined): Finish {
  if (reason === "length") return { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } };
  if (reason === "content_filter") return { status: "incomplete", incomplete_details: { reason: "content_filter" } };
  return { status: "completed", incomplete_details: null };
}

export function outputTextPart(text: string, logprobs: unknown[] = []): JsonObject {
  return { type: "output_text", text, annotations: [], logprobs };
}

export function refusalPart(refusal: string): JsonObject {
  return { type: "refusal", refusal };
}

export function messageItem(id: string, content: JsonObject[], status: ItemStatus): JsonObject {
  return { id, type: "message", status, role: "assistant", content };
}

/** DeepSeek and vLLM call it reasoning_content, OpenRouter and newer vLLM reasoning. */
export function reasoningText(source: JsonObject | undefined): string {
  const v = source?.reasoning_content ?? source?.reasoning;
  return typeof v === "string" ? v : "";
}

/** Upstream reasoning text (reasoning_content) as a reasoning item with a reasoning_text part. */
export function reasoningItem(id: string, text: string | null, status: ItemStatus): JsonObject {
  return { id, type: "reasoning", status, summary: [], content: text === null ? [] : [{ type: "reasoning_text", text }] };
}

/**
 * A function_call, or a custom_tool_call for tools that were `custom` in the request. Namespaced
 * tools carry `namespace` with the bare name: Codex routes by (namespace, name) and answers
 * "unsupported call" to a flattened name (codex-rs core/src/tools/router.rs).
 */
export function callItem(id: string, callId: string, target: ToolTarget, payload: string, status: ItemStatus): JsonObject {
  const item: JsonObject =
    target.kind === "custom"
      ? { id, type: "custom_tool_call", status, call_id: callId, name: target.name, input: payload }
      : { id, type: "function_call", status, call_id: callId, name: target.name, arguments: payload };
  if (target.namespace !== undefined) item.namespace = target.namespace;
  return item;
}

/** Chat logprobs ({token, logprob, bytes, top_logprobs}) already have the Responses shape. */
export function logprobsOf(choiceLogprobs: unknown): unknown[] {
  return isObject(choiceLogprobs) && Array.isArray(choiceLogprobs.content) ? choiceLogprobs.content : [];
}
