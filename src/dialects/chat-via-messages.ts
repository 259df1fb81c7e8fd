// Chat Completions client → Messages upstream: the request (translation.md §2, §7), its conversation
// converted by chat-via-messages-turns.ts; the response back is chat-via-messages-response.ts.
// Pure: a body in, a body out, or a GatewayError naming the field.
import { createHash } from "node:crypto";
import { carryCacheControl, checkBreakpointCount, placeBreakpoints } from "./cache-breakpoints.ts";
import { applyFields, arrayAt, handledElsewhere, isSet, lose, objectAt, refuse, stringAt, type FieldRule } from "./fields.ts";
import { budgetForEffort, effortIsOff, MIN_THINKING_BUDGET } from "./reasoning.ts";
import { toolNameFor } from "./tool-ids.ts";
import { convertMessages, type TurnsCtx } from "./chat-via-messages-turns.ts";
import type { ChatRequest, JsonObject, MessagesRequest } from "../wire/shapes.ts";

/** What a Messages upstream model takes: a route's `capabilities` in gateway.toml (catalog.ts resolves them). */
export interface MessagesUpstreamCaps {
  /**
   * How reasoning_effort becomes thinking: "budget" (`enabled` + budget_tokens, every thinking
   * model; the default), "adaptive" (`adaptive` + output_config.effort, newest models), or "none"
   * (a model without thinking: reasoning_effort is a loss).
   */
  thinking?: "budget" | "adaptive" | "none";
  /** Structured outputs (output_config.format). Default true; false refuses json_schema (§7). */
  structuredOutputs?: boolean;
  /** Newest models take only temperature 1.0 and top_p ≥ 0.99: both become losses. Default false. */
  fixedSampling?: boolean;
  /** "auto": breakpoints placed on a request that sent none (cache-breakpoints.ts). Default "off". */
  promptCache?: "auto" | "off";
}

export interface ChatViaMessagesOptions {
  upstreamModel: string;
  caps?: MessagesUpstreamCaps;
}

interface Ctx extends TurnsCtx {
  req: ChatRequest;
  caps: MessagesUpstreamCaps;
}

const UPSTREAM = "Messages";

const noMessagesEquivalent: FieldRule<Ctx> = (_v, _c, path) => refuse(path, `has no ${UPSTREAM} equivalent`);

// Every Chat request field (chat-completions.md §2) and what it becomes. Not listed: refused.
const FIELDS: Record<string, FieldRule<Ctx>> = {
  model: handledElsewhere, // replaced by the route's upstream model
  messages: handledElsewhere,
  max_tokens: handledElsewhere, // max_completion_tokens ?? max_tokens, in chatRequestToMessages
  max_completion_tokens: handledElsewhere,
  parallel_tool_calls: handledElsewhere, // folded into tool_choice
  reasoning_effort: handledElsewhere, // needs max_tokens and tool_choice: reasoning()
  user: handledElsewhere, // with safety_identifier: user()
  safety_identifier: handledElsewhere,
  // include_usage only decides whether the client gets a usage chunk; the stream translator reads it.
  stream_options: handledElsewhere,
  stream: (v, c) => {
    c.out.stream = v === true;
  },
  temperature: (v, c, path) => {
    if (c.caps.fixedSampling) return lose(v, c, path);
    const t = v as number;
    // Chat allows 0–2, Messages 0–1: capped like Anthropic's own compat layer, and said so (§7).
    if (t > 1) c.dropped.push(path);
    c.out.temperature = Math.min(t, 1);
  },
  top_p: (v, c, path) => (c.caps.fixedSampling ? lose(v, c, path) : void (c.out.top_p = v as number)),
  n: (v, _c, path) => {
    if (v !== 1) refuse(path, `only n=1 can be served by a ${UPSTREAM} upstream`);
  },
  stop: (v, c, path) => {
    const stops = typeof v === "string" ? [v] : arrayAt(v, path).map((s, i) => stringAt(s, `${path}[${i}]`));
    stops.forEach((s, i) => {
      // Anthropic rejects whitespace-only stop sequences.
      if (s.trim() === "") refuse(typeof v === "string" ? path : `${path}[${i}]`, `a whitespace-only stop sequence cannot be sent to a ${UPSTREAM} upstream`);
    });
    if (stops.length > 0) c.out.stop_sequences = stops;
  },
  tools: (v, c, path) => {
    c.out.tools = arrayAt(v, path).map((t, i) => messagesTool(objectAt(t, `${path}[${i}]`), `${path}[${i}]`, c));
  },
  tool_choice: (v, c, path) => {
    c.out.tool_choice = toolChoice(v, path);
  },
  response_format: (v, c, path) => responseFormat(objectAt(v, path), path, c),
  logprobs: (v, _c, path) => {
    if (v === true) refuse(path, `log probabilities are not available from a ${UPSTREAM} upstream`);
  },
  top_logprobs: (_v, _c, path) => refuse(path, `log probabilities are not available from a ${UPSTREAM} upstream`),
  modalities: (v, _c, path) => {
    arrayAt(v, path).forEach((m, i) => {
      if (m !== "text") refuse(`${path}[${i}]`, "this gateway produces text only");
    });
  },
  audio: (_v, _c, path) => refuse(path, "this gateway produces text only"),
  prediction: noMessagesEquivalent,
  functions: (_v, _c, path) => refuse(path, "deprecated; send tools instead"),
  function_call: (_v, _c, path) => refuse(path, "deprecated; send tool_choice instead"),
  web_search_options: noMessagesEquivalent,
  seed: lose,
  presence_penalty: lose,
  frequency_penalty: lose,
  logit_bias: lose,
  service_tier: lose,
  metadata: lose,
  store: lose,
  // Caching hints: Anthropic caches by cache_control breakpoints instead (§7: cache_control is a loss).
  prompt_cache_key: lose,
  prompt_cache_retention: lose,
};

export function chatRequestToMessages(req: ChatRequest, opts: ChatViaMessagesOptions): { body: MessagesRequest; dropped: string[] } {
  const maxTokens = req.max_completion_tokens ?? req.max_tokens;
  // Messages requires it and the reservation is sized from it.
  if (typeof maxTokens !== "number") return refuse("max_completion_tokens", `required (or max_tokens) when this model is served by a ${UPSTREAM} upstream`);
  const c: Ctx = { req, out: { model: opts.upstreamModel, max_tokens: maxTokens, messages: [] }, dropped: [], caps: opts.caps ?? {}, breakpoints: [] };
  applyFields(req, FIELDS, c, "", UPSTREAM);
  const { system, messages } = convertMessages(arrayAt(req.messages, "messages"), c);
  if (system.length > 0) c.out.system = system;
  c.out.messages = messages;
  toolChoiceAndParallel(c);
  reasoning(c);
  user(c);
  // The client's own breakpoints say what it wants cached; the gateway places its own only without them.
  checkBreakpointCount(c.breakpoints);
  if (c.breakpoints.length === 0 && c.caps.promptCache === "auto") placeBreakpoints(c.out);
  return { body: c.out, dropped: c.dropped };
}

// ---- options read together ----

function toolChoiceAndParallel(c: Ctx): void {
  if (!c.out.tools?.length) {
    // Without tools, auto and none are Chat's no-op defaults; Anthropic may refuse a tool_choice without tools.
    const type = c.out.tool_choice?.type;
    if (type === "auto" || type === "none") delete c.out.tool_choice;
    return;
  }
  if (c.req.parallel_tool_calls !== false) return;
  const choice = c.out.tool_choice ?? { type: "auto" };
  // "none" has no such switch: nothing runs in parallel anyway.
  if (choice.type !== "none") c.out.tool_choice = { ...choice, disable_parallel_tool_use: true };
}

function reasoning(c: Ctx): void {
  if (!isSet(c.req.reasoning_effort)) return;
  const effort = stringAt(c.req.reasoning_effort, "reasoning_effort");
  if (effortIsOff(effort)) return;
  const mode = c.caps.thinking ?? "budget";
  if (mode === "none") return void c.dropped.push("reasoning_effort");
  // With thinking on, Anthropic wants the last assistant turn of a tool loop to start with a signed
  // thinking block ("Expected `thinking` … but found `tool_use`"); replayed reasoning carries no
  // signature and is dropped, so such a turn can only be continued without thinking.
  const lastAssistant = c.out.messages.findLast((m) => m.role === "assistant");
  if (Array.isArray(lastAssistant?.content) && lastAssistant.content.some((b) => b.type === "tool_use")) {
    return void c.dropped.push("reasoning_effort");
  }
  const forced = c.out.tool_choice?.type;
  // Anthropic refuses thinking with a forced tool (llama_index#19641).
  if (forced === "any" || forced === "tool") refuse("tool_choice", "a forced tool choice cannot be combined with reasoning_effort");
  if (mode === "adaptive") {
    c.out.thinking = { type: "adaptive" };
    c.out.output_config = { ...(c.out.output_config as JsonObject | undefined), effort };
    return;
  }
  const budget = budgetForEffort(effort) ?? refuse("reasoning_effort", `unknown effort "${effort}"`);
  // budget_tokens must be ≥ 1024 and < max_tokens; a smaller budget still thinks, a too-small max_tokens cannot.
  const capped = Math.min(budget, c.out.max_tokens - 1);
  if (capped < MIN_THINKING_BUDGET) refuse("reasoning_effort", `thinking needs max_completion_tokens above ${MIN_THINKING_BUDGET} on this model`);
  c.out.thinking = { type: "enabled", budget_tokens: capped };
}

// Anthropic rejects user_id values that look like personal data; hashing keeps them distinct
// per user where LiteLLM drops them. A long numeric id looks like a phone number and is hashed too.
const PERSONAL = [/^[^\s@]+@[^\s@]+$/, /^\+?[\d\s().-]{7,}$/];

function user(c: Ctx): void {
  const id = [c.req.safety_identifier, c.req.user].find((v): v is string => typeof v === "string" && v !== "");
  if (id === undefined) return;
  const safe = PERSONAL.some((re) => re.test(id)) ? createHash("sha256").update(id).digest("hex") : id;
  c.out.metadata = { user_id: safe };
}

function responseFormat(rf: JsonObject, path: string, c: Ctx): void {
  if (rf.type === "text") return;
  if (rf.type !== "json_schema") refuse(`${path}.type`, `only text and json_schema can be served by a ${UPSTREAM} upstream`);
  if (c.caps.structuredOutputs === false) refuse(path, "this model has no structured outputs");
  const schema = objectAt(objectAt(rf.json_schema, `${path}.json_schema`).schema, `${path}.json_schema.schema`);
  c.out.output_config = { ...(c.out.output_config as JsonObject | undefined), format: { type: "json_schema", schema } };
}

// ---- tools ----

function messagesTool(tool: JsonObject, path: string, c: Ctx): JsonObject {
  if (tool.type !== "function") refuse(`${path}.type`, `only function tools can be served by a ${UPSTREAM} upstream`);
  const fn = objectAt(tool.function, `${path}.function`);
  const out: JsonObject = {
    name: toolNameFor("messages", fn.name, `${path}.function.name`),
    // Chat allows a tool without parameters; Messages requires a schema.
    input_schema: isSet(fn.parameters) ? objectAt(fn.parameters, `${path}.function.parameters`) : { type: "object", properties: {} },
  };
  if (isSet(fn.description)) out.description = fn.description;
  if (isSet(fn.strict)) out.strict = fn.strict;
  // On the tool (LiteLLM, OpenRouter), or inside its function (LiteLLM reads both).
  if (isSet(tool.cache_control)) carryCacheControl(tool.cache_control, `${path}.cache_control`, out, c.breakpoints);
  else carryCacheControl(fn.cache_control, `${path}.function.cache_control`, out, c.breakpoints);
  return out;
}

// translation.md §2.
const TOOL_CHOICE: ReadonlyMap<string, JsonObject> = new Map([
  ["auto", { type: "auto" }],
  ["required", { type: "any" }],
  ["none", { type: "none" }],
]);

function toolChoice(v: unknown, path: string): JsonObject {
  if (typeof v === "string") return TOOL_CHOICE.get(v) ?? refuse(path, `unknown tool_choice "${v}"`);
  const tc = objectAt(v, path);
  if (tc.type !== "function") refuse(`${path}.type`, `only function tool choices can be served by a ${UPSTREAM} upstream`);
  return { type: "tool", name: toolNameFor("messages", objectAt(tc.function, `${path}.function`).name, `${path}.function.name`) };
}
