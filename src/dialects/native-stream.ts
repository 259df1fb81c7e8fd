// Native streams (client dialect = upstream dialect): events pass through byte for byte, except the
// gateway's additions: the public model name, usage.cost_usd on the final usage, and (Chat) the
// usage merged into the finish chunk when the client did not ask for include_usage, or our own
// estimate as that usage when the upstream sent none.

import { nanoToUsd, type TokenUsage } from "../core/money.ts";
import type { SseEvent } from "../wire/sse.ts";
import { encodeSse } from "../wire/sse.ts";
import { redactSecrets } from "../wire/scrub.ts";
import { plainChatText, plainText } from "./stream-scan.ts";
import { estimatedUsage, inputEstimate, mergeMessagesUsage } from "./stream-usage.ts";
import { billableChatUsage, billableMessagesUsage, chatUsage, messagesUsage, startMessagesUsage, usageFromChat } from "./usage.ts";
import { CountsOutput, parseObject as parse, type StreamMachine, type StreamOutcome } from "./stream-machine.ts";
import type { ChatUsage, JsonObject } from "../wire/shapes.ts";
import { isObject } from "./fields.ts";

/**
 * Renames the model in a chunk's JSON text instead of serialising the parsed chunk again (a text
 * chunk is parsed anyway; serialising it back cost as much again). `needle` and `replacement` are
 * the compact `"model":"…"` forms, quoted once per stream. Only when the needle occurs once and
 * before `"choices"`, where nothing nested can be: else null.
 */
function renameModel(data: string, needle: string, replacement: string): string | null {
  const at = data.indexOf(needle);
  if (at === -1 || data.indexOf(needle, at + needle.length) !== -1) return null;
  const choices = data.indexOf('"choices"');
  if (choices !== -1 && choices < at) return null;
  return data.slice(0, at) + replacement + data.slice(at + needle.length);
}

const COUNTS = ["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"];
const hasCount = (u: JsonObject): boolean => COUNTS.some((k) => typeof u[k] === "number") || isObject(u.cache_creation) || isObject(u.server_tool_use);

// ---------------------------------------------------------------- Messages

export interface NativeMessagesOptions {
  costOf: (u: TokenUsage) => number;
  /** Public model name written into message_start when the upstream's differs. */
  model?: string;
  /** Our reservation's input estimate, shown and billed when the upstream reports no usage. */
  estimatedInputTokens: number;
}

export class NativeMessagesMachine extends CountsOutput implements StreamMachine {
  private readonly opts: NativeMessagesOptions;
  private tokens: TokenUsage | null = null;
  /** Some count came from the upstream; until then a message_delta shows and bills our estimate. */
  private reported = false;
  /** The input count came from the upstream (message_start's, or a message_delta's). */
  private inputReported = false;
  /** The output count is the upstream's (a valid message_delta's), not our estimate. */
  private outputReported = false;
  private stop = false;
  private error = false;
  private costShown = false;

  constructor(opts: NativeMessagesOptions) {
    super();
    this.opts = opts;
  }

  get usage(): TokenUsage | null {
    return this.tokens;
  }
  get inputCounted(): boolean {
    return this.inputReported;
  }
  get outputCounted(): boolean {
    return this.outputReported;
  }
  get outcome(): StreamOutcome {
    return this.error ? "upstream_failed" : this.stop ? "completed" : "running";
  }
  /** message_stop is both the natural end and the last event. */
  get upstreamEnded(): boolean {
    return this.stop;
  }
  /** message_delta carries the final usage and its cost. */
  get priced(): boolean {
    return this.costShown;
  }

  /** The bytes to forward for one upstream event. */
  push(ev: SseEvent): string {
    switch (ev.event) {
      case "message_start":
        return this.messageStart(ev);
      case "message_delta":
        return this.messageDelta(ev);
      case "content_block_delta":
        this.countDelta(ev.data);
        break;
      case "message_stop":
        this.stop = true;
        break;
      case "error":
        this.error = true;
        // Passed on as sent, but for a provider credential the upstream may quote.
        return encodeSse(ev.event, redactSecrets(ev.data));
    }
    return encodeSse(ev.event, ev.data);
  }

  /** At EOF: nothing when the stream ended properly, else an error event (the SDK would hang on finalMessage). */
  end(): string {
    if (this.stop || this.error) return "";
    return this.fail("upstream_unavailable", "upstream stream ended before message_stop");
  }

  /** A mid-stream failure in the Messages shape (sse.md §3). */
  fail(type: string, message: string): string {
    if (this.stop || this.error) return "";
    this.error = true;
    return encodeSse("error", JSON.stringify({ type: "error", error: { type, message } }));
  }

  private messageStart(ev: SseEvent): string {
    const data = parse(ev.data);
    const msg = data?.message;
    if (!data || !isObject(msg)) return encodeSse(ev.event, ev.data);
    let changed = false;
    if (billableMessagesUsage(msg.usage)) {
      this.tokens = mergeMessagesUsage(null, msg.usage as JsonObject);
      this.reported = true;
      this.inputReported = true;
    } else if (!isObject(msg.usage) || hasCount(msg.usage)) {
      // The SDKs' stream helpers write into message.usage on every message_delta: it must exist. Counts
      // that are not counts (negative, strings) are replaced by ours, as if none had been sent. The SDK's
      // whole Usage, as a translated stream's message_start has it, so typed clients find every field.
      msg.usage = startMessagesUsage(this.opts.estimatedInputTokens, undefined);
      changed = true;
    }
    if (this.opts.model !== undefined && msg.model !== this.opts.model) {
      msg.model = this.opts.model;
      changed = true;
    }
    return encodeSse(ev.event, changed ? JSON.stringify(data) : ev.data);
  }

  private messageDelta(ev: SseEvent): string {
    const data = parse(ev.data);
    if (!data) return encodeSse(ev.event, ev.data);
    const usage: JsonObject = isObject(data.usage) ? data.usage : {};
    const valid = billableMessagesUsage(usage, ["output_tokens"]);
    if (valid) this.reported = true;
    this.outputReported = valid;
    if (valid && typeof usage.input_tokens === "number") this.inputReported = true;
    // Onto message_start's counts; when it had none, onto our input estimate (absent is not zero).
    if (this.reported && valid) this.tokens = mergeMessagesUsage(this.tokens ?? inputEstimate(this.opts.estimatedInputTokens), usage);
    else if (this.reported) {
      // Input came from message_start; an output count that is not one is replaced by our estimate.
      this.tokens = { ...this.tokens!, output: estimatedUsage(0, this.out).output };
      Object.assign(usage, messagesUsage(this.tokens));
    } else {
      // A compatible server that counts nothing: the client is shown, and pays, our own count.
      this.tokens = estimatedUsage(this.opts.estimatedInputTokens, this.out);
      Object.assign(usage, messagesUsage(this.tokens));
    }
    // Cost of the complete usage so far, not of this event's keys alone: message_delta may omit
    // the input counts that message_start carried.
    usage.cost_usd = nanoToUsd(this.opts.costOf(this.tokens));
    data.usage = usage;
    this.costShown = true;
    return encodeSse(ev.event, JSON.stringify(data));
  }

  private countDelta(text: string): void {
    const plain = plainText(text);
    if (plain !== null) {
      this.out.add(plain);
      return;
    }
    const data = parse(text);
    const d = data?.delta;
    if (!isObject(d)) return;
    const piece = d.text ?? d.thinking ?? d.partial_json;
    if (typeof piece === "string") this.out.add(piece);
  }
}

// ---------------------------------------------------------------- Chat Completions

export interface NativeChatOptions {
  /** Public model name; each chunk's `model` is rewritten when it differs. */
  model: string;
  /** The client set stream_options.include_usage (the gateway always asks the upstream for it). */
  includeUsage: boolean;
  costOf: (u: TokenUsage) => number;
  /** Our reservation's input estimate, shown when the upstream ignores include_usage. */
  estimatedInputTokens: number;
}

const DONE = "data: [DONE]\n\n";

export class NativeChatMachine extends CountsOutput implements StreamMachine {
  private readonly opts: NativeChatOptions;
  private tokens: TokenUsage | null = null;
  private lastUsage: JsonObject | null = null;
  /** Without include_usage: the finish chunk, and anything after it, until the usage arrives. */
  private heldFinish: JsonObject | null = null;
  private heldAfter: string[] = [];
  private finish = false;
  /** The upstream's [DONE] was pushed. */
  private last = false;
  private doneSent = false;
  private error = false;
  private costShown = false;
  /** `tokens` are the upstream's usage, not the estimate of a stream that sent none. */
  private counted = false;
  /** id and created of the upstream's chunks, repeated by a usage chunk of our own. */
  private ident: { id?: unknown; created?: unknown } | null = null;
  /** The model the upstream's chunks name, from the last parsed one. */
  private upstreamModel: string | null = null;
  /** The service tier the upstream's chunks report: it prices the answer. */
  private serviceTier: unknown;

  /** `"model":"<public name>"`, as a chunk that needs no rename carries it. */
  private readonly ownModel: string;
  /** `"model":"<upstream's name>"`: every chunk of a stream renames the same model, so it is quoted once. */
  private needle: { from: string; quoted: string } | null = null;

  constructor(opts: NativeChatOptions) {
    super();
    this.opts = opts;
    this.ownModel = `"model":${JSON.stringify(opts.model)}`;
  }

  /** The upstream's usage so far; at the end of a stream without any, the estimate it was shown. */
  get usage(): TokenUsage | null {
    return this.tokens;
  }
  get inputCounted(): boolean {
    return this.counted;
  }
  /** A finish_reason is the natural end; the usage chunk and [DONE] may still follow it. */
  get outcome(): StreamOutcome {
    return this.error ? "upstream_failed" : this.finish ? "completed" : "running";
  }
  get upstreamEnded(): boolean {
    return this.last;
  }
  get priced(): boolean {
    return this.costShown;
  }
  get outputCounted(): boolean {
    return this.counted;
  }

  push(ev: SseEvent): string {
    if (ev.data === "[DONE]") {
      this.last = true;
      return this.finishWithDone();
    }
    if (ev.event === "error") {
      this.error = true;
      return this.flush() + encodeSse(ev.event, redactSecrets(ev.data));
    }
    const plain = this.plainChunk(ev);
    if (plain !== null) return plain;
    const chunk = parse(ev.data);
    if (!chunk) return this.passOrHold(encodeSse(ev.event, ev.data));
    if (chunk.error) {
      this.error = true;
      return this.flush() + encodeSse(ev.event, redactSecrets(ev.data));
    }
    this.ident ??= { id: chunk.id, created: chunk.created };
    if (typeof chunk.model === "string") this.upstreamModel = chunk.model;
    if (typeof chunk.service_tier === "string") this.serviceTier = chunk.service_tier;
    // The upstream's bytes with only the model renamed, when that can be done in the text; null: serialise the chunk.
    let renamed: string | null = ev.data;
    if (typeof chunk.model === "string" && chunk.model !== this.opts.model) {
      renamed = this.renamed(ev.data, chunk.model);
      chunk.model = this.opts.model;
    }
    const choices = Array.isArray(chunk.choices) ? (chunk.choices as unknown[]) : null;
    if (isObject(chunk.usage) && !billableChatUsage(chunk.usage)) {
      // Counts that are not counts: as if the upstream sent none (our estimate is shown and billed at the end).
      delete chunk.usage;
      renamed = null;
    }
    const hasUsage = isObject(chunk.usage);
    if (hasUsage) {
      this.tokens = usageFromChat(chunk.usage as ChatUsage, this.serviceTier);
      this.lastUsage = chunk.usage as JsonObject;
      this.counted = true;
    }
    let finishHere = false;
    for (const c of choices ?? []) {
      if (!isObject(c)) continue;
      if (c.finish_reason) finishHere = true;
      this.countDelta(c.delta);
    }

    if (this.opts.includeUsage) {
      if (finishHere) this.finish = true;
      if (hasUsage) {
        (chunk.usage as JsonObject).cost_usd = nanoToUsd(this.opts.costOf(this.tokens!));
        this.costShown = true;
        renamed = null;
      }
      return encodeSse(ev.event, renamed ?? JSON.stringify(chunk));
    }

    // The client did not ask for usage, so the separate choices:[] chunk would crash code that reads
    // choices[0] unguarded (chat-completions.md §4): its usage rides on the finish chunk instead.
    if (hasUsage && choices !== null && choices.length === 0) {
      return this.heldFinish ? this.flush() : "";
    }
    if (finishHere && !this.finish) {
      this.finish = true;
      this.heldFinish = chunk;
      return "";
    }
    return this.passOrHold(encodeSse(ev.event, renamed ?? JSON.stringify(chunk)));
  }

  /**
   * A chunk of text alone (stream-scan.ts), once the first chunk has been parsed: counted and
   * forwarded without a parse, the model renamed in its text. null: parse it.
   */
  private plainChunk(ev: SseEvent): string | null {
    if (!this.ident || this.upstreamModel === null) return null;
    const text = plainChatText(ev.data);
    if (text === null) return null;
    const { model } = this.opts;
    const data = this.upstreamModel === model ? (ev.data.includes(this.ownModel) ? ev.data : null) : this.renamed(ev.data, this.upstreamModel);
    if (data === null) return null;
    this.out.add(text);
    const out = encodeSse(ev.event, data);
    return this.opts.includeUsage ? out : this.passOrHold(out);
  }

  /** At EOF. Flushes a held finish chunk; adds [DONE] for a complete answer, an error chunk for a cut one. */
  end(): string {
    if (this.doneSent || this.error) return this.flush();
    if (this.finish) return this.finishWithDone();
    return this.fail("upstream_unavailable", "upstream stream ended before a finish_reason");
  }

  /** A mid-stream failure in the Chat shape: an `error` chunk, no [DONE]. */
  fail(type: string, message: string): string {
    if (this.doneSent || this.error) return "";
    this.error = true;
    return this.flush() + encodeSse(undefined, JSON.stringify({ error: { message, type, code: type } }));
  }

  private renamed(data: string, from: string): string | null {
    if (this.needle?.from !== from) this.needle = { from, quoted: `"model":${JSON.stringify(from)}` };
    return renameModel(data, this.needle.quoted, this.ownModel);
  }

  /** [DONE], the upstream's or ours at EOF: the final usage goes out first. */
  private finishWithDone(): string {
    const out = this.estimateMissingUsage() + this.flush();
    this.doneSent = true;
    return out + DONE;
  }

  /**
   * A finished answer without usage (the upstream ignored include_usage): our estimate becomes the
   * usage, placed where the upstream's would be: merged into the held finish chunk by flush(), or
   * in a choices:[] chunk when the client asked for include_usage. Same id, so the SDK merges it.
   */
  private estimateMissingUsage(): string {
    if (!this.finish || this.tokens || this.error) return "";
    this.tokens = estimatedUsage(this.opts.estimatedInputTokens, this.out);
    this.lastUsage = chatUsage(this.tokens);
    if (!this.opts.includeUsage) return "";
    const usage = { ...this.lastUsage, cost_usd: nanoToUsd(this.opts.costOf(this.tokens)) };
    this.costShown = true;
    const { id, created } = this.ident ?? {};
    return encodeSse(undefined, JSON.stringify({ id, object: "chat.completion.chunk", created, model: this.opts.model, choices: [], usage }));
  }

  private passOrHold(bytes: string): string {
    if (!this.heldFinish) return bytes;
    this.heldAfter.push(bytes);
    return "";
  }

  /** Emits the held finish chunk with the latest usage (and its cost) merged in, then what followed it. */
  private flush(): string {
    const held = this.heldFinish;
    if (!held) return "";
    this.heldFinish = null;
    if (this.lastUsage && this.tokens) {
      held.usage = { ...this.lastUsage, cost_usd: nanoToUsd(this.opts.costOf(this.tokens)) };
      this.costShown = true;
    }
    const out = encodeSse(undefined, JSON.stringify(held)) + this.heldAfter.join("");
    this.heldAfter = [];
    return out;
  }

  private countDelta(delta: unknown): void {
    if (!isObject(delta)) return;
    if (typeof delta.content === "string") this.out.add(delta.content);
    if (typeof delta.reasoning_content === "string") this.out.add(delta.reasoning_content);
    else if (typeof delta.reasoning === "string") this.out.add(delta.reasoning);
    if (Array.isArray(delta.tool_calls)) {
      for (const tc of delta.tool_calls) {
        const args = isObject(tc) && isObject(tc.function) ? tc.function.arguments : undefined;
        if (typeof args === "string") this.out.add(args);
      }
    }
  }
}
