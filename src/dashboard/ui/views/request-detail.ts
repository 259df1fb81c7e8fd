import { h, usd, when } from "../dom.ts";
import type { Pricing, PricedModel, RequestRow } from "../../../http/api-schemas.ts";

// One request's detail, opened from its row: why it failed, what it was, what it cost. The log keeps
// no error text (never content), so a code is explained by its meaning in docs/api.md#errors.

const MEANING: Record<string, string> = {
  invalid_request: "The request was malformed or missed a required field (model, messages, max_tokens).",
  unsupported_content_type: "The request carried non-text blocks on a text route.",
  model_protocol_mismatch: "The model is not served on this route.",
  insufficient_balance: "Not enough spendable balance: top up or lower max_tokens.",
  model: "This key is not allowed to use the model.",
  inactive: "The key is revoked or disabled.",
  expired: "The key has expired.",
  ip: "The key does not accept requests from this address.",
  model_not_found: "No model of this name in the catalog.",
  endpoint_not_found: "No such route under /v1/.",
  method_not_allowed: "Wrong HTTP method for this route.",
  idempotency_conflict: "An Idempotency-Key reused for a different body.",
  request_too_large: "The body is over the route's size limit.",
  rate_limit: "Rate limit exceeded: retry after the time given.",
  quota: "The key's dollar quota or its budget is used up.",
  upstream_unavailable: "The provider failed; not charged, retry.",
  ambiguous_upstream_result: "The provider's answer was lost; not charged, do not retry automatically.",
  product_paused: "The operator paused the service.",
  no_eligible_route: "No route could serve the model at that moment.",
  database_unavailable: "The gateway could not record the request; not charged.",
  rate_limit_unavailable: "The rate limit store did not answer; not charged, retry.",
};

/** Token classes: the row's count, its price per 1M tokens in the pricing table. */
const CLASSES: [keyof RequestRow, string, keyof PricedModel][] = [
  ["input_tokens", "Input tokens", "input"],
  ["output_tokens", "Output tokens", "output"],
  ["cache_read_tokens", "Cache reads", "cache_read"],
  ["cache_write_tokens", "Cache writes (5 min)", "cache_write"],
  ["cache_write_1h_tokens", "Cache writes (1 h)", "cache_write_1h"],
  ["image_input_tokens", "Image input tokens", "image_input"],
  ["image_output_tokens", "Image output tokens", "image_output"],
];

function costLines(r: RequestRow, model: PricedModel | undefined): Node[] {
  const lines: Node[] = [];
  for (const [count, label, price] of CLASSES) {
    const n = r[count] as number | null;
    if (!n) continue;
    const per = model?.[price] as number | undefined;
    lines.push(h("li", {}, per === undefined ? `${label}: ${n}` : `${label}: ${n} × ${usd(per)} / 1M = ${usd((n * per) / 1e6)}`));
  }
  if (r.images) lines.push(h("li", {}, model?.per_image === undefined ? `Images: ${r.images}` : `Images: ${r.images} × ${usd(model.per_image)} = ${usd(r.images * model.per_image)}`));
  // Priced per 1,000 searches (docs/pricing.md): without it the lines fell short of the charge.
  if (r.web_searches) {
    const per = model?.web_search;
    lines.push(h("li", {}, per === undefined ? `Web searches: ${r.web_searches}` : `Web searches: ${r.web_searches} × ${usd(per)} / 1,000 = ${usd((r.web_searches * per) / 1000)}`));
  }
  return lines;
}

export function requestDetail(r: RequestRow, pricing: Pricing): HTMLElement {
  const model = pricing.models.find((m) => m.id === r.model);
  const facts: [string, string][] = [
    ["Status", String(r.status)],
    ["Error code", r.error_code ?? "—"],
    ["Requested model", r.model ?? "— (refused before its body was read)"],
    ["Route", r.endpoint ? `${r.path} (${r.endpoint})` : r.path],
    ["Attempts", String(r.attempts)],
    ["Streaming", r.stream ? "yes" : "no"],
    ["Latency", r.latency_ms === null ? "—" : `${r.latency_ms} ms`],
    ["Time", when(r.created_at)],
  ];
  if (r.service_tier) facts.push(["Service tier", r.service_tier]);
  const lines = costLines(r, model);
  return h(
    "section",
    { "aria-label": "Request detail", class: "detail", tabindex: "-1" },
    h("h3", {}, "Request ", h("code", {}, r.request_id)),
    r.error_code ? h("p", { class: "error" }, MEANING[r.error_code] ?? "See the error codes in the API documentation.") : "",
    h("dl", {}, ...facts.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    h("h4", {}, "Cost"),
    lines.length ? h("ul", {}, ...lines) : "",
    h("p", {}, `Charged: ${usd(r.cost_usd)}`, lines.length ? " (list prices; a long-context or service tier prices differently)" : ""),
  );
}
