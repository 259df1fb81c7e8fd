// Chat Completions client → Messages upstream: the conversation (translation.md §2), each Chat turn
// as Messages turns and blocks; the request's other fields are chat-via-messages.ts's.
import { carryCacheControl, type Breakpoints } from "./cache-breakpoints.ts";
import { contentKind, unsupportedContent } from "./content-check.ts";
import { arrayAt, isObject, isSet, objectAt, refuse, stringAt } from "./fields.ts";
import { toolIdToMessages, toolNameFor } from "./tool-ids.ts";
import type { ChatMessage, ChatToolCall, JsonObject, MessagesBlock, MessagesMessage, MessagesRequest } from "../wire/shapes.ts";

/** What the conversion reads and writes of the request's translation. */
export interface TurnsCtx {
  /** The request so far: its tools and tool_choice decide the stub tools of a history's calls. */
  out: MessagesRequest;
  dropped: string[];
  /** The client's cache_control carried so far, by path. */
  breakpoints: Breakpoints;
}

export interface Turns {
  system: MessagesBlock[];
  messages: MessagesMessage[];
}

const ROLES: Record<string, (m: ChatMessage, path: string, c: TurnsCtx, t: Turns) => void> = {
  system: hoistSystem,
  developer: hoistSystem,
  user: (m, path, c, t) => addTurn(t, "user", cacheWhole(m, path, c, textBlocks(m.content, `${path}.content`, c))),
  assistant: assistantTurn,
  tool: (m, path, c, t) => addTurn(t, "user", cacheWhole(m, path, c, [toolResult(m, path, c)])),
  function: (_m, path) => refuse(`${path}.role`, "deprecated; send tool messages instead"),
};

/** The conversation as Messages turns and the system blocks hoisted out of it. */
export function convertMessages(msgs: unknown[], c: TurnsCtx): Turns {
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

function hoistSystem(m: ChatMessage, path: string, c: TurnsCtx, t: Turns): void {
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
function textBlocks(content: unknown, path: string, c: TurnsCtx): MessagesBlock[] {
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
function cacheWhole(m: ChatMessage, path: string, c: TurnsCtx, blocks: MessagesBlock[]): MessagesBlock[] {
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

function assistantTurn(m: ChatMessage, path: string, c: TurnsCtx, t: Turns): void {
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
  if (isSet(call.type) && call.type !== "function") refuse(`${path}.type`, "only function tool calls can be sent to a Messages upstream");
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

function toolResult(m: ChatMessage, path: string, c: TurnsCtx): MessagesBlock {
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
function declareHistoryTools(msgs: unknown[], turns: MessagesMessage[], c: TurnsCtx): void {
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
