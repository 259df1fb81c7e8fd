import type { Model } from "../catalog/catalog.ts";
import { findNonTextContent, unsupportedContent } from "../dialects/content-check.ts";
import type { JsonObject } from "../dialects/wire.ts";
import { GatewayError, modelNotFound } from "../errors.ts";
import type { KeyedCall } from "../http/pipeline.ts";
import { estimateInputTokens } from "../ledger/estimate.ts";
import type { Hold } from "../ledger/ledger.ts";
import { tokenCost, type TokenUsage } from "../ledger/money.ts";
import type { Dialect } from "../upstreams/types.ts";
import { clientAnswer, streamAdapter, upstreamBody, withCost, type PairOptions } from "./adapters.ts";
import { attemptRoutes } from "./routes.ts";
import { relayStream, firstEvents } from "./stream.ts";

const ENDPOINT: Record<Dialect, "messages" | "chat.completions"> = { messages: "messages", chat: "chat.completions" };

/** Model name → catalog model sold on this endpoint and allowed for this key, or the spec's refusal. */
export function resolveModel(call: KeyedCall, name: unknown, endpoint: Model["endpoints"][number]): Model {
  const model = typeof name === "string" ? call.svc.catalog.lookup(name) : undefined;
  if (!model) throw modelNotFound(String(name));
  call.log.model = model.id;
  call.log.endpoint = endpoint;
  if (!model.endpoints.includes(endpoint)) {
    throw new GatewayError(
      "model_protocol_mismatch",
      `The model '${model.id}' is not served on ${endpoint}; it is sold on: ${model.endpoints.join(", ")}.`,
    );
  }
  if (call.key.models && !call.key.models.some((m) => call.svc.catalog.lookup(m)?.id === model.id)) {
    throw new GatewayError("model", `This API key is not allowed to use the model '${model.id}'.`);
  }
  return model;
}

export const costOf = (model: Model) => (u: TokenUsage) => tokenCost(model.prices, u);

/** The output cap a request asks for; the reservation is sized on it. */
function outputCap(dialect: Dialect, body: JsonObject): number {
  if (dialect === "messages") return body.max_tokens as number;
  const cap = (body.max_completion_tokens ?? body.max_tokens) as number | null | undefined;
  if (cap === null || cap === undefined) {
    throw new GatewayError("invalid_request", "max_tokens: Field required (or max_completion_tokens)");
  }
  return cap;
}

const ANTHROPIC_VERSION = /^\d{4}-\d{2}-\d{2}$/;

/** POST /v1/messages and /v1/chat/completions after the pipeline's checks. */
export async function serveText(call: KeyedCall, dialect: Dialect, body: JsonObject): Promise<Response> {
  const model = resolveModel(call, body.model, ENDPOINT[dialect]);
  if (dialect === "messages") {
    const v = call.request.headers.get("anthropic-version");
    if (v !== null && !ANTHROPIC_VERSION.test(v.trim())) {
      throw new GatewayError("invalid_request", `anthropic-version: '${v}' is not a version date of the form YYYY-MM-DD (e.g. 2023-06-01).`);
    }
  }
  if (dialect === "chat" && typeof body.n === "number" && body.n > 1) {
    throw new GatewayError("invalid_request", "n: only n = 1 is supported; each choice is billed and streamed separately upstream.");
  }
  const hit = findNonTextContent(dialect, body);
  if (hit) throw unsupportedContent(hit);
  const maxOut = outputCap(dialect, body);
  const estimatedInputTokens = estimateInputTokens(call.bytes.byteLength);
  const reserveNano = tokenCost(model.prices, { input: estimatedInputTokens, output: maxOut, cacheRead: 0, cacheWrite: 0 });
  const stream = body.stream === true;
  call.log.stream = stream;

  const hold = call.svc.ledger.reserve(call.requestId, call.key.accountId, call.key.id, reserveNano);
  let handedOff = false;
  try {
    const pair = (upstreamDialect: Dialect, upstreamModel: string, maxTokensField: PairOptions["maxTokensField"]): PairOptions => ({
      model,
      upstreamModel,
      maxTokensField,
      estimatedInputTokens,
      costOf: costOf(model),
    });
    let dropped: string[] = [];
    let upstreamDialect: Dialect = dialect;
    const attempt = await attemptRoutes(call.svc, model, call.request.signal, {
      send(route, provider, signal) {
        upstreamDialect = provider.dialects.includes(dialect) ? dialect : provider.dialects[0]!;
        const o = pair(upstreamDialect, route.upstreamModel, provider.config.max_tokens_field ?? "max_tokens");
        const out = upstreamBody(dialect, upstreamDialect, body, o);
        dropped = out.dropped;
        return provider.text({ dialect: upstreamDialect, body: out.body, clientHeaders: call.request.headers, search: call.search, signal });
      },
      confirm: stream ? (a) => firstEvents(a) : undefined,
    });
    call.log.provider = attempt.route.provider.id;
    call.log.upstreamModel = attempt.route.upstreamModel;
    call.log.attempts = attempt.attempts;
    const extra: Record<string, string> = dropped.length ? { "x-gateway-dropped": dropped.join(", ") } : {};
    if (stream) {
      const includeUsage = dialect === "chat" && (body.stream_options as JsonObject | undefined)?.include_usage === true;
      const adapter = streamAdapter(dialect, upstreamDialect, includeUsage, pair(upstreamDialect, attempt.route.upstreamModel, "max_tokens"));
      handedOff = true;
      call.deferLog = true;
      return relayStream(call, attempt, adapter, hold, model, estimatedInputTokens, extra);
    }
    const text = await attempt.response.text();
    const { body: out, usage: reported } = clientAnswer(dialect, upstreamDialect, JSON.parse(text) as JsonObject, model.id);
    // Some compatible servers report no usage: bill our own count (estimate in, answer bytes out).
    const usage = reported ?? { input: estimatedInputTokens, output: Math.ceil(text.length / 4), cacheRead: 0, cacheWrite: 0 };
    const cost = tokenCost(model.prices, usage);
    handedOff = true;
    settle(call, hold, cost, usage);
    return new Response(JSON.stringify(withCost(out, cost)), { headers: { "content-type": "application/json", ...extra } });
  } finally {
    if (!handedOff) call.svc.ledger.release(hold);
  }
}

export function settle(call: KeyedCall, hold: Hold, cost: number, usage: TokenUsage | null): void {
  call.svc.ledger.settle(hold, cost, call.requestId);
  call.log.costNano = cost;
  if (usage) {
    call.log.inputTokens = usage.input;
    call.log.outputTokens = usage.output;
    call.log.cacheReadTokens = usage.cacheRead;
    call.log.cacheWriteTokens = usage.cacheWrite;
  }
}
