// Responses `input` (a string or an item list, responses.md §2) → Chat messages.

import { GatewayError } from "../../core/errors.ts";
import { isObject, refuse } from "../fields.ts";
import type { ChatMessage, ChatToolCall, JsonObject } from "../../wire/shapes.ts";
import type { SourcedTool, ToolNamer } from "./tools.ts";


const TEXT_PARTS = new Set(["input_text", "output_text"]);
/** Text requests take text only (docs/api.md#rules, rule 7); these get 400 unsupported_content_type, not invalid_request. */
const MEDIA_PARTS = new Set(["input_image", "input_file", "input_audio", "input_video"]);
const ROLES = new Set(["user", "assistant", "system", "developer"]);

/** Tools that newer Codex (Responses Lite) sends inside `additional_tools` input items, not in `tools`. */
export function additionalTools(input: unknown): SourcedTool[] {
  if (!Array.isArray(input)) return [];
  const found: SourcedTool[] = [];
  input.forEach((item, i) => {
    if (!isObject(item) || item.type !== "additional_tools") return;
    if (!Array.isArray(item.tools)) refuse(`input[${i}].tools`, "must be an array");
    item.tools.forEach((tool, j) => found.push({ tool, path: `input[${i}].tools[${j}]` }));
  });
  return found;
}

export function inputToMessages(input: unknown, namer: ToolNamer): ChatMessage[] {
  if (typeof input === "string") return [{ role: "user", content: input }];
  if (!Array.isArray(input)) refuse("input", "must be a string or an array of input items");
  const out: ChatMessage[] = [];
  input.forEach((item, i) => {
    const path = `input[${i}]`;
    if (!isObject(item)) refuse(path, "must be an object");
    // `type` is optional on messages: an item with a role and no type is a message.
    const type = item.type ?? (item.role !== undefined ? "message" : undefined);
    switch (type) {
      case "message":
        out.push(message(item, path));
        return;
      case "function_call":
        addToolCall(out, {
          id: callId(item, path),
          type: "function",
          function: { name: callName(item, path, namer), arguments: callArguments(item.arguments, `${path}.arguments`) },
        });
        return;
      case "custom_tool_call": {
        if (typeof item.input !== "string") refuse(`${path}.input`, "must be a string");
        const args = JSON.stringify({ input: item.input });
        addToolCall(out, { id: callId(item, path), type: "function", function: { name: callName(item, path, namer), arguments: args } });
        return;
      }
      case "function_call_output":
      case "custom_tool_call_output":
        out.push({ role: "tool", tool_call_id: callId(item, path), content: toolOutput(item.output, `${path}.output`) });
        return;
      // Reasoning items are opaque model state a chat upstream cannot take; Codex replays them
      // (responses.md §7), so they are accepted and left out. additional_tools became tools.
      case "reasoning":
      case "additional_tools":
        return;
      case "item_reference":
        refuse(`${path}.type`, "item_reference needs stored responses, which this gateway does not keep; send the item itself");
      default:
        refuse(`${path}.type`, `input items of type '${String(type)}' are not supported`);
    }
  });
  return out;
}

function message(item: JsonObject, path: string): ChatMessage {
  const role = item.role;
  if (typeof role !== "string" || !ROLES.has(role)) refuse(`${path}.role`, "must be user, assistant, system or developer");
  const { texts, refusal } = contentTexts(item.content, role, `${path}.content`);
  if (role === "assistant") {
    // Parts of one assistant message are pieces of one answer: joined without a separator.
    const msg: ChatMessage = { role: "assistant", content: texts.join("") };
    if (refusal !== undefined) msg.refusal = refusal;
    return msg;
  }
  // `developer` → `system`: every chat server knows `system`, and OpenAI itself treats `system`
  // as `developer` on models that want the latter. One string, not parts: vLLM/NIM chat templates
  // crash on part arrays (CLIProxyAPI#3056, translation.md §1).
  return { role: role === "developer" ? "system" : (role as "user" | "system"), content: texts.join("\n") };
}

function contentTexts(content: unknown, role: string, path: string): { texts: string[]; refusal?: string } {
  if (typeof content === "string") return { texts: [content] };
  if (!Array.isArray(content)) refuse(path, "must be a string or an array of content parts");
  const texts: string[] = [];
  let refusal: string | undefined;
  content.forEach((part, j) => {
    const partPath = `${path}[${j}]`;
    if (!isObject(part) || typeof part.type !== "string") refuse(partPath, "must be an object with a type");
    if (TEXT_PARTS.has(part.type)) {
      if (typeof part.text !== "string") refuse(`${partPath}.text`, "must be a string");
      texts.push(part.text);
    } else if (part.type === "refusal" && role === "assistant") {
      if (typeof part.refusal !== "string") refuse(`${partPath}.refusal`, "must be a string");
      refusal = (refusal ?? "") + part.refusal;
    } else if (MEDIA_PARTS.has(part.type)) {
      throw unsupported(partPath, part.type);
    } else {
      refuse(`${partPath}.type`, `unknown content part type '${part.type}'`);
    }
  });
  return refusal === undefined ? { texts } : { texts, refusal };
}

const unsupported = (path: string, type: string) =>
  new GatewayError("unsupported_content_type", `${path}: ${type} content is not supported; this endpoint accepts text input only`);

function callId(item: JsonObject, path: string): string {
  if (typeof item.call_id !== "string" || item.call_id === "") refuse(`${path}.call_id`, "required");
  return item.call_id;
}

function callName(item: JsonObject, path: string, namer: ToolNamer): string {
  if (typeof item.name !== "string" || item.name === "") refuse(`${path}.name`, "required");
  const namespace = typeof item.namespace === "string" && item.namespace !== "" ? item.namespace : undefined;
  return namer.nameFor(namespace, item.name);
}

function callArguments(args: unknown, path: string): string {
  if (args == null || args === "") return "{}";
  if (typeof args !== "string") refuse(path, "must be a JSON string");
  return args;
}

/**
 * Consecutive calls become one assistant message; a call right after assistant text joins that
 * message, which is how Chat models emit "text, then tool calls" in one turn.
 */
function addToolCall(out: ChatMessage[], call: ChatToolCall): void {
  const last = out.at(-1);
  if (last?.role === "assistant" && last.refusal === undefined) {
    // In place: the message is this translation's own, and a copy per call made a history of n
    // calls cost n² (100,000 calls: 13 s of CPU before the balance was even checked).
    (last.tool_calls ??= []).push(call);
    if (last.content === "") last.content = null;
    return;
  }
  out.push({ role: "assistant", content: null, tool_calls: [call] });
}

function toolOutput(output: unknown, path: string): string {
  if (typeof output === "string") return output;
  if (!Array.isArray(output)) refuse(path, "must be a string or an array of content parts");
  const texts: string[] = [];
  output.forEach((part, j) => {
    const partPath = `${path}[${j}]`;
    if (!isObject(part) || typeof part.type !== "string") refuse(partPath, "must be an object with a type");
    if (TEXT_PARTS.has(part.type) && typeof part.text === "string") texts.push(part.text);
    else if (MEDIA_PARTS.has(part.type)) throw unsupported(partPath, part.type);
    else refuse(`${partPath}.type`, `unknown content part type '${part.type}'`);
  });
  return texts.join("\n");
}
