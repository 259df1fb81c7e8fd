// Pure renderers for the mock upstream: one dialect-neutral Answer in, the vendor's JSON body or
// SSE frames out. Shapes follow /work/shared/protocols/{messages,chat-completions,sse}.md; nothing
// here calls the gateway's code (frames are written by support/sse.ts's own writer), so the mock
// cannot share a bug with the code it tests.

import { sse } from "./sse.ts";

export type StopReason =
  | "end_turn" | "max_tokens" | "stop_sequence" | "tool_use" | "refusal" | "pause_turn"
  | "stop" | "length" | "tool_calls" | "content_filter";

/** Token counts in neutral terms. `input` is the uncached part of the prompt (Anthropic
 *  input_tokens); OpenAI's prompt_tokens = input + cacheRead + cacheWrite, cached_tokens = cacheRead.
 *  `output` includes `reasoning` (both vendors count thinking as output). */
export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  reasoning: number;
  /** Anthropic: 1-hour cache writes (cache_creation.ephemeral_1h_input_tokens, inside cache_creation_input_tokens); OpenAI: LiteLLM's split */
  cacheWrite1h?: number;
  /** server_tool_use.web_search_requests (Anthropic; LiteLLM's Chat shape) */
  webSearches?: number;
  /** OpenAI: the answer's service_tier (default "default") */
  serviceTier?: string;
  /** Anthropic: usage.speed (default "standard"); message_start only on a stream, as message_delta's usage has no such key */
  speed?: "standard" | "fast";
  /** OpenAI-compatible: DeepSeek's usage, cache hits as prompt_cache_hit_tokens / prompt_cache_miss_tokens and no prompt_tokens_details */
  deepseek?: boolean;
  /** Anthropic: usage.inference_geo (default "global"); message_start only on a stream */
  inferenceGeo?: string;
  /** OpenAI-compatible: reasoning reported outside completion_tokens (total_tokens = prompt + output) */
  reasoningOutside?: boolean;
}

export interface ToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface Answer {
  id: string;
  model: string;
  thinking?: string;
  /** undefined → no text block at all (e.g. a bare tool call) */
  text?: string;
  calls: ToolCall[];
  stopReason: StopReason;
  stopSequence: string | null;
  usage: Usage;
  /** split text/thinking into this many deltas; undefined → one delta per word */
  chunks?: number;
  /** split each call's JSON arguments into this many fragments */
  argChunks: number;
  /** OpenAI: the request had stream_options.include_usage */
  includeUsage: boolean;
}

type Obj = Record<string, unknown>;

// ---- shared helpers ----

export const randomId = (prefix: string): string =>
  prefix + crypto.randomUUID().replaceAll("-", "").slice(0, 24);

/** Splits by code point into n near-equal pieces; n undefined → one piece per word. */
export function splitText(s: string, n?: number): string[] {
  if (s === "") return [];
  if (n === undefined) return s.match(/\s*\S+\s*|\s+/g) ?? [s];
  const cps = Array.from(s);
  const k = Math.max(1, Math.min(Math.floor(n), cps.length));
  const out: string[] = [];
  for (let i = 0; i < k; i++) {
    out.push(cps.slice(Math.floor((i * cps.length) / k), Math.floor(((i + 1) * cps.length) / k)).join(""));
  }
  return out;
}

const TO_OPENAI: Record<string, string> = {
  end_turn: "stop", stop_sequence: "stop", pause_turn: "stop",
  max_tokens: "length", tool_use: "tool_calls", refusal: "content_filter",
};
const TO_ANTHROPIC: Record<string, string> = {
  stop: "end_turn", length: "max_tokens", tool_calls: "tool_use", content_filter: "refusal",
};

// ---- error bodies ----

export function anthropicError(type: string, message: string): Obj {
  return { type: "error", error: { type, message }, request_id: randomId("req_mock") };
}

export function openaiError(message: string, type: string, code: string | null = null, param: string | null = null): Obj {
  return { error: { message, type, param, code } };
}

const ANTHROPIC_ERRORS: Record<number, [string, string]> = {
  400: ["invalid_request_error", "mock: invalid request"],
  401: ["authentication_error", "invalid x-api-key"],
  402: ["billing_error", "Your credit balance is too low to access the Anthropic API."],
  403: ["permission_error", "Your API key does not have permission to use the specified resource."],
  404: ["not_found_error", "The requested resource could not be found."],
  413: ["request_too_large", "Request exceeds the maximum allowed number of bytes."],
  429: ["rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"],
  500: ["api_error", "Internal server error"],
  504: ["timeout_error", "Request timeout"],
  529: ["overloaded_error", "Overloaded"],
};
const OPENAI_ERRORS: Record<number, [string, string, string | null]> = {
  400: ["mock: invalid request", "invalid_request_error", null],
  401: ["Incorrect API key provided.", "invalid_request_error", "invalid_api_key"],
  403: ["Country, region, or territory not supported", "request_forbidden", "unsupported_country_region_territory"],
  404: ["The model does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"],
  429: ["Rate limit reached for requests", "requests", "rate_limit_exceeded"],
  500: ["The server had an error while processing your request. Sorry about that!", "server_error", null],
};

/** The vendor's usual body for an HTTP status, for `{kind:"error"}` without a body. */
export function defaultErrorBody(dialect: "anthropic" | "openai", status: number): Obj {
  if (dialect === "anthropic") {
    const [type, message] = ANTHROPIC_ERRORS[status] ?? (status >= 500 ? ANTHROPIC_ERRORS[500]! : ANTHROPIC_ERRORS[400]!);
    return anthropicError(type, message);
  }
  const [message, type, code] = OPENAI_ERRORS[status] ?? (status >= 500 ? OPENAI_ERRORS[500]! : OPENAI_ERRORS[400]!);
  return openaiError(message, type, code);
}

// ---- Anthropic Messages ----

const signatureOf = (thinking: string): string =>
  Buffer.from(`mock-signature:${Bun.hash(thinking).toString(16)}`).toString("base64");

function anthropicUsage(u: Usage): Obj {
  const w1h = u.cacheWrite1h ?? 0;
  const out: Obj = {
    input_tokens: u.input,
    cache_creation_input_tokens: u.cacheWrite + w1h,
    cache_read_input_tokens: u.cacheRead,
    cache_creation: { ephemeral_5m_input_tokens: u.cacheWrite, ephemeral_1h_input_tokens: w1h },
    output_tokens: u.output,
    service_tier: "standard",
    speed: u.speed ?? "standard",
    inference_geo: u.inferenceGeo ?? "global",
  };
  if (u.webSearches !== undefined) out.server_tool_use = { web_search_requests: u.webSearches };
  return out;
}

const anthropicStop = (a: Answer): string => TO_ANTHROPIC[a.stopReason] ?? a.stopReason;

export function anthropicMessage(a: Answer): Obj {
  const content: Obj[] = [];
  if (a.thinking !== undefined) content.push({ type: "thinking", thinking: a.thinking, signature: signatureOf(a.thinking) });
  if (a.text !== undefined) content.push({ type: "text", text: a.text });
  for (const c of a.calls) content.push({ type: "tool_use", id: c.id, name: c.name, input: c.arguments });
  return {
    id: a.id, type: "message", role: "assistant", model: a.model, content,
    stop_reason: anthropicStop(a), stop_sequence: a.stopSequence, stop_details: null,
    usage: anthropicUsage(a.usage),
  };
}

/** Frames in the order of the SDK's own fixture: start, block start, ping, deltas, stops. */
export function anthropicEvents(a: Answer): string[] {
  const out: string[] = [];
  const startUsage = { ...anthropicUsage(a.usage), output_tokens: 1 };
  out.push(sse("message_start", {
    type: "message_start",
    message: {
      id: a.id, type: "message", role: "assistant", model: a.model, content: [],
      stop_reason: null, stop_sequence: null, stop_details: null, usage: startUsage,
    },
  }));
  let index = 0;
  const block = (start: Obj, deltas: Obj[]) => {
    out.push(sse("content_block_start", { type: "content_block_start", index, content_block: start }));
    if (index === 0) out.push(sse("ping", { type: "ping" }));
    for (const delta of deltas) out.push(sse("content_block_delta", { type: "content_block_delta", index, delta }));
    out.push(sse("content_block_stop", { type: "content_block_stop", index }));
    index++;
  };
  if (a.thinking !== undefined) {
    block({ type: "thinking", thinking: "", signature: "" }, [
      ...splitText(a.thinking, a.chunks).map((thinking) => ({ type: "thinking_delta", thinking })),
      { type: "signature_delta", signature: signatureOf(a.thinking) },
    ]);
  }
  if (a.text !== undefined) {
    block({ type: "text", text: "" }, splitText(a.text, a.chunks).map((text) => ({ type: "text_delta", text })));
  }
  for (const c of a.calls) {
    const pieces = splitText(JSON.stringify(c.arguments), a.argChunks);
    block({ type: "tool_use", id: c.id, name: c.name, input: {} },
      pieces.map((partial_json) => ({ type: "input_json_delta", partial_json })));
  }
  // message_delta usage is cumulative and the SDK overwrites with it, so repeat the true totals.
  const { cache_creation: _, service_tier: __, speed: ___, inference_geo: ____, ...deltaUsage } = anthropicUsage(a.usage);
  out.push(sse("message_delta", {
    type: "message_delta",
    delta: { stop_reason: anthropicStop(a), stop_sequence: a.stopSequence, stop_details: null },
    usage: deltaUsage,
  }));
  out.push(sse("message_stop", { type: "message_stop" }));
  return out;
}

export const anthropicErrorEvent = (): string =>
  sse("error", { type: "error", error: { type: "overloaded_error", message: "Overloaded" } });

// ---- OpenAI Chat Completions ----


function openaiUsage(u: Usage): Obj {
  // A count that is not a number (a misbehaving upstream's null, "12") is sent as it is, not summed.
  const counted = (v: unknown): v is number => typeof v === "number";
  const w1h = u.cacheWrite1h ?? 0;
  const prompt = counted(u.input) ? u.input + u.cacheRead + u.cacheWrite + w1h : u.input;
  const completion = u.reasoningOutside ? u.output - u.reasoning : u.output;
  const details: Obj = { cached_tokens: u.cacheRead, audio_tokens: 0 };
  if (w1h) Object.assign(details, { cache_write_tokens: u.cacheWrite + w1h, cache_creation_token_details: { ephemeral_5m_input_tokens: u.cacheWrite, ephemeral_1h_input_tokens: w1h } });
  const out: Obj = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: counted(prompt) && counted(u.output) ? prompt + u.output : null,
    prompt_tokens_details: details,
    completion_tokens_details: {
      reasoning_tokens: u.reasoning, audio_tokens: 0,
      accepted_prediction_tokens: 0, rejected_prediction_tokens: 0,
    },
  };
  if (u.webSearches !== undefined) out.server_tool_use = { web_search_requests: u.webSearches };
  if (u.deepseek) {
    delete out.prompt_tokens_details;
    out.prompt_cache_hit_tokens = u.cacheRead;
    out.prompt_cache_miss_tokens = (prompt as number) - u.cacheRead;
  }
  return out;
}

const openaiFinish = (a: Answer): string => TO_OPENAI[a.stopReason] ?? a.stopReason;

export function openaiCompletion(a: Answer): Obj {
  const message: Obj = { role: "assistant", content: a.text ?? null, refusal: null, annotations: [] };
  if (a.thinking !== undefined) message.reasoning_content = a.thinking;
  if (a.calls.length > 0) {
    message.tool_calls = a.calls.map((c) => ({
      id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(c.arguments) },
    }));
  }
  return {
    id: a.id, object: "chat.completion", created: Math.floor(Date.now() / 1000), model: a.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: openaiFinish(a) }],
    usage: openaiUsage(a.usage), service_tier: a.usage.serviceTier ?? "default", system_fingerprint: "fp_mock",
  };
}

/** role chunk, reasoning/content chunks, tool-call fragments, finish chunk, usage chunk, [DONE]. */
export function openaiEvents(a: Answer): string[] {
  const created = Math.floor(Date.now() / 1000);
  // With include_usage the reference sends usage:null on every chunk but the last.
  const extra = a.includeUsage ? { usage: null } : {};
  const chunk = (delta: Obj, finish: string | null = null): string => sse(undefined, {
    id: a.id, object: "chat.completion.chunk", created, model: a.model,
    system_fingerprint: "fp_mock", service_tier: a.usage.serviceTier ?? "default",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...extra,
  });
  const out = [chunk({ role: "assistant", content: "", refusal: null })];
  if (a.thinking !== undefined) {
    for (const r of splitText(a.thinking, a.chunks)) out.push(chunk({ content: null, reasoning_content: r }));
  }
  for (const t of splitText(a.text ?? "", a.chunks)) out.push(chunk({ content: t }));
  a.calls.forEach((c, index) => {
    out.push(chunk({ tool_calls: [{ index, id: c.id, type: "function", function: { name: c.name, arguments: "" } }] }));
    for (const piece of splitText(JSON.stringify(c.arguments), a.argChunks)) {
      out.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  out.push(chunk({}, openaiFinish(a)));
  if (a.includeUsage) {
    // Repeats the id: ChatCompletionStream merges later chunks only when they carry one.
    out.push(sse(undefined, {
      id: a.id, object: "chat.completion.chunk", created, model: a.model,
      system_fingerprint: "fp_mock", service_tier: a.usage.serviceTier ?? "default", choices: [], usage: openaiUsage(a.usage),
    }));
  }
  out.push(sse(undefined, "[DONE]"));
  return out;
}

export const openaiErrorEvent = (): string =>
  sse(undefined, { error: { message: "The server is overloaded. Please try again later.", type: "server_error", param: null, code: null } });
