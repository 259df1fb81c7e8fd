// POST /v1/responses body → a Chat Completions request (responses.md §1, §7). Pure: throws
// GatewayError with the JSON path of the field at fault, returns what it left out so the caller can
// name it in a header.

import { isObject, refuse } from "../fields.ts";
import type { ChatMessage, ChatRequest, JsonObject } from "../../wire/shapes.ts";
import { additionalTools, inputToMessages } from "./input.ts";
import { ToolNamer, mapToolChoice, mapTools, type SourcedTool } from "./tools.ts";
import type { ResponsesRequest, ToolNameMap } from "./types.ts";

export interface ResponsesToChatOptions {
  upstreamModel: string;
  /** The catalog's max_output_tokens: used when the request names none (Codex never does). */
  defaultMaxOutputTokens: number;
}

export interface ResponsesToChat {
  body: ChatRequest;
  /** Types of hosted tools that were offered but left out of the upstream call. */
  droppedTools: string[];
  /** Request fields accepted but not forwarded, because Chat or this gateway cannot honour them. */
  droppedFields: string[];
  toolNames: ToolNameMap;
}

/**
 * Every top-level field of the SDK's ResponseCreateParams (openai 7.57) and of Codex's request, and
 * its fate. Anything else is refused: an unknown field is never passed or lost silently
 * (translation.md ground rules). `moderation` and `access_programs` are refused that way too.
 */
const MAPPED = [
  ...["model", "input", "instructions", "tools", "tool_choice", "max_output_tokens", "temperature", "top_p", "parallel_tool_calls"],
  ...["text", "reasoning", "include", "top_logprobs", "user", "safety_identifier", "prompt_cache_key", "metadata", "store", "stream"],
  // refused when set to something that needs stored state (refuseServerState)
  ...["previous_response_id", "conversation", "background", "prompt", "context_management", "truncation"],
];
const FIELDS: Record<string, "mapped" | "ignored" | "dropped"> = {
  ...Object.fromEntries(MAPPED.map((k) => [k, "mapped" as const])),
  // Without effect, and nothing is lost: obfuscation padding is never sent; client_metadata is
  // Codex's telemetry; max_tool_calls caps built-in tools, and none run here.
  stream_options: "ignored",
  client_metadata: "ignored",
  max_tool_calls: "ignored",
  // Honoured by OpenAI's Responses servers only. A service tier changes the upstream's price while
  // the ledger charges the catalog's; cache options are hints; image options serve hosted tools.
  service_tier: "dropped",
  prompt_cache_options: "dropped",
  prompt_cache_retention: "dropped",
  image: "dropped",
};

export function responsesRequestToChat(req: ResponsesRequest, opts: ResponsesToChatOptions): ResponsesToChat {
  if (!isObject(req)) refuse("body", "must be a JSON object");
  const droppedFields: string[] = [];
  for (const [key, value] of Object.entries(req)) {
    if (value == null) continue; // the SDK sends null for fields left unset
    const fate = Object.hasOwn(FIELDS, key) ? FIELDS[key] : undefined;
    if (!fate) refuse(key, "is not supported by this endpoint");
    if (fate === "dropped") droppedFields.push(key);
  }
  refuseServerState(req);

  const namer = new ToolNamer();
  const declared: SourcedTool[] = [];
  if (req.tools != null) {
    if (!Array.isArray(req.tools)) refuse("tools", "must be an array");
    req.tools.forEach((tool, i) => declared.push({ tool, path: `tools[${i}]` }));
  }
  declared.push(...additionalTools(req.input));
  const { tools, dropped } = mapTools(declared, namer);

  const messages: ChatMessage[] = [];
  if (req.instructions != null) {
    if (typeof req.instructions !== "string") refuse("instructions", "must be a string");
    if (req.instructions !== "") messages.push({ role: "system", content: req.instructions });
  }
  if (req.input == null) refuse("input", "required");
  messages.push(...inputToMessages(req.input, namer));
  if (messages.length === 0) refuse("input", "must contain at least one message");

  const body: ChatRequest = { model: opts.upstreamModel, messages, max_completion_tokens: maxOutputTokens(req, opts) };
  copyNumber(req, body, "temperature", 0, 2);
  copyNumber(req, body, "top_p", 0, 1);

  if (tools.length > 0) body.tools = tools;
  const toolChoice = mapToolChoice(req.tool_choice, namer, tools.length > 0);
  if (toolChoice !== undefined) body.tool_choice = toolChoice;
  if (req.parallel_tool_calls != null) {
    if (typeof req.parallel_tool_calls !== "boolean") refuse("parallel_tool_calls", "must be a boolean");
    // OpenAI refuses parallel_tool_calls without tools.
    if (tools.length > 0) body.parallel_tool_calls = req.parallel_tool_calls;
  }

  mapText(req.text, body);
  mapReasoning(req.reasoning, body);
  mapLogprobs(req, body);
  for (const key of ["user", "safety_identifier", "prompt_cache_key"] as const) {
    const v = req[key];
    if (v == null) continue;
    if (typeof v !== "string") refuse(key, "must be a string");
    body[key] = v;
  }
  checkMetadata(req.metadata);

  if (req.stream != null && typeof req.stream !== "boolean") refuse("stream", "must be a boolean");
  if (req.stream === true) {
    body.stream = true;
    // Always: without the usage chunk there is nothing to bill (translation.md §1, ccs#1574).
    body.stream_options = { include_usage: true };
  }

  return { body, droppedTools: dropped, droppedFields, toolNames: namer.names };
}

/** Fields that need state kept between requests, which this gateway never stores (responses.md §7). */
function refuseServerState(req: ResponsesRequest): void {
  const noState = "this gateway stores no responses; send the whole conversation in input, as with store:false";
  if (req.previous_response_id != null) refuse("previous_response_id", `not supported: ${noState}`);
  if (req.conversation != null) refuse("conversation", `not supported: ${noState}`);
  if (req.store != null && typeof req.store !== "boolean") refuse("store", "must be a boolean");
  if (req.store === true) refuse("store", "true is not supported: this gateway stores no responses; send store:false or leave it out");
  if (req.background === true) refuse("background", "true is not supported: responses are served while the request is open");
  if (req.prompt != null) refuse("prompt", "stored prompt templates are not supported");
  if (req.context_management != null) refuse("context_management", "not supported");
  if (req.truncation === "auto") refuse("truncation", "'auto' is not supported: the gateway never drops input");
}

function maxOutputTokens(req: ResponsesRequest, opts: ResponsesToChatOptions): number {
  const v = req.max_output_tokens;
  if (v == null) return opts.defaultMaxOutputTokens;
  // OpenAI's own floor; max_output_tokens includes reasoning tokens, like max_completion_tokens.
  if (typeof v !== "number" || !Number.isInteger(v) || v < 16) refuse("max_output_tokens", "must be an integer of at least 16");
  return v;
}

function copyNumber(req: ResponsesRequest, body: ChatRequest, key: "temperature" | "top_p", min: number, max: number): void {
  const v = req[key];
  if (v == null) return;
  if (typeof v !== "number" || !Number.isFinite(v) || v < min || v > max) refuse(key, `must be a number from ${min} to ${max}`);
  body[key] = v;
}

function mapText(text: unknown, body: ChatRequest): void {
  if (text == null) return;
  if (!isObject(text)) refuse("text", "must be an object");
  if (text.verbosity != null) {
    if (text.verbosity !== "low" && text.verbosity !== "medium" && text.verbosity !== "high") refuse("text.verbosity", "must be low, medium or high");
    body.verbosity = text.verbosity;
  }
  const format = text.format;
  if (format == null) return;
  if (!isObject(format)) refuse("text.format", "must be an object");
  if (format.type === "text") return;
  if (format.type === "json_object") {
    body.response_format = { type: "json_object" };
    return;
  }
  if (format.type !== "json_schema") refuse("text.format.type", "must be text, json_object or json_schema");
  // Responses puts the schema fields flat on `format`; Chat nests them under `json_schema`.
  if (typeof format.name !== "string" || format.name === "") refuse("text.format.name", "required");
  if (!isObject(format.schema)) refuse("text.format.schema", "must be a JSON Schema object");
  const schema: JsonObject = { name: format.name, schema: format.schema };
  if (typeof format.description === "string") schema.description = format.description;
  if (typeof format.strict === "boolean") schema.strict = format.strict;
  body.response_format = { type: "json_schema", json_schema: schema };
}

function mapReasoning(reasoning: unknown, body: ChatRequest): void {
  if (reasoning == null) return;
  if (!isObject(reasoning)) refuse("reasoning", "must be an object");
  // summary and context are accepted without effect: no upstream reasoning summary exists in Chat.
  if (reasoning.effort == null) return;
  if (typeof reasoning.effort !== "string") refuse("reasoning.effort", "must be a string");
  body.reasoning_effort = reasoning.effort;
}

function mapLogprobs(req: ResponsesRequest, body: ChatRequest): void {
  if (req.include != null && !Array.isArray(req.include)) refuse("include", "must be an array");
  // Other include values (reasoning.encrypted_content, which Codex always sends) ask for data this
  // adapter never has; they are accepted without effect.
  if (req.include?.includes("message.output_text.logprobs")) body.logprobs = true;
  if (req.top_logprobs == null) return;
  const n = req.top_logprobs;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0 || n > 20) refuse("top_logprobs", "must be an integer from 0 to 20");
  body.logprobs = true;
  body.top_logprobs = n;
}

function checkMetadata(metadata: unknown): void {
  // Echoed in the response, not forwarded: Chat's metadata belongs to stored completions.
  if (metadata == null) return;
  if (!isObject(metadata)) refuse("metadata", "must be an object of strings");
  const entries = Object.entries(metadata);
  if (entries.length > 16) refuse("metadata", "at most 16 keys");
  for (const [key, value] of entries) {
    if (key.length > 64) refuse(`metadata.${key}`, "keys are at most 64 characters");
    if (typeof value !== "string" || value.length > 512) refuse(`metadata.${key}`, "must be a string of at most 512 characters");
  }
}
