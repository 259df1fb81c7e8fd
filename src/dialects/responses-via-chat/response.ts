// A Chat Completions answer → the Responses `response` object (responses.md §4, §7).

import type { ChatResponse, JsonObject } from "../../wire/shapes.ts";
import { newCallId, newCustomCallId, newFunctionCallId, newMessageId, newReasoningId, newResponseId } from "./ids.ts";
import { callItem, finishOf, logprobsOf, messageItem, outputTextPart, reasoningItem, reasoningText, refusalPart, responseShell, type ResponseContext } from "./items.ts";
import { unwrapCustomInput } from "./tools.ts";
import type { ToolNameMap, ToolTarget } from "./types.ts";
import { responsesUsage } from "./usage.ts";

export interface ChatToResponsesContext extends ResponseContext {
  toolNames: ToolNameMap;
  /** The settled cost of the request in USD, shown as usage.cost_usd. */
  costUsd: number;
  responseId?: string;
}

export function chatResponseToResponses(chat: ChatResponse, ctx: ChatToResponsesContext): JsonObject {
  const choice = chat.choices?.[0];
  const message = choice?.message;
  const finish = finishOf(choice?.finish_reason);
  const output: JsonObject[] = [];

  const reasoning = reasoningText(message);
  if (reasoning) output.push(reasoningItem(newReasoningId(), reasoning, "completed"));

  const parts: JsonObject[] = [];
  const text = contentText(message?.content);
  if (text) parts.push(outputTextPart(text, logprobsOf(choice?.logprobs)));
  if (typeof message?.refusal === "string" && message.refusal !== "") parts.push(refusalPart(message.refusal));
  // No empty message items: the stream never opens one without content, and both must agree.
  if (parts.length > 0) output.push(messageItem(newMessageId(), parts, "completed"));

  const callIds = new Set<string>();
  for (const call of message?.tool_calls ?? []) {
    const name = call.function?.name ?? "";
    const target: ToolTarget = ctx.toolNames.get(name) ?? { name, kind: "function" };
    // The SDK rejects a response whose call_ids repeat (or are empty): synthesize those.
    const callId = call.id && !callIds.has(call.id) ? call.id : newCallId();
    callIds.add(callId);
    const args = call.function?.arguments || "{}";
    const payload = target.kind === "custom" ? unwrapCustomInput(args) : args;
    const id = target.kind === "custom" ? newCustomCallId() : newFunctionCallId();
    output.push(callItem(id, callId, target, payload, "completed"));
  }
  // A length or filter stop cuts the item being written, which is the last one.
  const last = output.at(-1);
  if (finish.status === "incomplete" && last) last.status = "incomplete";

  const now = Math.floor(Date.now() / 1000);
  const createdAt = typeof chat.created === "number" ? chat.created : now;
  return {
    ...responseShell(ctx.responseId ?? newResponseId(), createdAt, ctx),
    status: finish.status,
    completed_at: now,
    incomplete_details: finish.incomplete_details,
    output,
    // No upstream usage: no numbers are made up (the ledger settles on them).
    usage: chat.usage ? responsesUsage(chat.usage, ctx.costUsd) : null,
  };
}

/** Some OpenAI-compatible servers answer with text parts instead of a string. */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((p) => (typeof p === "object" && p !== null && typeof p.text === "string" ? p.text : "")).join("");
}
