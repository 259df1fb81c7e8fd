// Messages SSE events → Chat Completions chunks (protocols/translation.md §5). The translator is a
// state machine fed one parsed event at a time; ChatViaMessagesMachine puts it behind the
// StreamMachine contract, encoding each chunk as `data: <json>` and "[DONE]" as `data: [DONE]`.

import { nanoToUsd, type TokenUsage } from "../core/money.ts";
import { StreamTally, estimatedUsage, inputEstimate, mergeMessagesUsage } from "./stream-usage.ts";
import { isObject } from "./fields.ts";
import { toolIdFromMessages } from "./tool-ids.ts";
import { billableMessagesUsage, chatUsage, stopToFinish } from "./usage.ts";
import type { ChatChunk, ChatUsage, JsonObject, MessagesEvent } from "../wire/shapes.ts";
import { redactSecrets } from "../wire/scrub.ts";
import { encodeSse, type SseEvent } from "../wire/sse.ts";
import { errorOf, parseObject, TranslatingMachine } from "./stream-machine.ts";

export interface ChatViaMessagesStreamOptions {
  /** Public model name shown to the client. */
  model: string;
  /** The client set stream_options.include_usage. */
  includeUsage: boolean;
  /** Nano-dollars for a usage. */
  costOf: (u: TokenUsage) => number;
  /** Our reservation's input estimate, shown when the upstream reports no usage. */
  estimatedInputTokens: number;
  /** Unix seconds for `created`; defaults to now (fixed here so a replay is exact). */
  created?: number;
}

/** What openai-node throws on mid-stream (chat-completions.md §4): a chunk whose `error` is truthy. */
export interface ChatErrorChunk {
  error: { message: string; type: string; code: string };
}

export type ChatStreamItem = ChatChunk | ChatErrorChunk | "[DONE]";

type Delta = ChatChunk["choices"][number]["delta"];

export class ChatViaMessagesStream extends StreamTally {
  private readonly opts: ChatViaMessagesStreamOptions;
  private readonly created: number;
  private id = "";
  private started = false;
  private finishSent = false;
  /** Messages block index → Chat tool_calls index. T counts tool blocks only (litellm#5231). */
  private readonly toolIndex = new Map<number, { t: number; bytes: number; input: unknown }>();
  private toolCount = 0;
  private thinkingTokens: number | undefined = undefined;
  private finalUsage: ChatUsage | null = null;

  constructor(opts: ChatViaMessagesStreamOptions) {
    super();
    this.opts = opts;
    this.created = opts.created ?? Math.floor(Date.now() / 1000);
  }

  push(ev: MessagesEvent): ChatStreamItem[] {
    if (this.ended) return [];
    const data = ev.data ?? {};
    const name = ev.event || (typeof data.type === "string" ? data.type : "");
    switch (name) {
      case "message_start":
        return this.messageStart(data);
      case "content_block_start":
        return this.blockStart(data);
      case "content_block_delta":
        return this.blockDelta(data);
      case "content_block_stop":
        return this.blockStop(data);
      case "message_delta":
        return this.messageDelta(data);
      case "message_stop":
        this.complete = true;
        return this.messageStop();
      case "error": {
        const err = (data.error ?? {}) as JsonObject;
        return this.fail(typeof err.type === "string" ? err.type : "api_error", typeof err.message === "string" ? err.message : "upstream error");
      }
      default:
        return []; // ping and event names we do not know
    }
  }

  /** At EOF. After message_delta the answer is whole; before it the upstream was cut off. */
  done(): ChatStreamItem[] {
    if (this.ended) return [];
    if (!this.finishSent) return this.fail("upstream_unavailable", "upstream stream ended before message_delta");
    return this.messageStop();
  }

  /** Mid-stream error: one `{"error":…}` chunk and no [DONE]. */
  fail(type: string, message: string): ChatStreamItem[] {
    if (this.ended) return [];
    this.ended = true;
    this.failedFlag = true;
    // The message may be the upstream's: a provider credential it quotes never reaches the client.
    return [{ error: { message: redactSecrets(message), type, code: type } }];
  }

  private chunk(delta: Delta, finish: string | null = null): ChatChunk {
    return {
      id: this.id,
      object: "chat.completion.chunk",
      created: this.created,
      model: this.opts.model,
      choices: [{ index: 0, delta, finish_reason: finish }],
    };
  }

  private ensureStarted(out: ChatStreamItem[]): void {
    if (this.started) return;
    this.started = true;
    if (!this.id) this.id = `chatcmpl-${crypto.randomUUID().replaceAll("-", "")}`;
    out.push(this.chunk({ role: "assistant", content: "" }));
  }

  private messageStart(data: JsonObject): ChatStreamItem[] {
    const msg = (data.message ?? {}) as JsonObject;
    if (typeof msg.id === "string" && msg.id && !this.started) this.id = `chatcmpl-${msg.id.replace(/^msg_/, "")}`;
    if (billableMessagesUsage(msg.usage)) {
      this.realUsage = mergeMessagesUsage(null, msg.usage as JsonObject);
      this.inputReported = true;
    }
    const out: ChatStreamItem[] = [];
    this.ensureStarted(out);
    return out;
  }

  private blockStart(data: JsonObject): ChatStreamItem[] {
    const out: ChatStreamItem[] = [];
    this.ensureStarted(out);
    const block = (data.content_block ?? {}) as JsonObject;
    const index = typeof data.index === "number" ? data.index : -1;
    if (block.type === "tool_use") {
      const t = this.toolCount++;
      this.toolIndex.set(index, { t, bytes: 0, input: block.input });
      const name = typeof block.name === "string" ? block.name : "";
      out.push(this.chunk({ tool_calls: [{ index: t, id: toolIdFromMessages(String(block.id ?? "")), type: "function", function: { name, arguments: "" } }] }));
    } else if (block.type === "text" && typeof block.text === "string" && block.text) {
      this.out.add(block.text);
      out.push(this.chunk({ content: block.text }));
    }
    return out;
  }

  private blockDelta(data: JsonObject): ChatStreamItem[] {
    const delta = (data.delta ?? {}) as JsonObject;
    const out: ChatStreamItem[] = [];
    switch (delta.type) {
      case "text_delta":
        if (typeof delta.text === "string" && delta.text) {
          this.ensureStarted(out);
          this.out.add(delta.text);
          out.push(this.chunk({ content: delta.text }));
        }
        break;
      case "thinking_delta":
        if (typeof delta.thinking === "string" && delta.thinking) {
          this.ensureStarted(out);
          this.out.add(delta.thinking);
          out.push(this.chunk({ reasoning_content: delta.thinking }));
        }
        break;
      case "input_json_delta": {
        const tool = this.toolIndex.get(typeof data.index === "number" ? data.index : -1);
        const part = typeof delta.partial_json === "string" ? delta.partial_json : "";
        if (tool && part) {
          this.ensureStarted(out);
          tool.bytes += part.length;
          this.out.add(part);
          out.push(this.chunk({ tool_calls: [{ index: tool.t, function: { arguments: part } }] }));
        }
        break;
      }
      // signature_delta, citations_delta and unknown deltas have no Chat counterpart (§7 losses).
    }
    return out;
  }

  private blockStop(data: JsonObject): ChatStreamItem[] {
    const tool = this.toolIndex.get(typeof data.index === "number" ? data.index : -1);
    // A tool with no argument bytes still needs parseable arguments (one-api sends "{}"). Its start
    // input is what Anthropic's MessageStream keeps then; some compatible servers send it whole there.
    if (!tool || tool.bytes > 0) return [];
    const given = isObject(tool.input) && Object.keys(tool.input).length > 0 ? JSON.stringify(tool.input) : "";
    // The given input is the model's output (counted for an estimate); "{}" is ours.
    if (given) this.out.add(given);
    const args = given || "{}";
    tool.bytes = args.length;
    return [this.chunk({ tool_calls: [{ index: tool.t, function: { arguments: args } }] })];
  }

  private messageDelta(data: JsonObject): ChatStreamItem[] {
    if (this.finishSent) return [];
    const out: ChatStreamItem[] = [];
    this.ensureStarted(out);
    const usage = data.usage;
    // Counts that are not counts make the whole usage unknown: our estimate is shown and billed.
    if (usage && typeof usage === "object" && !billableMessagesUsage(usage, ["output_tokens"])) this.realUsage = null;
    else if (usage && typeof usage === "object") {
      // Onto message_start's counts; when it had none, onto our input estimate (absent is not zero).
      this.realUsage = mergeMessagesUsage(this.realUsage ?? inputEstimate(this.opts.estimatedInputTokens), usage as JsonObject);
      if (typeof (usage as JsonObject).input_tokens === "number") this.inputReported = true;
      this.outputReported = true;
      const details = (usage as JsonObject).output_tokens_details as JsonObject | undefined;
      if (details && typeof details.thinking_tokens === "number") this.thinkingTokens = details.thinking_tokens;
    }
    // An Anthropic-compatible server may send no usage at all: then our estimate is shown and billed.
    this.billed = this.realUsage ?? estimatedUsage(this.opts.estimatedInputTokens, this.out);
    this.finalUsage = chatUsage(this.billed, this.thinkingTokens === undefined ? {} : { reasoningTokens: this.thinkingTokens });
    this.cost = this.opts.costOf(this.billed);
    this.finalUsage.cost_usd = nanoToUsd(this.cost);
    const stop = ((data.delta ?? {}) as JsonObject).stop_reason;
    const finish = this.chunk({}, stopToFinish(typeof stop === "string" ? stop : null) ?? "stop");
    // Without include_usage the finish chunk is the only place usage (and cost_usd) can go.
    if (!this.opts.includeUsage && this.finalUsage) {
      finish.usage = this.finalUsage;
      this.costShown = true;
    }
    out.push(finish);
    this.finishSent = true;
    return out;
  }

  private messageStop(): ChatStreamItem[] {
    const out: ChatStreamItem[] = [];
    if (!this.finishSent) out.push(...this.messageDelta({})); // defensive: Anthropic always sends message_delta
    this.ended = true;
    if (this.opts.includeUsage && this.finalUsage) {
      // Same id: the SDK's stream() merges later chunks only when they carry a truthy id.
      out.push({ id: this.id, object: "chat.completion.chunk", created: this.created, model: this.opts.model, choices: [], usage: this.finalUsage });
      this.costShown = true;
    }
    out.push("[DONE]");
    return out;
  }
}

const encodeChunks = (items: ChatStreamItem[]): string => {
  let out = "";
  for (const i of items) out += encodeSse(undefined, i === "[DONE]" ? "[DONE]" : JSON.stringify(i));
  return out;
};

/** A Chat client's stream from a Messages upstream: the upstream's SSE parsed for the translator, its chunks encoded. */
export class ChatViaMessagesMachine extends TranslatingMachine<ChatStreamItem> {
  declare protected readonly t: ChatViaMessagesStream;

  constructor(opts: ChatViaMessagesStreamOptions) {
    super(new ChatViaMessagesStream(opts), encodeChunks);
  }

  push(ev: SseEvent): string {
    if (ev.event === "message_stop") this.last = true;
    const data = parseObject(ev.data);
    // Messages names every event; an unnamed one is none of the dialect's.
    if (!data || !ev.event) return "";
    if (ev.event === "error") {
      const e = errorOf(data);
      return this.encode(this.t.fail(e.type, e.message));
    }
    return this.encode(this.t.push({ event: ev.event, data }));
  }
}
