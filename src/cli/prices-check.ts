import type { Catalog, Model, Route } from "../catalog/catalog.ts";
import { LIST_DATASET } from "../catalog/list-dataset.ts";
import { listMaxIn, listProvider, lookupListPrices } from "../catalog/list-prices.ts";
import { CONFIG_NAME, PRICE_CLASSES, type ModelPrices, type PriceSheet } from "../catalog/prices.ts";
import { formatUsd, table, usd, usdOrNull } from "./format.ts";

// gateway prices --check: every route's sale prices against its provider's list prices from the
// bundled dataset (docs/pricing.md#checking-your-prices-against-the-list). Exit 1 when any class is
// sold below cost.

interface CheckRow {
  table: string;
  above_input_tokens: number | null;
  class: string;
  unit: string;
  sale_usd: number;
  list_usd: number | null;
  /** The list tier that price belongs to (prompts above this many input tokens); null: the list's base price. */
  list_above_input_tokens: number | null;
  /** Where the list price came from: the dataset's key, or the class it bills this one as. */
  list_key: string | null;
  margin_usd: number | null;
  /** Margin over the list price, in percent (1 decimal); null when the list price is 0 or missing. */
  margin_pct: number | null;
  below_cost: boolean;
}

interface RouteCheck {
  model: string;
  provider: string;
  provider_kind: string;
  base_url: string | null;
  upstream_model: string;
  status: "listed" | "unknown provider" | "not in the price list" | "not billed";
  list_provider: string | null;
  list_model: string | null;
  rows: CheckRow[];
  notes: string[];
}

export interface CheckReport {
  dataset: { name: string; version: string };
  /** Rows sold below the list price, over every route. */
  below_cost: number;
  routes: RouteCheck[];
}

const UNIT = (cls: string): string => (cls === "web_search" ? "per 1,000 searches" : "per 1M tokens");

/** The base table and its long-context tiers, each with the prompt range it prices: (above, upTo]. */
function standardTables(p: ModelPrices): { name: string; above: number | null; upTo: number | null; sheet: PriceSheet }[] {
  const ascending = [...p.standard.tiers].reverse();
  return [
    { name: "base", above: null, upTo: ascending[0]?.above ?? null, sheet: p.standard.base },
    ...ascending.map((t, i) => ({ name: `above ${t.above} input tokens`, above: t.above, upTo: ascending[i + 1]?.above ?? null, sheet: t as PriceSheet })),
  ];
}

function checkRoute(m: Model, r: Route): RouteCheck {
  const head = { model: m.id, provider: r.provider.id, provider_kind: r.provider.kind, base_url: r.provider.base_url ?? null, upstream_model: r.upstreamModel };
  const none = { list_provider: null, list_model: null, rows: [] as CheckRow[] };
  if (r.provider.kind === "demo") return { ...head, ...none, status: "not billed", notes: ["the demo provider answers in-process and bills nothing"] };
  const found = lookupListPrices(listProvider(r.provider.kind, r.provider.base_url), r.upstreamModel);
  if (found.status === "unknown provider") {
    return { ...head, ...none, status: found.status, notes: [`no provider in ${LIST_DATASET.name} serves ${r.provider.base_url ?? "this route"}`] };
  }
  if (found.status === "not in the price list") {
    return { ...head, ...none, list_provider: found.provider.id, status: found.status, notes: [found.why ? `${found.provider.name}'s entry for '${r.upstreamModel}' is unreadable: ${found.why}` : `${found.provider.name} lists no model '${r.upstreamModel}'`] };
  }
  const { listed } = found;
  const rows: CheckRow[] = [];
  for (const t of standardTables(r.prices)) {
    for (const cls of PRICE_CLASSES) {
      const sale = t.sheet.prices[cls];
      const list = listed.prices[cls];
      const max = list ? listMaxIn(list, t.above, t.upTo, listed.contextWindow) : null;
      const listNano = max?.nano ?? null;
      const margin = listNano === null ? null : sale - listNano;
      rows.push({
        table: t.name,
        above_input_tokens: t.above,
        class: CONFIG_NAME[cls],
        unit: UNIT(CONFIG_NAME[cls]),
        sale_usd: usd(sale),
        list_usd: usdOrNull(listNano),
        list_above_input_tokens: max?.above ?? null,
        list_key: list?.from ?? null,
        margin_usd: usdOrNull(margin),
        margin_pct: margin === null || !listNano ? null : Math.round((margin / listNano) * 1000) / 10,
        below_cost: margin !== null && margin < 0,
      });
    }
  }
  const notes: string[] = [];
  const services = Object.keys(r.prices.service);
  if (services.length) notes.push(`service tiers ${services.join(", ")}: ${LIST_DATASET.name} lists no service-tier prices, not compared`);
  if (listed.unbilled.length) notes.push(`the provider also bills ${listed.unbilled.join(", ")}, which no gateway class charges`);
  return { ...head, status: "listed", list_provider: listed.provider.id, list_model: listed.model.id, rows, notes };
}

const textModels = (c: Catalog): Model[] => c.models.filter((m) => m.endpoints.some((e) => e === "messages" || e === "chat.completions"));

export function checkPrices(catalog: Catalog): CheckReport {
  const routes = textModels(catalog).flatMap((m) => m.routes.map((r) => checkRoute(m, r)));
  return { dataset: LIST_DATASET, below_cost: routes.reduce((n, r) => n + r.rows.filter((x) => x.below_cost).length, 0), routes };
}

const text = (v: number | null): string => (v === null ? "-" : formatUsd(Math.round(v * 1e9)));

/** The report for people: one table per model route, then one line saying whether anything is sold below cost. */
export function formatCheck(report: CheckReport): string {
  const out: string[] = [`list prices: ${report.dataset.name} ${report.dataset.version} (bundled at build time)`];
  for (const r of report.routes) {
    const at = r.list_model ? `: ${r.list_provider} ${r.list_model}` : `: ${r.status}`;
    out.push("", `${r.model} via ${r.provider}/${r.upstream_model} (${r.provider_kind}${r.base_url ? `, ${r.base_url}` : ""})${at}`);
    if (r.rows.length) {
      const rows = r.rows.map((x) => [
        x.table, x.class, text(x.sale_usd), text(x.list_usd), text(x.margin_usd),
        x.margin_pct === null ? "-" : `${x.margin_pct}%`, (x.below_cost ? "BELOW COST" : x.list_usd === null ? "not listed" : "ok") + (x.list_above_input_tokens === null || x.list_above_input_tokens === x.above_input_tokens ? "" : ` (list above ${x.list_above_input_tokens} input tokens)`),
      ]);
      out.push(table(["table", "class", "sale_usd", "list_usd", "margin_usd", "margin", "check"], rows));
    }
    for (const n of r.notes) out.push(`  note: ${n}`);
  }
  out.push("", report.below_cost ? `${report.below_cost} price(s) below the provider's list price (exit 1)` : "no price below the provider's list price");
  return out.join("\n");
}
