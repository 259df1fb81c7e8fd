// Messages client → Chat Completions upstream: the request (translation.md §1, §7) and the
// non-streamed response back (§3). Pure: a body in, a body out, or a GatewayError naming the field.
import { randomUUID } from "node:crypto";
import { GatewayError } from "../core/errors.ts";
import { contentKind, unsupportedContent } from "./content-check.ts";
import { applyFields, arrayAt, handledElsewhere, isObject, isSet, lose, objectAt, refuse, stringAt, type FieldRule } from "./fields.ts";
import { effortForBudget } from "./reasoning.ts";
import { toolIdFromMessages, toolIdToMessages, toolNameFor } from "./tool-ids.ts";
import { finishToStop, fullMessagesUsage, toolAwareStop, usageFromChat } from "./usage.ts";
import type { ChatMessage, ChatRequest, ChatResponse, ChatToolCall, JsonObject, MessagesBlock, MessagesMessage, MessagesRequest, MessagesResponse } from "../wire/shapes.ts";

/** What a Chat upstream takes beyond plain Chat Completions: a route's `capabilities` in gateway.toml (catalog.ts resolves them); all default off. */
export interface ChatUpstreamCaps {
  /** A reasoning model: takes `reasoning_effort`. Otherwise thinking is a loss (§7). */
  reasoning?: boolean;
  /** Takes `reasoning_content` on assistant history turns (DeepSeek, vLLM reasoning parsers; agentgateway#3363). */
  reasoningContent?: boolean;
  /** Takes `top_k` (vLLM, llama.cpp). Otherwise top_k is a loss. */
  topK?: boolean;
}

export interface MessagesViaChatOptions {
  upstreamModel: string;
  maxTokensField: "max_tokens" | "max_completion_tokens";
  caps?: ChatUpstreamCaps;
}

interface Ctx {
  req: MessagesRequest;
  out: ChatRequest;
  dropped: string[];
  opts: MessagesViaChatOptions;
  caps: ChatUpstreamCaps;
}

const UPSTREAM = "Chat Completions";
// User, system and tool-result text blocks are separate passages; assistant text blocks are one
// answer split at citations, so they join with nothing.
const PASSAGE_JOIN = "\n";

const noChatEquivalent: FieldRule<Ctx> = (_v, _c, path) => refuse(path, `has no ${UPSTREAM} equivalent`);

// Every top-level Messages field (messages.md §4) and what it becomes. Not listed: refused.
const FIELDS: Record<string, FieldRule<Ctx>> = {
  model: handledElsewhere, // replaced by the route's upstream model
  messages: handledElsewhere,
  system: handledElsewhere,
  thinking: handledElsewhere, // read with output_config.effort in reasoning()
  max_tokens: (v, c) => {
    c.out[c.opts.maxTokensField] = v as number;
  },
  stream: (v, c) => {
    c.out.stream = v === true;
    // Always: without it a Chat stream carries no usage and there is nothing to bill (ccs#1574).
    if (v === true) c.out.stream_options = { include_usage: true };
  },
  stop_sequences: (v, c, path) => {
    const stops = arrayAt(v, path).map((s, i) => stringAt(s, `${path}[${i}]`));
    // OpenAI takes at most 4; sending fewer would let the output run past a stop the client set.
    if (stops.length > 4) refuse(path, `at most 4 stop sequences can be sent to a ${UPSTREAM} upstream, got ${stops.length}`);
    if (stops.length > 0) c.out.stop = stops;
  },
  temperature: (v, c) => {
    c.out.temperature = v as number;
  },
  top_p: (v, c) => {
    c.out.top_p = v as number;
  },
  top_k: (v, c, path) => (c.caps.topK ? void (c.out.top_k = v) : lose(v, c, path)),
  metadata: (v, c, path) => applyFields(objectAt(v, path), METADATA, c, path, UPSTREAM),
  tools: (v, c, path) => {
    c.out.tools = arrayAt(v, path).map((t, i) => chatTool(objectAt(t, `${path}[${i}]`), `${path}[${i}]`, c));
  },
  tool_choice: (v, c, path) => toolChoice(objectAt(v, path), path, c),
  output_config: (v, c, path) => applyFields(objectAt(v, path), OUTPUT_CONFIG, c, path, UPSTREAM),
  service_tier: lose,
  cache_control: lose, // strict Chat upstreams 400 on it (new-api#5982)
  betas: handledElsewhere, // an SDK parameter that belongs in the anthropic-beta header (messages.md §4)
  mcp_servers: noChatEquivalent,
  container: noChatEquivalent,
  context_management: noChatEquivalent,
};

const METADATA: Record<string, FieldRule<Ctx>> = {
  user_id: (v, c, path) => {
    c.out.user = stringAt(v, path);
  },
};

const OUTPUT_CONFIG: Record<string, FieldRule<Ctx>> = {
  effort: (v, _c, path) => void stringAt(v, path), // read in reasoning()
  format: (v, c, path) => {
    const format = objectAt(v, path);
    if (format.type !== "json_schema") refuse(`${path}.type`, `only json_schema can be sent to a ${UPSTREAM} upstream`);
    // The schema goes whole and strict stays unset: LiteLLM forces strict and rewrites the schema,
    // which changes what it accepts. Chat requires a name; Messages has none.
    c.out.response_format = { type: "json_schema", json_schema: { name: "output", schema: objectAt(format.schema, `${path}.schema`) } };
  },
};

export function messagesRequestToChat(req: MessagesRequest, opts: MessagesViaChatOptions): { body: ChatRequest; dropped: string[] } {
  const c: Ctx = { req, out: { model: opts.upstreamModel, messages: [] }, dropped: [], opts, caps: opts.caps ?? {} };
  applyFields(req, FIELDS, c, "", UPSTREAM);
  const system = isSet(req.system) ? passages(req.system, "system", c) : "";
  c.out.messages = [
    // A string, never parts: vLLM/NIM chat templates crash on arrays (CLIProxyAPI#3056).
    ...(system === "" ? [] : [{ role: "system" as const, content: system }]),
    ...arrayAt(req.messages, "messages").flatMap((m, i) => turn(objectAt(m, `messages[${i}]`) as MessagesMessage, `messages[${i}]`, c)),
  ];
  reasoning(c);
  return { body: c.out, dropped: c.dropped };
}

// ---- reasoning ----

// thinking.type → the reasoning_effort it asks for (translation.md §1); `effort` is output_config.effort.
const THINKING_EFFORT: Record<string, (t: JsonObject, effort: string | undefined) => string | undefined> = {
  enabled: (t) => effortForBudget(typeof t.budget_tokens === "number" ? t.budget_tokens : 0),
  adaptive: (_t, effort) => effort,
  disabled: () => undefined,
};

function reasoning(c: Ctx): void {
  const thinking = isSet(c.req.thinking) ? objectAt(c.req.thinking, "thinking") : undefined;
  const effort = isObject(c.req.output_config) && typeof c.req.output_config.effort === "string" ? c.req.output_config.effort : undefined;
  const type = thinking ? stringAt(thinking.type, "thinking.type") : undefined;
  if (type !== undefined && !Object.hasOwn(THINKING_EFFORT, type)) refuse("thinking.type", `unknown thinking type "${type}"`);
  // Effort is the whole ask when thinking is absent or adaptive; next to a budget or "disabled" it is lost.
  const usesEffort = type === undefined || type === "adaptive";
  if (effort !== undefined && !(c.caps.reasoning && usesEffort)) c.dropped.push("output_config.effort");
  if (type !== undefined && type !== "disabled" && !c.caps.reasoning) c.dropped.push("thinking");
  const value = thinking && type !== undefined ? THINKING_EFFORT[type]!(thinking, effort) : effort;
  if (c.caps.reasoning && value !== undefined) c.out.reasoning_effort = value;
}

// ---- messages ----

const ROLES: Record<string, (m: MessagesMessage, path: string, c: Ctx) => ChatMessage[]> = {
  user: userTurn,
  assistant: assistantTurn,
  // Newer SDKs and Claude Code send mid-conversation system turns (envoyproxy/ai-gateway#2206).
  system: (m, path, c) => [{ role: "system", content: passages(m.content, `${path}.content`, c) }],
};

function turn(m: MessagesMessage, path: string, c: Ctx): ChatMessage[] {
  const role = stringAt(m.role, `${path}.role`);
  if (!Object.hasOwn(ROLES, role)) refuse(`${path}.role`, `unknown role "${role}"`);
  return ROLES[role]!(m, path, c);
}

function blocksAt(content: unknown, path: string): MessagesBlock[] {
  return arrayAt(content, path).map((b, j) => objectAt(b, `${path}[${j}]`) as MessagesBlock);
}

/** Text of a text block; cache_control and citations are the documented losses (§7). */
function blockText(b: MessagesBlock, path: string, c: Ctx): string {
  if (isSet(b.cache_control)) c.dropped.push(`${path}.cache_control`);
  if (isSet(b.citations)) c.dropped.push(`${path}.citations`);
  return stringAt(b.text, `${path}.text`);
}

function refuseBlock(b: MessagesBlock, path: string): never {
  // The content check runs first, so media normally never gets here; this keeps the function total.
  if (b.type === "image" || b.type === "document") throw unsupportedContent({ path, kind: contentKind("messages", b.type) });
  return refuse(path, `${String(b.type)} blocks cannot be sent to a ${UPSTREAM} upstream`);
}

/** Text-only content (system, tool results) as one string. */
function passages(content: unknown, path: string, c: Ctx): string {
  if (!isSet(content)) return "";
  if (typeof content === "string") return content;
  return blocksAt(content, path)
    .map((b, j) => (b.type === "text" ? blockText(b, `${path}[${j}]`, c) : refuseBlock(b, `${path}[${j}]`)))
    .join(PASSAGE_JOIN);
}

function userTurn(m: MessagesMessage, path: string, c: Ctx): ChatMessage[] {
  if (typeof m.content === "string") return [{ role: "user", content: m.content }];
  const tools: ChatMessage[] = [];
  const texts: string[] = [];
  blocksAt(m.content, `${path}.content`).forEach((b, j) => {
    const at = `${path}.content[${j}]`;
    if (b.type === "text") texts.push(blockText(b, at, c));
    else if (b.type === "tool_result") tools.push(toolMessage(b, at, c));
    else refuseBlock(b, at);
  });
  // Tool messages first: a user message between tool_calls and their results is a 400 (ogx#6367).
  if (tools.length > 0 && texts.length === 0) return tools;
  return [...tools, { role: "user", content: texts.join(PASSAGE_JOIN) }];
}

function toolMessage(b: MessagesBlock, path: string, c: Ctx): ChatMessage {
  if (isSet(b.cache_control)) c.dropped.push(`${path}.cache_control`);
  // Chat has no error flag on tool messages (§7 loss).
  if (b.is_error === true) c.dropped.push(`${path}.is_error`);
  return {
    role: "tool",
    tool_call_id: toolIdFromMessages(stringAt(b.tool_use_id, `${path}.tool_use_id`)),
    content: passages(b.content, `${path}.content`, c),
  };
}

function assistantTurn(m: MessagesMessage, path: string, c: Ctx): ChatMessage[] {
  if (typeof m.content === "string") return [{ role: "assistant", content: m.content }];
  const texts: string[] = [];
  const calls: ChatToolCall[] = [];
  const thoughts: string[] = [];
  blocksAt(m.content, `${path}.content`).forEach((b, j) => {
    const at = `${path}.content[${j}]`;
    switch (b.type) {
      case "text":
        texts.push(blockText(b, at, c));
        break;
      case "tool_use":
        if (isSet(b.cache_control)) c.dropped.push(`${at}.cache_control`);
        calls.push(toolCall(b, at));
        break;
      case "thinking":
        if (!c.caps.reasoningContent) c.dropped.push(at);
        else {
          thoughts.push(stringAt(b.thinking, `${at}.thinking`));
          if (isSet(b.signature) && b.signature !== "") c.dropped.push(`${at}.signature`);
        }
        break;
      case "redacted_thinking":
        c.dropped.push(at);
        break;
      default:
        refuseBlock(b, at);
    }
  });
  const text = texts.join("");
  // null only next to tool calls: OpenAI requires content otherwise.
  const out: ChatMessage = { role: "assistant", content: text === "" && calls.length > 0 ? null : text };
  if (calls.length > 0) out.tool_calls = calls;
  if (thoughts.length > 0) out.reasoning_content = thoughts.join("");
  return [out];
}

function toolCall(b: MessagesBlock, path: string): ChatToolCall {
  return {
    id: toolIdFromMessages(stringAt(b.id, `${path}.id`)),
    type: "function",
    function: { name: toolNameFor("chat", b.name, `${path}.name`), arguments: JSON.stringify(objectAt(b.input, `${path}.input`)) },
  };
}

// ---- tools ----

interface ToolCtx {
  c: Ctx;
  fn: JsonObject;
}

// Keys of a custom tool (messages.md §4) and what each becomes in `function`.
const TOOL_KEYS: Record<string, FieldRule<ToolCtx>> = {
  type: handledElsewhere,
  name: (v, t, path) => void (t.fn.name = toolNameFor("chat", v, path)),
  description: (v, t) => void (t.fn.description = v),
  // Copied whole: Portkey rebuilds it from 4 keys and loses the rest.
  input_schema: (v, t, path) => void (t.fn.parameters = objectAt(v, path)),
  strict: (v, t) => void (t.fn.strict = v),
  cache_control: (_v, t, path) => void t.c.dropped.push(path),
  // A streaming latency hint; Chat streams arguments anyway.
  eager_input_streaming: (_v, t, path) => void t.c.dropped.push(path),
};

function chatTool(tool: JsonObject, path: string, c: Ctx): JsonObject {
  // Typed tools are Anthropic-defined (bash, text editor, web search…) with schemas only Anthropic knows.
  if (isSet(tool.type) && tool.type !== "custom") refuse(`${path}.type`, `Anthropic-defined tool "${String(tool.type)}" cannot be served by a ${UPSTREAM} upstream`);
  const fn: JsonObject = {};
  applyFields(tool, TOOL_KEYS, { c, fn }, path, UPSTREAM);
  return { type: "function", function: fn };
}

// translation.md §1.
const TOOL_CHOICE: Record<string, (tc: JsonObject, path: string) => string | JsonObject> = {
  auto: () => "auto",
  any: () => "required",
  none: () => "none",
  tool: (tc, path) => ({ type: "function", function: { name: toolNameFor("chat", tc.name, `${path}.name`) } }),
};

function toolChoice(tc: JsonObject, path: string, c: Ctx): void {
  const type = stringAt(tc.type, `${path}.type`);
  if (!Object.hasOwn(TOOL_CHOICE, type)) refuse(`${path}.type`, `unknown tool_choice type "${type}"`);
  c.out.tool_choice = TOOL_CHOICE[type]!(tc, path);
  // Chat has the same switch (LiteLLM's adapter drops it).
  if (tc.disable_parallel_tool_use === true && type !== "none") c.out.parallel_tool_calls = false;
}

// ---- response ----

/** A Chat completion from the upstream as the Messages response the client expects. */
export function chatResponseToMessages(res: ChatResponse, opts: { model: string }): MessagesResponse {
  const choice = res.choices?.[0];
  if (!choice) throw new GatewayError("upstream_unavailable", "the upstream returned a completion without choices");
  const msg = choice.message ?? { role: "assistant" };
  // "chatcmpl-X" → "msg_X" (one-api); a fresh id when the upstream sent none.
  const idPart = typeof res.id === "string" && res.id !== "" ? res.id.replace(/^chatcmpl-/, "") : randomUUID().replaceAll("-", "");
  const content: MessagesBlock[] = [];
  // Thinking first, as Anthropic orders it. OpenRouter and newer vLLM name the field `reasoning`.
  const thought = [msg.reasoning_content, msg.reasoning].find((r): r is string => typeof r === "string" && r !== "");
  if (thought) content.push({ type: "thinking", thinking: thought, signature: "" });
  const text = chatText(msg.content);
  if (text !== "") content.push({ type: "text", text });
  const refusal = typeof msg.refusal === "string" && msg.refusal !== "" ? msg.refusal : null;
  if (refusal) content.push({ type: "text", text: refusal });
  (msg.tool_calls ?? []).forEach((call, i) => content.push(toolUse(call, `toolu_gw${i}_${idPart}`)));
  const u = res.usage;
  const reasoningTokens = u?.completion_tokens_details?.reasoning_tokens;
  return {
    id: `msg_${idPart}`,
    type: "message",
    role: "assistant",
    model: opts.model,
    content,
    stop_reason: refusal ? "refusal" : toolAwareStop(finishToStop(choice.finish_reason) ?? "end_turn", (msg.tool_calls?.length ?? 0) > 0),
    stop_sequence: null, // Chat does not say which sequence matched (§7 loss)
    // Typed `RefusalStopDetails | null` by the SDK; Chat has no refusal category to fill it with.
    stop_details: null,
    // No usage from the upstream: leave the counts out rather than make them up; the caller settles on its own count.
    usage: u ? fullMessagesUsage(usageFromChat(u, res.service_tier), reasoningTokens === undefined ? {} : { thinkingTokens: reasoningTokens }) : {},
  };
}

function chatText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((p) => (isObject(p) && p.type === "text" && typeof p.text === "string" ? p.text : "")).join("");
}

function toolUse(call: ChatToolCall, fallbackId: string): MessagesBlock {
  return {
    type: "tool_use",
    id: toolIdToMessages(typeof call.id === "string" && call.id !== "" ? call.id : fallbackId),
    name: call.function?.name ?? "",
    input: toolInput(call.function?.arguments),
  };
}

/**
 * Anthropic's tool input must be an object. Arguments the model garbled become {}: the client's tool
 * then reports the missing parameters and the model can retry, where failing the whole (paid) answer
 * could not.
 */
function toolInput(args: unknown): JsonObject {
  if (typeof args !== "string" || args.trim() === "") return {};
  try {
    const parsed: unknown = JSON.parse(args);
    return isObject(parsed) ? parsed : {};
  } catch {
    return {};
  }
}
