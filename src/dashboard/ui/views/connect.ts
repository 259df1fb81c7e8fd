import { api, ApiError } from "../api.ts";
import { copyBlock, errorText, h, usd } from "../dom.ts";
import type { AccountView, PricedModel } from "../../../http/api-schemas.ts";

// A client's set-up, filled in: with the whole key right after it is created (the one moment it
// exists), with its prefix on the models page. Every model named is one the catalog has, so no
// client asks for a model the gateway would refuse.

const cost = (m: PricedModel) => (m.input ?? Infinity) + (m.output ?? Infinity);
/** The cheapest text model serving `endpoint`, or undefined when the catalog has none. */
export function cheapest(models: PricedModel[], endpoint: string): string | undefined {
  return models.filter((m) => m.endpoints.includes(endpoint as never) && m.per_image === undefined).sort((a, b) => cost(a) - cost(b))[0]?.id;
}

/** The dearest Messages model: Claude Code's main one; the cheapest does its background work. */
const dearest = (models: PricedModel[]) => models.filter((m) => m.endpoints.includes("messages")).sort((a, b) => cost(b) - cost(a))[0]?.id;

/**
 * The clients' set-ups: OpenAI's clients and Codex take `/v1` in the base URL, Anthropic's do not.
 * The OpenAI calls set max_tokens: the gateway requires it (docs/api.md#errors).
 */
export function snippets(origin: string, key: string, model: string, models: PricedModel[]): [title: string, text: string][] {
  const out: [string, string][] = [
    ["curl", `curl -sS ${origin}/v1/chat/completions \\\n  -H "Authorization: Bearer ${key}" \\\n  -H "Content-Type: application/json" \\\n  -d '{"model": "${model}", "max_tokens": 16, "messages": [{"role": "user", "content": "Hello"}]}'`],
    ["OpenAI SDK (Python)", `from openai import OpenAI\n\nclient = OpenAI(base_url="${origin}/v1", api_key="${key}")\nr = client.chat.completions.create(model="${model}", max_tokens=256, messages=[{"role": "user", "content": "Hello"}])\nprint(r.choices[0].message.content)`],
    ["OpenAI SDK (TypeScript)", `import OpenAI from "openai";\n\nconst client = new OpenAI({ baseURL: "${origin}/v1", apiKey: "${key}" });\nconst r = await client.chat.completions.create({ model: "${model}", max_tokens: 256, messages: [{ role: "user", content: "Hello" }] });`],
    ["Anthropic SDK (TypeScript), no /v1", `import Anthropic from "@anthropic-ai/sdk";\n\nconst client = new Anthropic({ baseURL: "${origin}", apiKey: "${key}" });\nconst r = await client.messages.create({ model: "${model}", max_tokens: 1024, messages: [{ role: "user", content: "Hello" }] });`],
  ];
  const main = dearest(models);
  const small = cheapest(models, "messages");
  if (main && small) {
    // ANTHROPIC_DEFAULT_HAIKU_MODEL is the newer name of the background model; older versions read the other.
    out.push(["Claude Code (environment)", `export ANTHROPIC_BASE_URL="${origin}"\nexport ANTHROPIC_AUTH_TOKEN="${key}"\nexport ANTHROPIC_MODEL="${main}"\nexport ANTHROPIC_SMALL_FAST_MODEL="${small}"\nexport ANTHROPIC_DEFAULT_HAIKU_MODEL="${small}"\nclaude`]);
  }
  out.push([
    "Codex CLI (~/.codex/config.toml)",
    `model = "${model}"\nmodel_provider = "gateway"\n\n[model_providers.gateway]\nname = "gateway"\nbase_url = "${origin}/v1"\nenv_key = "GATEWAY_API_KEY"\nwire_api = "responses"\n\n# then: export GATEWAY_API_KEY="${key}"`,
  ]);
  return out;
}

export const snippetBlocks = (list: [string, string][]) => list.flatMap(([title, text]) => [h("h3", {}, title), copyBlock(text, title)]);

interface Completion {
  choices?: { message?: { content?: string | null } }[];
  usage?: { cost_usd?: number };
  error?: { message?: string };
}

/**
 * "Test this key": one call of at most 16 tokens to the cheapest chat model, sent by the page
 * itself. The page is served by the gateway, so the call is same-origin and needs no CORS on /v1.
 * It shows the answer, what it cost and the balance after it.
 */
export function testButton(key: string, models: PricedModel[], out: HTMLElement): HTMLElement {
  const model = cheapest(models, "chat.completions");
  if (!model) return h("span", {});
  const b = h("button", { type: "button" }, "Test this key");
  b.addEventListener("click", async () => {
    b.disabled = true;
    out.replaceChildren(h("p", { class: "muted" }, `Asking ${model}…`));
    try {
      const res = await fetch("/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model, max_tokens: 16, messages: [{ role: "user", content: "Say hello in five words." }] }),
      });
      const data = (await res.json()) as Completion;
      if (!res.ok) throw new ApiError(res.status, "", data.error?.message ?? `HTTP ${res.status}`, res.headers.get("x-gateway-request-id"), "POST /v1/chat/completions");
      const me = await api<AccountView>("GET", "/api/me");
      out.replaceChildren(
        h("p", {}, "Answer: ", h("q", { "data-testid": "test-answer" }, data.choices?.[0]?.message?.content ?? "")),
        h("p", {}, `Cost: `, h("span", { "data-testid": "test-cost" }, usd(data.usage?.cost_usd)), " · balance now ", h("span", { "data-testid": "test-balance" }, usd(me.balance_usd))),
      );
    } catch (e) {
      out.replaceChildren(h("p", { class: "error", role: "alert" }, errorText(e)));
    } finally {
      b.disabled = false;
    }
  });
  return b;
}
