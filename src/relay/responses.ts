import { responsesRequestToChat } from "../dialects/responses-via-chat/request.ts";
import { chatResponseToResponses } from "../dialects/responses-via-chat/response.ts";
import { ResponsesViaChatMachine } from "../dialects/responses-via-chat/machine.ts";
import type { ResponsesRequest } from "../dialects/responses-via-chat/types.ts";
import type { RelayCall } from "./context.ts";
import { nanoToUsd } from "../core/money.ts";
import { outputFloorNano } from "./hold-size.ts";
import { serialisedMembers } from "./adapters.ts";
import { refuseBelowFloor } from "./charge.ts";
import { relayText, resolveModel } from "./text.ts";
import { droppedList } from "../dialects/fields.ts";

// POST /v1/responses: an adapter on Chat Completions. The request becomes a chat request that runs
// through the same routes, fallbacks, ledger and logs; the answer is turned back into a response.

export async function serveResponses(call: RelayCall): Promise<Response> {
  const request = call.json as ResponsesRequest;
  const model = resolveModel(call, request.model, "chat.completions", "responses");
  // Translation is the costly part of this route (linear, but 100,000 items are still work): an
  // account that cannot pay for the output cap alone is refused before it.
  const cap = request.max_output_tokens;
  const maxOut = typeof cap === "number" && Number.isInteger(cap) && cap >= 16 ? cap : model.maxOutputTokens;
  await refuseBelowFloor(call, outputFloorNano(model, maxOut));
  const chat = responsesRequestToChat(request, { upstreamModel: model.id, defaultMaxOutputTokens: model.maxOutputTokens });
  // Serialised once: its size sizes the hold, the estimates and the calibration's sample (the
  // client's bytes say nothing of what the upstream counts), and a chat route sends these members
  // joined again with its own model and cap.
  const sent = serialisedMembers(chat.body);
  call.bodySize = sent.size;
  const headers: Record<string, string> = {};
  // Hosted tools (Codex offers web_search by default) cannot run here; they were left out, and the client is told.
  if (chat.droppedTools.length) headers["x-gateway-dropped-tools"] = droppedList(chat.droppedTools);
  if (chat.droppedFields.length) headers["x-gateway-dropped"] = droppedList(chat.droppedFields);
  const ctx = { model: model.id, request, toolNames: chat.toolNames };
  return relayText(call, model, {
    dialect: "chat",
    body: chat.body,
    raw: sent.members,
    maxOut: (chat.body.max_completion_tokens ?? chat.body.max_tokens ?? model.maxOutputTokens) as number,
    stream: request.stream === true,
    headers,
    answer: (out, cost) => chatResponseToResponses(out as never, { ...ctx, costUsd: nanoToUsd(cost) }),
    machine: (o, upstream) => new ResponsesViaChatMachine({ ...ctx, costOf: o.costOf, estimatedInputTokens: o.estimatedInputTokens }, upstream),
  });
}
