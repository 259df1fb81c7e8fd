import type { Model, Route } from "../catalog/catalog.ts";
import { chatRequestToMessages, messagesResponseToChat } from "../dialects/chat-via-messages.ts";
import { messagesRequestToChat, chatResponseToMessages } from "../dialects/messages-via-chat.ts";
import { MessagesViaChatStream } from "../dialects/messages-via-chat-stream.ts";
import { ChatViaMessagesStream, type ChatStreamItem } from "../dialects/chat-via-messages-stream.ts";
import { NativeChatStream, NativeMessagesStream } from "../dialects/native-stream.ts";
import { billableChatUsage, billableMessagesUsage, usageFromChat, usageFromMessages } from "../dialects/usage.ts";
import type { ChatRequest, ChatResponse, JsonObject, MessagesEvent, MessagesRequest, MessagesResponse } from "../wire/shapes.ts";
import { nanoToUsd, type TokenUsage } from "../core/money.ts";
import { encodeSse, type SseEvent } from "../wire/sse.ts";
import type { Dialect } from "../dialects/dialect.ts";

// The four (client dialect, upstream dialect) pairs behind one shape, so the relay never branches on them.

export interface StreamAdapter {
  /** Text to send to the client for one upstream event. */
  push(ev: SseEvent): string;
  /** Upstream ended ([DONE] or EOF). */
  done(): string;
  /** Upstream failed after the first byte: the dialect's own error event. */
  fail(type: string, message: string): string;
  readonly usage: TokenUsage | null;
  readonly outputChars: number;
  /** The upstream signalled an error inside the stream. */
  readonly upstreamError: boolean;
  /** The upstream reached its natural end (finish reason / message_stop), not just EOF. */
  readonly complete: boolean;
}

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

const parse = (data: string): JsonObject | null => {
  try {
    return JSON.parse(data) as JsonObject;
  } catch {
    return null;
  }
};

const encodeMessages = (events: MessagesEvent[]) => events.map((e) => encodeSse(e.event, JSON.stringify(e.data))).join("");
const encodeChat = (items: ChatStreamItem[]) => items.map((i) => encodeSse(undefined, i === "[DONE]" ? "[DONE]" : JSON.stringify(i))).join("");

interface StreamState {
  readonly usage: TokenUsage | null;
  readonly outputChars: number;
}

function adapt(
  s: StreamState,
  f: { push(ev: SseEvent): string; done(): string; fail(t: string, m: string): string; error(): boolean; complete(): boolean },
): StreamAdapter {
  return {
    push: f.push,
    done: f.done,
    fail: f.fail,
    get usage() {
      return s.usage;
    },
    get outputChars() {
      return s.outputChars;
    },
    get upstreamError() {
      return f.error();
    },
    get complete() {
      return f.complete();
    },
  };
}

const errorOf = (data: JsonObject): { type: string; message: string } => {
  const e = (data.error ?? data) as { type?: string; message?: string };
  return { type: e.type ?? "api_error", message: e.message ?? "Upstream error" };
};

export function streamAdapter(client: Dialect, upstream: Dialect, includeUsage: boolean, o: PairOptions): StreamAdapter {
  const model = o.model.id;
  const counts = { costOf: o.costOf, estimatedInputTokens: o.estimatedInputTokens };
  if (client === "messages" && upstream === "messages") {
    const s = new NativeMessagesStream({ model, ...counts });
    return adapt(s, { push: (ev) => s.push(ev), done: () => s.done(), fail: (t, m) => s.fail(t, m), error: () => s.sawError, complete: () => s.sawStop });
  }
  if (client === "chat" && upstream === "chat") {
    const s = new NativeChatStream({ model, includeUsage, ...counts });
    return adapt(s, { push: (ev) => s.push(ev), done: () => s.done(), fail: (t, m) => s.fail(t, m), error: () => s.sawError, complete: () => s.sawFinish });
  }
  let error = false;
  let end = false;
  if (client === "messages") {
    const s = new MessagesViaChatStream({ model, ...counts });
    return adapt(s, {
      push(ev) {
        if (ev.data === "[DONE]") return "";
        const chunk = parse(ev.data);
        if (!chunk) return "";
        if (ev.event === "error" || chunk.error) {
          error = true;
          const e = errorOf(chunk);
          return encodeMessages(s.fail(e.type, e.message));
        }
        const choices = chunk.choices as { finish_reason?: string | null }[] | undefined;
        if (choices?.some((c) => c.finish_reason)) end = true;
        return encodeMessages(s.push(chunk as never));
      },
      done: () => encodeMessages(s.done()),
      fail: (t, m) => encodeMessages(s.fail(t, m)),
      error: () => error,
      complete: () => end,
    });
  }
  const s = new ChatViaMessagesStream({ model, includeUsage, ...counts });
  return adapt(s, {
    push(ev) {
      const data = parse(ev.data);
      if (!data || !ev.event) return "";
      if (ev.event === "error") {
        error = true;
        const e = errorOf(data);
        return encodeChat(s.fail(e.type, e.message));
      }
      if (ev.event === "message_stop") end = true;
      return encodeChat(s.push({ event: ev.event, data }));
    },
    done: () => encodeChat(s.done()),
    fail: (t, m) => encodeChat(s.fail(t, m)),
    error: () => error,
    complete: () => end,
  });
}
