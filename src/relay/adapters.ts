import type { Model, Route } from "../catalog/catalog.ts";
import { chatRequestToMessages } from "../dialects/chat-via-messages.ts";
import { messagesResponseToChat } from "../dialects/chat-via-messages-response.ts";
import { messagesRequestToChat, chatResponseToMessages } from "../dialects/messages-via-chat.ts";
import { MessagesViaChatMachine } from "../dialects/messages-via-chat-stream.ts";
import { ChatViaMessagesMachine } from "../dialects/chat-via-messages-stream.ts";
import { NativeChatMachine, NativeMessagesMachine } from "../dialects/native-stream.ts";
import type { StreamMachine } from "../dialects/stream-machine.ts";
import { billableChatUsage, billableMessagesUsage, usageFromChat, usageFromMessages } from "../dialects/usage.ts";
import type { ChatRequest, ChatResponse, ChatUsage, JsonObject, MessagesRequest, MessagesResponse, MessagesUsage } from "../wire/shapes.ts";
import { nanoToUsd, type TokenUsage } from "../core/money.ts";
import { GatewayError } from "../core/errors.ts";
import type { TextSize } from "../ledger/estimate.ts";
import type { Dialect } from "../dialects/dialect.ts";
import { spliceModel } from "./splice.ts";
import { BODY_LIMIT_BYTES } from "../wire/body-limit.ts";
import { MemberText } from "../wire/member-text.ts";

// The four (client dialect, upstream dialect) pairs: the body each sends, the answer each returns, the
// stream machine each runs. The relay never branches on them.

export interface PairOptions {
  model: Model;
  estimatedInputTokens: number;
  costOf: (u: TokenUsage) => number;
}

export interface UpstreamBody {
  body: JsonObject;
  /** `body` already serialised: the client's own bytes with the model spliced in (splice.ts), or a translation's text */
  bytes?: Blob | Uint8Array | string;
  /** A translation's size as sent: what the estimator learns from (relay/charge.ts post) */
  size?: TextSize;
  /** Shared and never changed when nothing was dropped (NOTHING_DROPPED). */
  dropped: readonly string[];
}

/** No dropped field: one list for every request that drops none. */
export const NOTHING_DROPPED: readonly string[] = Object.freeze([]);


/**
 * A translated body serialised once, as text, with its size; over the limit (or too large to build at
 * all) it is the request's 413. The text goes to fetch as is: fetch encodes it once, where encoding it
 * here and wrapping the bytes in a Blob copied a 100 KB turn twice more.
 */
export function serialisedText(body: JsonObject): { text: string; size: TextSize } {
  const { text, bytes } = withinLimit(() => {
    const text = JSON.stringify(body);
    // JSON.stringify escapes lone surrogates, so this is the length fetch's UTF-8 encoding sends.
    return { text, bytes: Buffer.byteLength(text, "utf8") };
  });
  return { text, size: { bytes, chars: text.length } };
}

/**
 * serialisedText's check and size for a translation the relay may send on several routes, kept
 * member by member (wire/member-text.ts): each route's body is then its members joined again.
 */
export function serialisedMembers(body: JsonObject): { members: MemberText; size: TextSize } {
  const members = withinLimit(() => MemberText.of(body));
  return { members, size: { bytes: members.bytes, chars: members.chars } };
}

/** A translation built by `build`, of `bytes` UTF-8 bytes, or the request's 413 past the limit or the engine's own. */
function withinLimit<T extends { bytes: number }>(build: () => T): T {
  let built: T;
  try {
    built = build();
  } catch (e) {
    // A string past the engine's own limits: the request's size, never the route's health.
    if (e instanceof RangeError) throw translatedTooLarge(null);
    throw e;
  }
  if (built.bytes > BODY_LIMIT_BYTES) throw translatedTooLarge(built.bytes);
  return built;
}

const translatedTooLarge = (bytes: number | null) =>
  new GatewayError(
    "request_too_large",
    `Translated for its upstream, this request's body would be ${bytes === null ? "too large to build" : `${(bytes / 1024 / 1024).toFixed(1)} MiB`}, ` +
      `over the ${BODY_LIMIT_BYTES / 1024 / 1024} MiB limit on what the gateway sends upstream.`,
  );

/**
 * The body sent on `route`: the client's own with the upstream model, or translated for the route's
 * upstream. `raw` is the client's bytes when `body` is their parse: a native body that only changes
 * its model (and may gain stream_options) is then sent as those bytes, spliced. Or it is `body`'s
 * own members, when `body` is a translation already serialised (the Responses adapter's Chat body):
 * their texts are joined again into what the splice, or else JSON.stringify, would have sent.
 */
export function upstreamBody(client: Dialect, upstream: Dialect, body: JsonObject, route: Route, raw?: Uint8Array | MemberText): UpstreamBody {
  const upstreamModel = route.upstreamModel;
  // Set only when the provider's config names its field: then a native chat request's cap is sent under that name.
  const capField = route.provider.max_tokens_field;
  if (client === upstream) {
    const out: JsonObject = { ...body, model: upstreamModel };
    // Always ask for usage: without it there is nothing to bill (ccs#1574).
    const askUsage = upstream === "chat" && body.stream;
    if (askUsage) out.stream_options = { ...(body.stream_options as JsonObject | undefined), include_usage: true };
    if (upstream === "chat" && capField) renameCap(out, capField);
    const append = askUsage && !("stream_options" in body);
    if (raw instanceof MemberText) {
      // The splice keeps the body's order (a cap of the route's name stays where it was); otherwise `out`'s.
      const sent = spliceable(body, upstream, capField) ? { ...body, model: upstreamModel, ...(append ? USAGE_OBJECT : undefined) } : out;
      return { body: out, bytes: raw.text(sent), dropped: NOTHING_DROPPED };
    }
    const bytes = raw && spliceable(body, upstream, capField) ? spliceModel(raw, body, upstreamModel, append ? USAGE_MEMBER : "") : null;
    return bytes ? { body: out, bytes, dropped: NOTHING_DROPPED } : { body: out, dropped: NOTHING_DROPPED };
  }
  const caps = route.capabilities;
  const out =
    client === "messages"
      ? messagesRequestToChat(body as MessagesRequest, { upstreamModel, maxTokensField: capField ?? "max_tokens", caps })
      : chatRequestToMessages(body as ChatRequest, { upstreamModel, caps });
  const sent = serialisedText(out.body);
  return { body: out.body, bytes: sent.text, size: sent.size, dropped: out.dropped };
}

const USAGE_MEMBER = ',"stream_options":{"include_usage":true}';
const USAGE_OBJECT = { stream_options: { include_usage: true } };

/**
 * Whether the client's bytes, with only their model replaced (and USAGE_MEMBER appended when the
 * body has no stream_options), mean the body built above: the cap already under the field the route
 * wants, usage already asked for or not asked about at all.
 */
function spliceable(body: JsonObject, upstream: Dialect, capField: "max_tokens" | "max_completion_tokens" | undefined): boolean {
  if (upstream !== "chat") return true;
  if (capField && (capField === "max_tokens" ? "max_completion_tokens" : "max_tokens") in body) return false;
  if (!body.stream || !("stream_options" in body)) return true;
  const so = body.stream_options;
  return so !== null && typeof so === "object" && !Array.isArray(so) && (so as JsonObject).include_usage === true;
}

/** Older compatible servers know only max_tokens, some newer models only max_completion_tokens. */
function renameCap(body: JsonObject, field: "max_tokens" | "max_completion_tokens"): void {
  const cap = body.max_completion_tokens ?? body.max_tokens;
  delete body.max_completion_tokens;
  delete body.max_tokens;
  if (cap !== undefined) body[field] = cap;
}

/**
 * A non-streamed upstream answer's usage for billing. The upstream's own usage decides, read in its
 * own dialect before any translation (a class the client's dialect cannot say is still billed):
 * without valid counts it is no usage, and the estimate is billed (a translation would turn a missing
 * usage into zeros, and zeros into a free answer). Read before `clientBody`, which may take the answer apart.
 */
export function answerUsage(upstream: Dialect, answer: JsonObject): TokenUsage | null {
  if (upstream === "messages") return billableMessagesUsage(answer.usage) ? usageFromMessages(answer.usage as MessagesUsage) : null;
  return billableChatUsage(answer.usage) ? usageFromChat(answer.usage as ChatUsage, answer.service_tier) : null;
}

/**
 * A non-streamed upstream answer in the client's dialect, under the client's model name. Apart from
 * `answerUsage`, so that no object is built per answer only to carry the two.
 */
export function clientBody(client: Dialect, upstream: Dialect, answer: JsonObject, model: string): JsonObject {
  // `answer` was parsed for this request alone: renamed in place, its keys keep their order.
  if (client === upstream) {
    answer.model = model;
    return answer;
  }
  if (client === "messages") return chatResponseToMessages(answer as ChatResponse, { model });
  return messagesResponseToChat(answer as MessagesResponse, { model });
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
