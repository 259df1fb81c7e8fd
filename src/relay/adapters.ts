import type { Model, Route } from "../catalog/catalog.ts";
import { chatRequestToMessages, messagesResponseToChat } from "../dialects/chat-via-messages.ts";
import { messagesRequestToChat, chatResponseToMessages } from "../dialects/messages-via-chat.ts";
import { MessagesViaChatMachine } from "../dialects/messages-via-chat-stream.ts";
import { ChatViaMessagesMachine } from "../dialects/chat-via-messages-stream.ts";
import { NativeChatMachine, NativeMessagesMachine } from "../dialects/native-stream.ts";
import type { StreamMachine } from "../dialects/stream-machine.ts";
import { billableChatUsage, billableMessagesUsage, usageFromChat, usageFromMessages } from "../dialects/usage.ts";
import type { ChatRequest, ChatResponse, JsonObject, MessagesRequest, MessagesResponse } from "../wire/shapes.ts";
import { nanoToUsd, type TokenUsage } from "../core/money.ts";
import type { Dialect } from "../dialects/dialect.ts";

// The four (client dialect, upstream dialect) pairs: the body each sends, the answer each returns, the
// stream machine each runs. The relay never branches on them.

export interface PairOptions {
  model: Model;
  estimatedInputTokens: number;
  costOf: (u: TokenUsage) => number;
}

/** The body sent on `route`: the client's own with the upstream model, or translated for the route's upstream. */
export function upstreamBody(client: Dialect, upstream: Dialect, body: JsonObject, route: Route): { body: JsonObject; dropped: string[] } {
  const upstreamModel = route.upstreamModel;
  // Set only when the provider's config names its field: then a native chat request's cap is sent under that name.
  const capField = route.provider.max_tokens_field;
  if (client === upstream) {
    const out: JsonObject = { ...body, model: upstreamModel };
    // Always ask for usage: without it there is nothing to bill (ccs#1574).
    if (upstream === "chat" && body.stream) out.stream_options = { ...(body.stream_options as JsonObject | undefined), include_usage: true };
    if (upstream === "chat" && capField) renameCap(out, capField);
    return { body: out, dropped: [] };
  }
  const caps = route.capabilities;
  if (client === "messages") return messagesRequestToChat(body as MessagesRequest, { upstreamModel, maxTokensField: capField ?? "max_tokens", caps });
  return chatRequestToMessages(body as ChatRequest, { upstreamModel, caps });
}

/** Older compatible servers know only max_tokens, some newer models only max_completion_tokens. */
function renameCap(body: JsonObject, field: "max_tokens" | "max_completion_tokens"): void {
  const cap = body.max_completion_tokens ?? body.max_tokens;
  delete body.max_completion_tokens;
  delete body.max_tokens;
  if (cap !== undefined) body[field] = cap;
}

/** A non-streamed upstream answer in the client's dialect, with its usage for billing. */
export function clientAnswer(client: Dialect, upstream: Dialect, answer: JsonObject, model: string): { body: JsonObject; usage: TokenUsage | null } {
  let body: JsonObject;
  // `answer` was parsed for this request alone: renamed in place, its keys keep their order.
  if (client === upstream) (body = answer).model = model;
  else if (client === "messages") body = chatResponseToMessages(answer as ChatResponse, { model });
  else body = messagesResponseToChat(answer as MessagesResponse, { model });
  // The upstream's own usage decides: without valid counts it is no usage, and the estimate is billed
  // (a translation would turn a missing usage into zeros, and zeros into a free answer).
  const billable = upstream === "messages" ? billableMessagesUsage(answer.usage) : billableChatUsage(answer.usage);
  const raw = body.usage as JsonObject | undefined;
  const usage = billable && raw ? (client === "messages" ? usageFromMessages(raw as never) : usageFromChat(raw as never)) : null;
  return { body, usage };
}

/** Adds usage.cost_usd to an answer the caller owns (in place: keys keep their order). */
export function withCost(body: JsonObject, costNano: number): JsonObject {
  const usage = body.usage;
  if (usage !== null && typeof usage === "object" && !Array.isArray(usage)) (usage as JsonObject).cost_usd = nanoToUsd(costNano);
  else body.usage = { cost_usd: nanoToUsd(costNano) };
  return body;
}

/** The stream machine of a (client, upstream) pair. */
export function streamMachine(client: Dialect, upstream: Dialect, includeUsage: boolean, o: PairOptions): StreamMachine {
  const opts = { model: o.model.id, includeUsage, costOf: o.costOf, estimatedInputTokens: o.estimatedInputTokens };
  if (client === upstream) return client === "messages" ? new NativeMessagesMachine(opts) : new NativeChatMachine(opts);
  return client === "messages" ? new MessagesViaChatMachine(opts) : new ChatViaMessagesMachine(opts);
}
