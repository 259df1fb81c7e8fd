// Chat Completions chunks → Messages SSE events (protocols/translation.md §4). The translator is a
// state machine fed one parsed chunk at a time; it never reads a clock or a socket, so a fixture
// replays it exactly. MessagesViaChatMachine puts it behind the StreamMachine contract: SSE in, SSE out.

import { nanoToUsd, type TokenUsage } from "../core/money.ts";
import { StreamTally, estimatedUsage } from "./stream-usage.ts";
import { toolIdToMessages } from "./tool-ids.ts";
import { billableChatUsage, deltaMessagesUsage, finishToStop, startMessagesUsage, toolAwareStop, usageFromChat } from "./usage.ts";
import type { ChatChunk, ChatToolCall, JsonObject, MessagesEvent } from "../wire/shapes.ts";
import { redactSecrets } from "../wire/scrub.ts";
import type { SseEvent } from "../wire/sse.ts";
import { encodeEvents, errorOf, parseObject, TranslatingMachine } from "./stream-machine.ts";

export interface MessagesViaChatStreamOptions {
  /** Public model name shown to the client. */
  model: string;
  /** Defaults to `msg_` + the upstream chunk id. */
  messageId?: string;
  /** Our reservation estimate: message_start must not say 0 (CLIProxyAPI#1700), nor the end of a stream without usage. */
  estimatedInputTokens: number;
  /** Nano-dollars for a usage. */
  costOf: (u: TokenUsage) => number;
}

interface ToolState {
  id: string;
  name: string;
  /** Content-block index once started; -1 while waiting for a name. */
  block: number;
  /** Arguments received before the block could start (no name yet, or another call's still open). */
  pending: string;
  /** Arguments sent in the block so far: whether they are whole decides when a waiting call may start. */
  args: string;
  closed: boolean;
  /** Position among the message's tool calls. */
  ordinal: number;
}

type BlockKind = "text" | "thinking" | "tool";

export class MessagesViaChatStream extends StreamTally {
  private readonly opts: MessagesViaChatStreamOptions;
  private messageId: string | undefined;
  private started = false;
  private open: { kind: BlockKind; index: number; tool?: ToolState } | null = null;
  private nextIndex = 0;
  private readonly tools = new Map<string, ToolState>();
  private lastToolKey: string | null = null;
  private toolCount = 0;
  private finish: string | null = null;
  private sawRefusal = false;
  private reasoningTokens: number | undefined = undefined;
  /** The service tier the upstream's chunks report: it prices the answer. */
  private serviceTier: string | undefined;

  constructor(opts: MessagesViaChatStreamOptions) {
    super();
    this.opts = opts;
    this.messageId = opts.messageId;
  }

  push(chunk: ChatChunk): MessagesEvent[] {
    if (this.ended) return []; // anything after the usage chunk is ignored (§4)
    const out: MessagesEvent[] = [];
    if (chunk.error) {
      const err = (typeof chunk.error === "object" ? chunk.error : {}) as JsonObject;
      const type = typeof err.type === "string" && err.type ? err.type : "api_error";
      const message = typeof err.message === "string" ? err.message : String(chunk.error);
      return this.fail(type, message);
    }
    // Before message_start, which says the tier the first chunk names.
    if (typeof chunk.service_tier === "string") this.serviceTier = chunk.service_tier;
    if (!this.started) this.start(chunk, out);
    if (chunk.usage && billableChatUsage(chunk.usage)) {
      this.realUsage = usageFromChat(chunk.usage, this.serviceTier);
      this.inputReported = true;
      this.outputReported = true;
      this.reasoningTokens = chunk.usage.completion_tokens_details?.reasoning_tokens;
    }
    const choice = chunk.choices?.find((c) => c.index === 0) ?? chunk.choices?.[0];
    if (choice) {
      const d = choice.delta ?? {};
      const reasoning = typeof d.reasoning_content === "string" ? d.reasoning_content : typeof d.reasoning === "string" ? d.reasoning : "";
      if (reasoning) this.thinking(reasoning, out);
      if (typeof d.content === "string" && d.content) this.text(d.content, out);
      if (typeof d.refusal === "string" && d.refusal) {
        this.sawRefusal = true;
        this.text(d.refusal, out);
      }
      if (Array.isArray(d.tool_calls)) {
        for (const tc of d.tool_calls) {
          if (!this.toolCall(tc, out)) return out.concat(this.failNow("upstream_unavailable", "upstream interleaved the arguments of parallel tool calls; the stream cannot be translated"));
        }
      }
      // Content and finish in one chunk: the content above went first (§4, LiteLLM splits these).
      if (choice.finish_reason && this.finish === null) {
        this.finish = choice.finish_reason;
        this.complete = true;
        this.closeAll(out);
      }
    }
    // The usage chunk (choices: []) after the finish ends the message. Usage seen earlier (on the
    // finish chunk, or on every chunk) waits for [DONE] in case a final total follows.
    if (this.finish !== null && chunk.usage && (chunk.choices?.length ?? 0) === 0) this.end(out);
    return out;
  }

  /** At [DONE] or EOF. Without a finish_reason the upstream was cut off: that is an error, not an end_turn. */
  done(): MessagesEvent[] {
    if (this.ended) return [];
    if (this.finish === null) return this.fail("upstream_unavailable", "upstream stream ended before a finish_reason");
    const out: MessagesEvent[] = [];
    this.end(out);
    return out;
  }

  /** Mid-stream error: `event: error`, then nothing more (no message_stop; sse.md §3). */
  fail(type: string, message: string): MessagesEvent[] {
    if (this.ended) return [];
    return this.failNow(type, message);
  }

  private failNow(type: string, message: string): MessagesEvent[] {
    this.ended = true;
    this.failedFlag = true;
    // The message may be the upstream's: a provider credential it quotes never reaches the client.
    return [{ event: "error", data: { type: "error", error: { type, message: redactSecrets(message) } } }];
  }

  private start(chunk: ChatChunk, out: MessagesEvent[]): void {
    this.started = true;
    if (this.messageId === undefined) {
      const upstream = typeof chunk.id === "string" && chunk.id ? chunk.id.replace(/^chatcmpl-/, "") : crypto.randomUUID().replaceAll("-", "");
      this.messageId = `msg_${upstream}`;
    }
    out.push({
      event: "message_start",
      data: {
        type: "message_start",
        message: {
          id: this.messageId,
          type: "message",
          role: "assistant",
          model: this.opts.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          stop_details: null,
          usage: startMessagesUsage(this.opts.estimatedInputTokens, this.serviceTier),
        },
      },
    });
  }

  private openBlock(kind: BlockKind, contentBlock: JsonObject, out: MessagesEvent[], tool?: ToolState): number {
    this.closeOpen(out);
    const index = this.nextIndex++;
    this.open = { kind, index, tool };
    out.push({ event: "content_block_start", data: { type: "content_block_start", index, content_block: contentBlock } });
    return index;
  }

  private closeOpen(out: MessagesEvent[]): void {
    if (!this.open) return;
    if (this.open.tool) this.open.tool.closed = true;
    out.push({ event: "content_block_stop", data: { type: "content_block_stop", index: this.open.index } });
    this.open = null;
  }

  private delta(index: number, delta: JsonObject, out: MessagesEvent[]): void {
    out.push({ event: "content_block_delta", data: { type: "content_block_delta", index, delta } });
  }

  private thinking(text: string, out: MessagesEvent[]): void {
    this.out.add(text);
    if (this.open?.kind !== "thinking") this.openBlock("thinking", { type: "thinking", thinking: "", signature: "" }, out);
    this.delta(this.open!.index, { type: "thinking_delta", thinking: text }, out);
  }

  private text(text: string, out: MessagesEvent[]): void {
    this.out.add(text);
    if (this.open?.kind !== "text") this.openBlock("text", { type: "text", text: "" }, out);
    this.delta(this.open!.index, { type: "text_delta", text }, out);
  }

  /** Returns false when a fragment arrives for a tool block that is already closed. */
  private toolCall(tc: ChatToolCall, out: MessagesEvent[]): boolean {
    const id = typeof tc.id === "string" && tc.id ? tc.id : undefined;
    const name = typeof tc.function?.name === "string" ? tc.function.name : "";
    const args = typeof tc.function?.arguments === "string" ? tc.function.arguments : "";
    // Key by index, else id; a fragment with neither continues the last call.
    let key = typeof tc.index === "number" ? `i${tc.index}` : id !== undefined ? `d${id}` : this.lastToolKey ?? "i0";
    let tool = this.tools.get(key);
    // Some upstreams send every parallel call with index 0 (litellm#5231): a new id is a new call.
    if (tool && id !== undefined && tool.id !== id && tool.block !== -1) {
      key = `${key}#${this.toolCount}`;
      tool = undefined;
    }
    if (!tool) {
      tool = { id: id ?? "", name, block: -1, pending: "", args: "", closed: false, ordinal: this.toolCount };
      this.tools.set(key, tool);
      this.toolCount++;
    } else if (tool.block === -1) {
      if (!tool.id && id) tool.id = id;
      if (name) tool.name += name;
    }
    this.lastToolKey = key;
    this.out.add(args);
    if (tool.block === -1) {
      tool.pending += args;
      // content_block_start needs the name; wait for it (emitted at the finish if it never comes).
      if (tool.name) this.startWaiting(out);
      return true;
    }
    if (!args) return true;
    if (tool.closed) return false; // blocks cannot reopen: text came between the fragments of a call
    tool.args += args;
    this.delta(tool.block, { type: "input_json_delta", partial_json: args }, out);
    // Calls that started meanwhile (an upstream interleaving parallel calls) may go once this one is whole.
    if (this.toolCount > tool.ordinal + 1) this.startWaiting(out);
    return true;
  }

  /**
   * Starts the named calls still without a block, in order, while the open block is not a call whose
   * arguments are incomplete. Blocks run one at a time and cannot reopen (sse.md §2): an upstream
   * that interleaves the fragments of parallel calls has the later calls buffered until the open one
   * is whole (translation.md §4), or until the finish. In order, a call is whole when the next starts.
   */
  private startWaiting(out: MessagesEvent[]): void {
    for (const tool of this.tools.values()) {
      if (tool.block !== -1 || !tool.name) continue;
      const open = this.open?.tool;
      if (open && !wholeJson(open.args)) return;
      this.startTool(tool, out);
    }
  }

  private startTool(tool: ToolState, out: MessagesEvent[]): void {
    // A missing id is made from the message id (as chatResponseToMessages does), so a replay
    // produces the same one; other ids are made valid for Anthropic, reversibly (tool-ids.ts).
    const id = tool.id ? toolIdToMessages(tool.id) : `toolu_gw${tool.ordinal}_${this.messageId!.replace(/^msg_/, "")}`;
    tool.block = this.openBlock("tool", { type: "tool_use", id, name: tool.name, input: {} }, out, tool);
    if (tool.pending) this.delta(tool.block, { type: "input_json_delta", partial_json: tool.pending }, out);
    tool.args = tool.pending;
    tool.pending = "";
  }

  private closeAll(out: MessagesEvent[]): void {
    for (const tool of this.tools.values()) if (tool.block === -1) this.startTool(tool, out);
    this.closeOpen(out);
  }

  private end(out: MessagesEvent[]): void {
    this.ended = true;
    this.closeAll(out);
    const stopReason = this.sawRefusal ? "refusal" : toolAwareStop(finishToStop(this.finish) ?? "end_turn", this.toolCount > 0);
    // No usage from upstream: our estimate, whose input count repeats message_start's, so the SDK's
    // overwrite (sse.md §4) keeps it, and the totals are the ones billed.
    this.billed = this.realUsage ?? estimatedUsage(this.opts.estimatedInputTokens, this.out);
    this.cost = this.opts.costOf(this.billed);
    // stop_details goes in the delta too: MessageStream assigns the delta's value to the message,
    // so leaving it out would turn message_start's null into undefined (sse.md §4).
    const usage: JsonObject = deltaMessagesUsage(this.billed, this.reasoningTokens === undefined ? {} : { thinkingTokens: this.reasoningTokens });
    usage.cost_usd = nanoToUsd(this.cost);
    this.costShown = true;
    out.push({ event: "message_delta", data: { type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: null, stop_details: null }, usage } });
    out.push({ event: "message_stop", data: { type: "message_stop" } });
  }
}

/** Arguments that parse as one JSON object: a call the upstream has finished. */
function wholeJson(args: string): boolean {
  // Only an object can end a call's arguments: skip the parse while the text cannot be one.
  if (!args.trimEnd().endsWith("}")) return false;
  try {
    JSON.parse(args);
    return true;
  } catch {
    return false;
  }
}

/** A Messages client's stream from a Chat upstream: the upstream's SSE parsed for the translator, its events encoded. */
export class MessagesViaChatMachine extends TranslatingMachine<MessagesEvent> {
  declare protected readonly t: MessagesViaChatStream;

  constructor(opts: MessagesViaChatStreamOptions) {
    super(new MessagesViaChatStream(opts), encodeEvents);
  }

  push(ev: SseEvent): string {
    // [DONE] ends the upstream; the relay then calls end(), which writes message_delta and message_stop.
    if (ev.data === "[DONE]") {
      this.last = true;
      return "";
    }
    const chunk = parseObject(ev.data);
    if (!chunk) return "";
    if (ev.event === "error" || chunk.error) {
      const e = errorOf(chunk);
      return this.encode(this.t.fail(e.type, e.message));
    }
    return this.encode(this.t.push(chunk as ChatChunk));
  }
}
