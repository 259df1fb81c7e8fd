// Chat Completions client → Messages upstream: the non-streamed response back (translation.md §3).
import { toolIdFromMessages } from "./tool-ids.ts";
import { chatUsage, stopToFinish, thinkingTokens, usageFromMessages } from "./usage.ts";
import type { ChatResponse, ChatToolCall, MessagesResponse } from "../wire/shapes.ts";

/** A Messages response from the upstream as the Chat completion the client expects. */
export function messagesResponseToChat(res: MessagesResponse, opts: { model: string; created?: number }): ChatResponse {
  const blocks = Array.isArray(res.content) ? res.content : [];
  const text = blocks.filter((b) => b.type === "text").map((b) => String(b.text ?? "")).join("");
  const thought = blocks.filter((b) => b.type === "thinking").map((b) => String(b.thinking ?? "")).join("");
  const calls = blocks
    .filter((b) => b.type === "tool_use")
    .map((b): ChatToolCall => ({
      id: toolIdFromMessages(String(b.id ?? "")),
      type: "function",
      function: { name: String(b.name ?? ""), arguments: JSON.stringify(b.input ?? {}) },
    }));
  const message: ChatResponse["choices"][number]["message"] = { role: "assistant", content: text === "" ? null : text, refusal: null };
  if (calls.length > 0) message.tool_calls = calls;
  if (thought !== "") message.reasoning_content = thought;
  const reasoningTokens = res.usage ? thinkingTokens(res.usage) : undefined;
  return {
    // "msg_X" → "chatcmpl-X" (one-api).
    id: `chatcmpl-${String(res.id ?? "").replace(/^msg_/, "")}`,
    object: "chat.completion",
    created: opts.created ?? Math.floor(Date.now() / 1000),
    model: opts.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: stopToFinish(res.stop_reason) ?? "stop" }],
    usage: chatUsage(usageFromMessages(res.usage ?? {}), reasoningTokens === undefined ? {} : { reasoningTokens }),
  };
}
