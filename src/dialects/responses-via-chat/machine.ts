// A Responses client's stream behind the StreamMachine contract. The translator reads Chat chunks: a
// Chat route's own, or a Messages route's events turned into Chat chunks first.

import type { ChatChunk, JsonObject } from "../../wire/shapes.ts";
import type { SseEvent } from "../../wire/sse.ts";
import { ChatViaMessagesStream } from "../chat-via-messages-stream.ts";
import type { Dialect } from "../dialect.ts";
import { parseObject, TranslatingMachine } from "../stream-machine.ts";
import { ResponsesEventEncoder } from "./encode.ts";
import { ResponsesViaChatStream, type ResponsesViaChatStreamOptions } from "./stream.ts";
import type { ResponsesEvent } from "./types.ts";

export class ResponsesViaChatMachine extends TranslatingMachine<ResponsesEvent> {
  declare protected readonly t: ResponsesViaChatStream;
  /** A Messages route's events → Chat chunks; null on a Chat route. */
  private readonly viaMessages: ChatViaMessagesStream | null;

  constructor(opts: ResponsesViaChatStreamOptions, upstream: Dialect) {
    super(new ResponsesViaChatStream(opts), new ResponsesEventEncoder(opts.request).encode);
    this.viaMessages =
      upstream === "messages"
        ? new ChatViaMessagesStream({ model: opts.model, includeUsage: true, costOf: opts.costOf, estimatedInputTokens: opts.estimatedInputTokens })
        : null;
  }

  /** On a Messages route the Chat chunks carry what the Messages side billed: its estimate, when the upstream counted nothing. */
  override get inputCounted(): boolean {
    return this.t.inputCounted && (this.viaMessages?.inputCounted ?? true);
  }

  push(ev: SseEvent): string {
    if (this.viaMessages) return this.pushMessages(this.viaMessages, ev);
    if (ev.data === "[DONE]") {
      this.last = true;
      return "";
    }
    const data = parseObject(ev.data);
    if (!data) return "";
    return this.encode(this.t.push((ev.event === "error" ? { error: data.error ?? data } : data) as ChatChunk));
  }

  private pushMessages(viaMessages: ChatViaMessagesStream, ev: SseEvent): string {
    if (ev.event === "message_stop") this.last = true;
    const data = parseObject(ev.data);
    if (!data || !ev.event) return "";
    const message = (data.error as JsonObject | undefined)?.message;
    const chunks = ev.event === "error" ? viaMessages.fail("api_error", String(message ?? "Upstream error")) : viaMessages.push({ event: ev.event, data });
    let out = "";
    // [DONE] is the Chat side's end; the upstream's own end (message_stop) already told the relay.
    for (const chunk of chunks) if (chunk !== "[DONE]") out += this.encode(this.t.push(chunk as ChatChunk));
    return out;
  }
}
