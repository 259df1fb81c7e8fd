import { ChatViaMessagesStream } from "../dialects/chat-via-messages-stream.ts";
import { responsesRequestToChat } from "../dialects/responses-via-chat/request.ts";
import { chatResponseToResponses } from "../dialects/responses-via-chat/response.ts";
import { ResponsesViaChatStream } from "../dialects/responses-via-chat/stream.ts";
import type { ResponsesEvent, ResponsesRequest, ToolNameMap } from "../dialects/responses-via-chat/types.ts";
import type { ChatChunk, JsonObject } from "../wire/shapes.ts";
import type { RelayCall } from "./context.ts";
import { nanoToUsd } from "../core/money.ts";
import { encodeSse, type SseEvent } from "../wire/sse.ts";
import type { Dialect } from "../dialects/dialect.ts";
import type { PairOptions, StreamAdapter } from "./adapters.ts";
import { relayText, resolveModel } from "./text.ts";

// POST /v1/responses: an adapter on Chat Completions. The request becomes a chat request that runs
// through the same routes, fallbacks, ledger and logs; the answer is turned back into a response.

export async function serveResponses(call: RelayCall): Promise<Response> {
  const request = call.json as ResponsesRequest;
  const model = resolveModel(call, request.model, "chat.completions", "responses");
  const chat = responsesRequestToChat(request, { upstreamModel: model.id, defaultMaxOutputTokens: model.maxOutputTokens });
  const headers: Record<string, string> = {};
  // Hosted tools (Codex offers web_search by default) cannot run here; they were left out, and the client is told.
  if (chat.droppedTools.length) headers["x-gateway-dropped-tools"] = chat.droppedTools.join(", ");
  if (chat.droppedFields.length) headers["x-gateway-dropped"] = chat.droppedFields.join(", ");
  const ctx = { model: model.id, request, toolNames: chat.toolNames };
  return relayText(call, model, {
    dialect: "chat",
    body: chat.body,
    maxOut: (chat.body.max_completion_tokens ?? chat.body.max_tokens ?? model.maxOutputTokens) as number,
    stream: request.stream === true,
    headers,
    answer: (out, cost) => chatResponseToResponses(out as never, { ...ctx, costUsd: nanoToUsd(cost) }),
    adapter: (o, upstream) => responsesAdapter(o, upstream, ctx),
  });
}

const encode = (events: ResponsesEvent[]) => events.map((e) => encodeSse(e.event, JSON.stringify(e.data))).join("");

function parse(data: string): JsonObject | null {
  try {
    return JSON.parse(data) as JsonObject;
  } catch {
    return null;
  }
}

/** Chat chunks (native, or from a Messages route through the Messages→Chat machine) → Responses events. */
function responsesAdapter(o: PairOptions, upstream: Dialect, ctx: { model: string; request: ResponsesRequest; toolNames: ToolNameMap }): StreamAdapter {
  const counts = { costOf: o.costOf, estimatedInputTokens: o.estimatedInputTokens };
  const rs = new ResponsesViaChatStream({ ...ctx, ...counts });
  let error = false;
  let finished = false;
  const feed = (chunk: JsonObject): string => {
    if (chunk.error) error = true;
    const choices = chunk.choices as { finish_reason?: string | null }[] | undefined;
    if (choices?.some((c) => c.finish_reason)) finished = true;
    return encode(rs.push(chunk as ChatChunk));
  };
  const viaMessages = upstream === "messages" ? new ChatViaMessagesStream({ model: ctx.model, includeUsage: true, ...counts }) : null;
  const push = (ev: SseEvent): string => {
    if (ev.data === "[DONE]") return "";
    const data = parse(ev.data);
    if (!data) return "";
    if (!viaMessages) return feed(ev.event === "error" ? { error: data.error ?? data } : data);
    if (!ev.event) return "";
    const items = ev.event === "error" ? viaMessages.fail("api_error", String((data.error as JsonObject | undefined)?.message ?? "Upstream error")) : viaMessages.push({ event: ev.event, data });
    let out = "";
    for (const item of items) if (item !== "[DONE]") out += feed(item as JsonObject);
    return out;
  };
  return {
    push,
    done: () => encode(rs.done()),
    fail: (type, message) => encode(rs.fail(type, message)),
    get usage() {
      return rs.usage;
    },
    // The same count the machine estimates from, so a cut stream is billed like a finished one.
    get outputChars() {
      return rs.outputChars;
    },
    get upstreamError() {
      return error;
    },
    get complete() {
      return finished;
    },
  };
}
