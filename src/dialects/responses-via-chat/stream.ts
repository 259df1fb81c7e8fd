// Chat chunks → the Responses event sequence, synthesized as chunks arrive (responses.md §5, §7).
//
// Rules the clients hold us to:
// - openai-node's stream helper: `response.created` first; output_item.added at output_index equal
//   to the item count, content_part.added at content_index equal to the part count; every
//   item-scoped event names the item's own id; no duplicate item ids or call_ids; each lifecycle
//   event replaces the snapshot, so response.completed lists every item; unknown types throw.
// - Codex: items come only from response.output_item.done, failures only from response.failed,
//   usage (if any) needs integer counts, and a text delta needs an open item.
// Reasoning and message items close as soon as something else starts. Tool calls stay open until
// the finish: some upstreams interleave argument fragments of parallel calls, and a closed
// item cannot reopen.

import { nanoToUsd, type TokenUsage } from "../../core/money.ts";
import type { ChatChunk, ChatToolCall, ChatUsage, JsonObject } from "../../wire/shapes.ts";
import { newCallId, newCustomCallId, newFunctionCallId, newMessageId, newReasoningId, newResponseId } from "./ids.ts";
import { callItem, finishOf, logprobsOf, messageItem, outputTextPart, reasoningItem, reasoningText, refusalPart, responseShell, type Finish, type ResponseContext } from "./items.ts";
import { unwrapCustomInput } from "./tools.ts";
import type { ResponsesEvent, ToolNameMap, ToolTarget } from "./types.ts";
import { estimatedUsage } from "../stream-usage.ts";
import { billableChatUsage, chatUsage, usageFromChat } from "../usage.ts";
import { responsesUsage } from "./usage.ts";
import { redactSecrets } from "../../wire/scrub.ts";
import { CountsOutput, type StreamOutcome } from "../stream-machine.ts";

export interface ResponsesViaChatStreamOptions extends ResponseContext {
  toolNames: ToolNameMap;
  /** Cost of the final usage in nano-dollars; shown as response.usage.cost_usd. */
  costOf: (usage: TokenUsage) => number;
  /** Our reservation's input estimate, shown when the upstream ignores include_usage. */
  estimatedInputTokens: number;
  responseId?: string;
  createdAt?: number;
}

interface OpenPart {
  kind: "text" | "refusal";
  index: number;
}
interface OpenMessage {
  index: number;
  item: JsonObject & { content: JsonObject[] };
  part: OpenPart | null;
}
interface OpenReasoning {
  index: number;
  item: JsonObject;
  text: string;
}
interface Call {
  upstreamId?: string;
  name: string;
  args: string;
  /** Set once the call has a name and its output_item.added was sent. */
  open?: { index: number; item: JsonObject; target: ToolTarget };
  closed: boolean;
}

/** The status of the terminal event sent. */
export type ResponseStatus = "completed" | "incomplete" | "failed";

export class ResponsesViaChatStream extends CountsOutput {
  private seq = 0;
  private started = false;
  private terminalStatus: ResponseStatus | null = null;
  /** A finish_reason came: the upstream's natural end. */
  private complete = false;
  private readonly id: string;
  private readonly createdAt: number;
  /** Item snapshots by output_index; events carry clones. */
  private readonly output: JsonObject[] = [];
  private message: OpenMessage | null = null;
  private reasoning: OpenReasoning | null = null;
  private readonly calls = new Map<string, Call>();
  private lastCallKey: string | null = null;
  private readonly callIds = new Set<string>();
  private finish: Finish | null = null;
  private lastUsage: ChatUsage | null = null;
  /** The service tier the upstream's chunks report: it prices the answer. */
  private serviceTier: unknown;
  /** lastUsage is the upstream's, not the estimate a terminal event showed without one. */
  private counted = false;

  constructor(private readonly opts: ResponsesViaChatStreamOptions) {
    super();
    this.id = opts.responseId ?? newResponseId();
    this.createdAt = opts.createdAt ?? Math.floor(Date.now() / 1000);
  }

  /**
   * The ledger buckets of the last usage the upstream reported; after a terminal event of a stream
   * without any, the estimate it showed; else null.
   */
  get usage(): TokenUsage | null {
    return this.lastUsage ? usageFromChat(this.lastUsage, this.serviceTier) : null;
  }

  get inputCounted(): boolean {
    return this.counted;
  }
  get outputCounted(): boolean {
    return this.counted;
  }


  /** Which terminal event was sent, if any. */
  get status(): ResponseStatus | null {
    return this.terminalStatus;
  }

  get outcome(): StreamOutcome {
    return this.terminalStatus === "failed" ? "upstream_failed" : this.complete ? "completed" : "running";
  }

  /** response.completed and response.incomplete carry the final usage and its cost. */
  get priced(): boolean {
    return this.terminalStatus === "completed" || this.terminalStatus === "incomplete";
  }

  start(): ResponsesEvent[] {
    if (this.started) return [];
    this.started = true;
    const response = this.shell();
    return [this.ev("response.created", { response }), this.ev("response.in_progress", { response })];
  }

  push(chunk: ChatChunk): ResponsesEvent[] {
    const out = this.start();
    if (this.terminalStatus) return out;
    if (chunk.error) return [...out, ...this.fail(errorCode(chunk.error), errorMessage(chunk.error))];
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    const choice = choices.find((c) => c.index === 0) ?? choices[0];
    if (choice && !this.finish) {
      const delta = choice.delta ?? {};
      const thinking = reasoningText(delta);
      this.out.add(thinking);
      this.out.add(textOf(delta.content));
      this.out.add(textOf(delta.refusal));
      for (const call of delta.tool_calls ?? []) this.out.add(textOf(call.function?.arguments));
      if (thinking) out.push(...this.reasoningDelta(thinking));
      if (typeof delta.content === "string" && delta.content !== "") out.push(...this.textDelta("text", delta.content, logprobsOf(choice.logprobs)));
      if (typeof delta.refusal === "string" && delta.refusal !== "") out.push(...this.textDelta("refusal", delta.refusal, []));
      (delta.tool_calls ?? []).forEach((call, i) => out.push(...this.toolDelta(call, i)));
      if (choice.finish_reason) {
        this.complete = true;
        this.finish = finishOf(choice.finish_reason);
        out.push(...this.closeAll());
      }
    }
    // Counts that are not counts are no usage: the estimate is shown and billed (dialects/usage.ts).
    if (typeof chunk.service_tier === "string") this.serviceTier = chunk.service_tier;
    if (chunk.usage && billableChatUsage(chunk.usage)) {
      this.lastUsage = chunk.usage;
      this.counted = true;
    }
    // Usage normally follows the finish in its own chunk (choices:[]); some servers put it on the
    // finish chunk. Usage seen before the finish may be a running count, so it waits for done().
    if (this.finish && chunk.usage) out.push(...this.terminal());
    return out;
  }

  /** The upstream stream ended ([DONE] or EOF). */
  done(): ResponsesEvent[] {
    const out = this.start();
    if (this.terminalStatus) return out;
    if (!this.finish) {
      // Usage without a finish_reason still proves the upstream finished its answer.
      if (!this.lastUsage) return [...out, ...this.fail("upstream_unavailable", "The upstream stream ended before the response was finished.")];
      this.finish = finishOf(null);
      out.push(...this.closeAll());
    }
    return [...out, ...this.terminal()];
  }

  /**
   * A failure after the first byte: `error` (the SDK throws on it) then `response.failed` (the
   * only failure Codex reads). Open items are not closed: Codex would run a half-streamed call.
   */
  fail(code: string, message: string): ResponsesEvent[] {
    const out = this.start();
    if (this.terminalStatus) return out;
    // The message may be the upstream's: a provider credential it quotes never reaches the client.
    message = redactSecrets(message);
    for (const item of this.output) if (item.status === "in_progress") item.status = "incomplete";
    this.terminalStatus = "failed";
    out.push(this.ev("error", { code, message, param: null }));
    const response = { ...this.shell(), status: "failed", error: { code, message }, output: structuredClone(this.output) };
    out.push(this.ev("response.failed", { response }));
    return out;
  }

  private shell(): JsonObject {
    return responseShell(this.id, this.createdAt, this.opts);
  }

  private ev(type: string, fields: JsonObject): ResponsesEvent {
    return { event: type, data: { type, sequence_number: this.seq++, ...fields } };
  }

  private addItem(item: JsonObject): { index: number; event: ResponsesEvent } {
    const index = this.output.length;
    this.output.push(item);
    return { index, event: this.ev("response.output_item.added", { output_index: index, item: structuredClone(item) }) };
  }

  private itemDone(index: number, item: JsonObject): ResponsesEvent {
    // A length or filter stop cuts the item being written, which is the last one.
    item.status = this.finish?.status === "incomplete" && index === this.output.length - 1 ? "incomplete" : "completed";
    return this.ev("response.output_item.done", { output_index: index, item: structuredClone(item) });
  }

  private reasoningDelta(delta: string): ResponsesEvent[] {
    const out: ResponsesEvent[] = [];
    if (!this.reasoning) {
      out.push(...this.closeMessage());
      const item = reasoningItem(newReasoningId(), null, "in_progress");
      const { index, event } = this.addItem(item);
      this.reasoning = { index, item, text: "" };
      (item.content as JsonObject[]).push({ type: "reasoning_text", text: "" });
      out.push(event, this.ev("response.content_part.added", { ...this.reasoningRef(), part: { type: "reasoning_text", text: "" } }));
    }
    this.reasoning!.text += delta;
    (this.reasoning!.item.content as JsonObject[])[0] = { type: "reasoning_text", text: this.reasoning!.text };
    out.push(this.ev("response.reasoning_text.delta", { ...this.reasoningRef(), delta }));
    return out;
  }

  private reasoningRef(): JsonObject {
    return { item_id: this.reasoning!.item.id as string, output_index: this.reasoning!.index, content_index: 0 };
  }

  private closeReasoning(): ResponsesEvent[] {
    const r = this.reasoning;
    if (!r) return [];
    const part = { type: "reasoning_text", text: r.text };
    const out = [
      this.ev("response.reasoning_text.done", { ...this.reasoningRef(), text: r.text }),
      this.ev("response.content_part.done", { ...this.reasoningRef(), part }),
      this.itemDone(r.index, r.item),
    ];
    this.reasoning = null;
    return out;
  }

  private textDelta(kind: OpenPart["kind"], delta: string, logprobs: unknown[]): ResponsesEvent[] {
    const out: ResponsesEvent[] = [];
    if (!this.message) {
      out.push(...this.closeReasoning());
      const item = messageItem(newMessageId(), [], "in_progress") as OpenMessage["item"];
      const { index, event } = this.addItem(item);
      this.message = { index, item, part: null };
      out.push(event);
    }
    const m = this.message!;
    if (m.part?.kind !== kind) {
      out.push(...this.closePart(m));
      const part = kind === "text" ? outputTextPart("", []) : refusalPart("");
      m.item.content.push(part);
      m.part = { kind, index: m.item.content.length - 1 };
      out.push(this.ev("response.content_part.added", { ...this.partRef(m), part: structuredClone(part) }));
    }
    const part = m.item.content[m.part!.index]!;
    if (kind === "text") {
      part.text = (part.text as string) + delta;
      (part.logprobs as unknown[]).push(...logprobs);
      out.push(this.ev("response.output_text.delta", { ...this.partRef(m), delta, logprobs }));
    } else {
      part.refusal = (part.refusal as string) + delta;
      out.push(this.ev("response.refusal.delta", { ...this.partRef(m), delta }));
    }
    return out;
  }

  private partRef(m: OpenMessage): JsonObject {
    return { item_id: m.item.id as string, output_index: m.index, content_index: m.part!.index };
  }

  private closePart(m: OpenMessage): ResponsesEvent[] {
    if (!m.part) return [];
    const part = m.item.content[m.part.index]!;
    const done =
      m.part.kind === "text"
        ? this.ev("response.output_text.done", { ...this.partRef(m), text: part.text, logprobs: structuredClone(part.logprobs) })
        : this.ev("response.refusal.done", { ...this.partRef(m), refusal: part.refusal });
    const out = [done, this.ev("response.content_part.done", { ...this.partRef(m), part: structuredClone(part) })];
    m.part = null;
    return out;
  }

  private closeMessage(): ResponsesEvent[] {
    const m = this.message;
    if (!m) return [];
    const out = [...this.closePart(m), this.itemDone(m.index, m.item)];
    this.message = null;
    return out;
  }

  private toolDelta(call: ChatToolCall, position: number): ResponsesEvent[] {
    const key = this.callKey(call, position);
    let state = this.calls.get(key);
    if (!state) {
      state = { name: "", args: "", closed: false };
      this.calls.set(key, state);
    }
    this.lastCallKey = key;
    if (call.id && !state.upstreamId) state.upstreamId = call.id;
    if (call.function?.name && !state.open) state.name = call.function.name;
    const piece = call.function?.arguments ?? "";
    state.args += piece;
    if (!state.open) return state.name ? this.openCall(state) : [];
    if (piece === "" || state.open.target.kind === "custom") return [];
    return [this.ev("response.function_call_arguments.delta", { item_id: state.open.item.id as string, output_index: state.open.index, delta: piece })];
  }

  /** Chat keys fragments by `index`; servers that omit it send whole calls, or continue the last one. */
  private callKey(call: ChatToolCall, position: number): string {
    if (typeof call.index === "number") return `i${call.index}`;
    if (call.id) return `id${call.id}`;
    return this.lastCallKey ?? `p${position}`;
  }

  private openCall(state: Call): ResponsesEvent[] {
    // Items come in the order they were written: text before calls closes here.
    const out = [...this.closeReasoning(), ...this.closeMessage()];
    const target = this.opts.toolNames.get(state.name) ?? { name: state.name, kind: "function" };
    // The SDK rejects repeated or empty call_ids within one response.
    const callId = state.upstreamId && !this.callIds.has(state.upstreamId) ? state.upstreamId : newCallId();
    this.callIds.add(callId);
    const id = target.kind === "custom" ? newCustomCallId() : newFunctionCallId();
    const item = callItem(id, callId, target, "", "in_progress");
    const { index, event } = this.addItem(item);
    state.open = { index, item, target };
    out.push(event);
    if (state.args !== "" && target.kind === "function") {
      out.push(this.ev("response.function_call_arguments.delta", { item_id: id, output_index: index, delta: state.args }));
    }
    return out;
  }

  private closeCall(state: Call): ResponsesEvent[] {
    const out = state.open ? [] : this.openCall(state);
    const { index, item, target } = state.open!;
    const ref = { item_id: item.id as string, output_index: index };
    if (target.kind === "custom") {
      item.input = unwrapCustomInput(state.args);
      if (item.input !== "") out.push(this.ev("response.custom_tool_call_input.delta", { ...ref, delta: item.input }));
      out.push(this.ev("response.custom_tool_call_input.done", { ...ref, input: item.input }));
    } else {
      item.arguments = state.args === "" ? "{}" : state.args;
      out.push(this.ev("response.function_call_arguments.done", { ...ref, name: target.name, arguments: item.arguments }));
    }
    out.push(this.itemDone(index, item));
    state.closed = true;
    return out;
  }

  private closeAll(): ResponsesEvent[] {
    const out = [...this.closeReasoning(), ...this.closeMessage()];
    for (const state of this.calls.values()) if (!state.closed) out.push(...this.closeCall(state));
    return out;
  }

  private terminal(): ResponsesEvent[] {
    const finish = this.finish ?? finishOf(null);
    this.terminalStatus = finish.status;
    // No usage from upstream: our estimate, the count the relay bills, as a non-streamed answer shows it.
    this.lastUsage ??= chatUsage(estimatedUsage(this.opts.estimatedInputTokens, this.out));
    const usage = responsesUsage(this.lastUsage, nanoToUsd(this.opts.costOf(usageFromChat(this.lastUsage, this.serviceTier))));
    const response = {
      ...this.shell(),
      status: finish.status,
      completed_at: Math.floor(Date.now() / 1000),
      incomplete_details: finish.incomplete_details,
      output: structuredClone(this.output),
      usage,
    };
    return [this.ev(finish.status === "completed" ? "response.completed" : "response.incomplete", { response })];
  }
}

const textOf = (v: unknown): string => (typeof v === "string" ? v : "");

function errorCode(error: unknown): string {
  const code = typeof error === "object" && error !== null ? (error as JsonObject).code : undefined;
  return typeof code === "string" && code !== "" ? code : "upstream_unavailable";
}

function errorMessage(error: unknown): string {
  const message = typeof error === "object" && error !== null ? (error as JsonObject).message : error;
  return typeof message === "string" && message !== "" ? message : "The upstream failed mid-stream.";
}
