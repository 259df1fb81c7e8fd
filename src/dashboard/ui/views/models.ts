import { api } from "../api.ts";
import type { Ctx } from "../context.ts";
import { field, h, heading, select, table } from "../dom.ts";
import { snippetBlocks, snippets } from "./connect.ts";
import type { KeyList, PricedModel, Pricing } from "../../../http/api-schemas.ts";

// The public catalog with prices, the base URLs, and a snippet per client filled in with the chosen
// key's prefix (the whole key was shown once; the holder pastes it over the prefix).

const price = (n: number | undefined) => (n === undefined ? "—" : `$${n}`);

function priceRows(models: PricedModel[]) {
  return models.map((m) => [
    h("code", {}, m.id),
    m.aliases.join(", "),
    m.endpoints.join(", "),
    m.image_output !== undefined
      ? `${price(m.input)} in · ${price(m.image_input)} image in · ${price(m.image_output)} image out (${price(m.per_image)} per image without usage)`
      : m.per_image !== undefined ? `${price(m.per_image)} per image` : `${price(m.input)} in · ${price(m.output)} out · ${price(m.cache_read)} cache read · ${price(m.cache_write)} cache write`,
  ]);
}

export async function modelsView(_ctx: Ctx): Promise<HTMLElement> {
  const [pricing, keys] = await Promise.all([api<Pricing>("GET", "/api/pricing"), api<KeyList>("GET", "/api/keys")]);
  const origin = location.origin;
  const active = keys.data.filter((k) => k.status === "active");
  const textModels = pricing.models.filter((m) => m.per_image === undefined);
  const keyPick = select("key", active.length ? active.map((k) => [k.prefix, `${k.prefix}… ${k.name ?? ""}`]) : [["gk_sk_YOUR_KEY", "no key yet"]]);
  const modelPick = select("model", textModels.map((m) => [m.id, m.id]));
  const out = h("div", { "aria-live": "polite" });
  const draw = () => {
    const key = active.length ? `${keyPick.value}…` : keyPick.value;
    out.replaceChildren(...snippetBlocks(snippets(origin, key, modelPick.value, pricing.models)));
  };
  keyPick.addEventListener("change", draw);
  modelPick.addEventListener("change", draw);
  draw();
  return h(
    "section",
    {},
    heading("Models and prices"),
    table(`Catalog ${pricing.catalog_version}, USD per 1M tokens`, ["Model", "Aliases", "Endpoints", "Price"], priceRows(pricing.models)),
    h("h2", {}, "Base URLs"),
    h(
      "ul",
      {},
      h("li", {}, "OpenAI SDK, Codex CLI: ", h("code", {}, `${origin}/v1`)),
      h("li", {}, "Anthropic SDK, Claude Code (no /v1): ", h("code", {}, origin)),
    ),
    h("h2", {}, "Connect a client"),
    h("p", {}, "Replace the key's prefix (ending in …) with the whole key you copied when you created it."),
    h("div", { class: "row" }, field("Key", keyPick), field("Model", modelPick)),
    out,
  );
}
