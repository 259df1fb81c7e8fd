// Chat Completions client → Messages upstream: the request (translation.md §2, §7); the response
// back is chat-via-messages-response.ts. Pure: a body in, a body out, or a GatewayError naming the field.
import { createHash } from "node:crypto";
import { carryCacheControl, checkBreakpointCount, placeBreakpoints, type Breakpoints } from "./cache-breakpoints.ts";
import { contentKind, unsupportedContent } from "./content-check.ts";
import { applyFields, arrayAt, handledElsewhere, isObject, isSet, lose, objectAt, refuse, stringAt, type FieldRule } from "./fields.ts";
import { budgetForEffort, effortIsOff, MIN_THINKING_BUDGET } from "./reasoning.ts";
import { toolIdToMessages, toolNameFor } from "./tool-ids.ts";
import type { ChatMessage, ChatRequest, ChatToolCall, JsonObject, MessagesBlock, MessagesMessage, MessagesRequest } from "../wire/shapes.ts";

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

interface Ctx {
  req: ChatRequest;
  out: MessagesRequest;
  dropped: string[];
  caps: MessagesUpstreamCaps;
  /** The client's cache_control carried so far, by path. */
  breakpoints: Breakpoints;
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

// ---- messages ----

interface Turns {
  system: MessagesBlock[];
  messages: MessagesMessage[];
}

const ROLES: Record<string, (m: ChatMessage, path: string, c: Ctx, t: Turns) => void> = {
  system: hoistSystem,
  developer: hoistSystem,
  user: (m, path, c, t) => addTurn(t, "user", cacheWhole(m, path, c, textBlocks(m.content, `${path}.content`, c))),
  assistant: assistantTurn,
  tool: (m, path, c, t) => addTurn(t, "user", cacheWhole(m, path, c, [toolResult(m, path, c)])),
  function: (_m, path) => refuse(`${path}.role`, "deprecated; send tool messages instead"),
};

function convertMessages(msgs: unknown[], c: Ctx): Turns {
  const t: Turns = { system: [], messages: [] };
  msgs.forEach((raw, i) => {
    const path = `messages[${i}]`;
    const m = objectAt(raw, path) as ChatMessage;
    const role = stringAt(m.role, `${path}.role`);
    if (!Object.hasOwn(ROLES, role)) refuse(`${path}.role`, `unknown role "${role}"`);
    // Participant names have no Messages field.
    if (isSet(m.name) && role !== "tool") c.dropped.push(`${path}.name`);
    ROLES[role]!(m, path, c, t);
  });
  toolResultsFirst(t.messages);
  declareHistoryTools(msgs, t.messages, c);
  trimFinalPrefill(t.messages);
  return t;
}

function hoistSystem(m: ChatMessage, path: string, c: Ctx, t: Turns): void {
  // Messages has one top-level system; a system turn after the conversation started loses its position (§7).
  if (t.messages.length > 0) c.dropped.push(path);
  t.system.push(...cacheWhole(m, path, c, textBlocks(m.content, `${path}.content`, c)));
}

/**
 * Consecutive same-role turns merge (translation.md §2). In a user turn tool_result blocks go first:
 * otherwise "Did not find N tool_result block(s) at the beginning" (tester-mcp-client#12).
 */
function addTurn(t: Turns, role: "user" | "assistant", blocks: MessagesBlock[]): void {
  if (blocks.length === 0) return;
  const last = t.messages.at(-1);
  // Appended in place (`blocks` and the turn are this translation's own): copying the turn on each
  // merge made n consecutive tool results cost n². The tool results move first once, at the end.
  if (last?.role === role) for (const b of blocks) (last.content as MessagesBlock[]).push(b);
  else t.messages.push({ role, content: blocks });
}

const isToolResult = (b: MessagesBlock) => b.type === "tool_result";

/** Each user turn's tool_result blocks first, in their order, then the rest: one pass per turn. */
function toolResultsFirst(messages: MessagesMessage[]): void {
  for (const m of messages) {
    if (m.role !== "user") continue;
    const blocks = m.content as MessagesBlock[];
    const firstOther = blocks.findIndex((b) => !isToolResult(b));
    if (firstOther === -1 || !blocks.some((b, i) => i > firstOther && isToolResult(b))) continue;
    m.content = [...blocks.filter(isToolResult), ...blocks.filter((b) => !isToolResult(b))];
  }
}

/**
 * Text of string or parts content as text blocks, skipping blank ones: Anthropic 400s on empty text
 * blocks (hermes-agent#11906). A part's cache_control stays on its block; a blank part's is a loss.
 */
function textBlocks(content: unknown, path: string, c: Ctx): MessagesBlock[] {
  if (!isSet(content)) return [];
  if (typeof content === "string") return content.trim() === "" ? [] : [{ type: "text", text: content }];
  const blocks: MessagesBlock[] = [];
  arrayAt(content, path).forEach((p, j) => {
    const partPath = `${path}[${j}]`;
    const text = partText(p, partPath);
    const cache = (p as JsonObject).cache_control;
    if (text.trim() === "") return void (isSet(cache) && c.dropped.push(`${partPath}.cache_control`));
    const block: MessagesBlock = { type: "text", text };
    carryCacheControl(cache, `${partPath}.cache_control`, block, c.breakpoints);
    blocks.push(block);
  });
  return blocks;
}

/**
 * A message's own cache_control (LiteLLM's form for string content) marks the message's last block:
 * the breakpoint caches everything up to the end of that message. Without a block it is a loss.
 */
function cacheWhole(m: ChatMessage, path: string, c: Ctx, blocks: MessagesBlock[]): MessagesBlock[] {
  if (!isSet(m.cache_control)) return blocks;
  const last = blocks.at(-1);
  if (last) carryCacheControl(m.cache_control, `${path}.cache_control`, last, c.breakpoints);
  else c.dropped.push(`${path}.cache_control`);
  return blocks;
}

function partText(part: unknown, path: string): string {
  const p = objectAt(part, path);
  // A refusal part in assistant history is what the assistant said.
  if (p.type === "text") return stringAt(p.text, `${path}.text`);
  if (p.type === "refusal") return stringAt(p.refusal, `${path}.refusal`);
  // The content check runs first, so media normally never gets here; this keeps the function total.
  throw unsupportedContent({ path, kind: contentKind("chat", p.type) });
}

function assistantTurn(m: ChatMessage, path: string, c: Ctx, t: Turns): void {
  if (isSet(m.audio)) refuse(`${path}.audio`, "this gateway produces text only");
  if (isSet(m.function_call)) refuse(`${path}.function_call`, "deprecated; send tool_calls instead");
  // Replayed reasoning has no signature, and Anthropic rejects unsigned thinking blocks (§7 loss).
  if (isSet(m.reasoning_content)) c.dropped.push(`${path}.reasoning_content`);
  const calls = isSet(m.tool_calls) ? arrayAt(m.tool_calls, `${path}.tool_calls`) : [];
  const blocks = [
    ...textBlocks(m.content, `${path}.content`, c),
    // A refusal the client replays is what the assistant said, as a refusal part is (partText).
    ...(isSet(m.refusal) ? textBlocks(stringAt(m.refusal, `${path}.refusal`), `${path}.refusal`, c) : []),
    ...calls.map((call, j) => toolUse(objectAt(call, `${path}.tool_calls[${j}]`) as ChatToolCall, `${path}.tool_calls[${j}]`)),
  ];
  addTurn(t, "assistant", cacheWhole(m, path, c, blocks));
}

function toolUse(call: ChatToolCall, path: string): MessagesBlock {
  if (isSet(call.type) && call.type !== "function") refuse(`${path}.type`, `only function tool calls can be sent to a ${UPSTREAM} upstream`);
  const fn = objectAt(call.function, `${path}.function`);
  return {
    type: "tool_use",
    id: toolIdToMessages(stringAt(call.id, `${path}.id`)),
    name: toolNameFor("messages", fn.name, `${path}.function.name`),
    input: toolInput(fn.arguments, `${path}.function.arguments`),
  };
}

/** `""` means no arguments; anything else must parse to an object (anthropic-sdk-typescript#648). */
function toolInput(args: unknown, path: string): JsonObject {
  const text = isSet(args) ? stringAt(args, path) : "";
  if (text.trim() === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return refuse(path, "Input should be a valid dictionary (the arguments are not valid JSON)");
  }
  return isObject(parsed) ? parsed : refuse(path, "Input should be a valid dictionary");
}

function toolResult(m: ChatMessage, path: string, c: Ctx): MessagesBlock {
  const block: MessagesBlock = { type: "tool_result", tool_use_id: toolIdToMessages(stringAt(m.tool_call_id, `${path}.tool_call_id`)) };
  const content = textBlocks(m.content, `${path}.content`, c);
  // content is optional on tool_result, and an empty text block would be a 400.
  if (content.length > 0) block.content = content;
  return block;
}

/**
 * Anthropic rejects tool_use/tool_result history in a request without tools ("Requests which include
 * tool_use or tool_result blocks must define tools", anthropic-sdk-python#494), and a multi-agent
 * handoff (the OpenAI Agents SDK) sends exactly that: the previous agent's calls, and no tools of
 * its own. Stub tools named after the history's calls satisfy the rule, and tool_choice none keeps
 * the model from calling a tool the client never offered.
 */
function declareHistoryTools(msgs: unknown[], turns: MessagesMessage[], c: Ctx): void {
  if (c.out.tools?.length) return;
  const names = new Set<string>();
  for (const m of turns) if (Array.isArray(m.content)) for (const b of m.content) if (b.type === "tool_use") names.add(String(b.name));
  if (names.size === 0) {
    const i = msgs.findIndex((m) => isObject(m) && m.role === "tool");
    // Results without any call: no name to declare, and Anthropic refuses a tool_result whose tool_use is missing.
    if (i >= 0) refuse(`messages[${i}]`, "a tool result needs the assistant tool call it answers earlier in messages");
    return;
  }
  const forced = c.out.tool_choice?.type;
  if (forced === "any" || forced === "tool") refuse("tool_choice", "a tool choice needs tools; this request declares none");
  c.out.tools = [...names].map((name) => ({ name, input_schema: { type: "object" } }));
  c.out.tool_choice = { type: "none" };
}

/** A final assistant turn is a prefill, and Anthropic 400s when it ends in whitespace. */
function trimFinalPrefill(messages: MessagesMessage[]): void {
  const last = messages.at(-1);
  if (last?.role !== "assistant") return;
  const blocks = last.content as MessagesBlock[];
  const tail = blocks.at(-1);
  if (tail?.type !== "text") return;
  tail.text = String(tail.text).trimEnd();
}
