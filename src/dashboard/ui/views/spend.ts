import { api, query } from "../api.ts";
import type { Ctx } from "../context.ts";
import { field, h, input, messages, onSubmit, select, table, usd } from "../dom.ts";
import type { KeyView, SpendSeries, UsageSummary } from "../../../http/api-schemas.ts";

// Spend at a glance on the overview (docs/dashboard.md#overview): today, the last 7 days and this
// month; a stacked bar per day by model or by key, drawn as SVG by hand (no chart library: it would
// weigh more than the rest of the dashboard), with a legend and the same figures as a table; the
// cache's tokens and what it saved. The filters live in the address, as on the usage page.

const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563", "#ca8a04"];
const SVG = "http://www.w3.org/2000/svg";
const FILTERS = ["from", "to", "model", "key_id"] as const;

function svg(tag: string, attrs: Record<string, string | number>, ...children: (Node | string)[]): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  el.append(...children);
  return el;
}

const figure = (label: string, value: string, id: string) => h("div", { class: "figure" }, h("dt", {}, label), h("dd", { class: "num", "data-testid": id }, value));
const color = (i: number) => COLORS[i % COLORS.length]!;

/** A legend's colour key. Coloured through the style object: the page's policy refuses style attributes (dashboard/page.ts). */
function swatch(background: string): HTMLElement {
  const el = h("span", { class: "swatch" });
  el.style.background = background;
  return el;
}
const count = (n: number) => n.toLocaleString("en-US");

/** One bar per day, the series stacked in their order (the biggest at the bottom); each part titled. */
function bars(s: UsageSummary, series: SpendSeries[], by: string): SVGElement {
  // As wide as the page's main column, so the SVG is drawn near 1:1 and its 11 px labels stay 11 px on a phone.
  const W = Math.round(Math.min(1068, Math.max(300, window.innerWidth - 32))), H = 220, left = 76, bottom = 22, top = 8;
  const totals = s.days.map((_, d) => series.reduce((n, x) => n + x.cost_usd[d]!, 0));
  const max = Math.max(...totals) || 1;
  const step = (W - left) / s.days.length;
  const y = (v: number) => ((H - bottom - top) * v) / max;
  const parts: SVGElement[] = [];
  s.days.forEach((day, d) => {
    let base = H - bottom;
    series.forEach((x, i) => {
      const v = x.cost_usd[d]!;
      if (v === 0) return;
      // At least a pixel, so a day's small spend beside a big one still shows.
      const height = Math.max(1, y(v));
      base -= height;
      parts.push(svg("rect", { x: left + d * step + step * 0.15, y: base, width: Math.max(1, step * 0.7), height, fill: color(i), "data-day": day }, svg("title", {}, `${day} · ${x.label}: ${usd(v)}`)));
    });
  });
  const label = (x: number, yy: number, text: string, anchor: string) => svg("text", { x, y: yy, "text-anchor": anchor, "font-size": 11, fill: "currentColor" }, text);
  const total = totals.reduce((a, b) => a + b, 0);
  return svg(
    "svg",
    { viewBox: `0 0 ${W} ${H}`, role: "img", class: "bars", "aria-label": `Spend per day by ${by} from ${s.from} to ${s.to}: ${usd(total)} in all; the table below has each day's figures.` },
    svg("line", { x1: left, x2: W, y1: H - bottom, y2: H - bottom, stroke: "currentColor", "stroke-opacity": 0.4 }),
    label(left - 6, top + 10, usd(max), "end"),
    label(left - 6, H - bottom, usd(0), "end"),
    label(left, H - 6, s.days[0]!, "start"),
    label(W, H - 6, s.days.at(-1)!, "end"),
    ...parts,
  );
}

function chart(s: UsageSummary, by: "model" | "key"): HTMLElement {
  const series = by === "model" ? s.by_model : s.by_key;
  if (series.length === 0) {
    return h("p", { class: "muted", "data-testid": "spend-empty" }, s.period.requests === 0 ? "No spend yet in this period: requests you make with your keys show here." : "No spend in this period: its requests cost nothing.");
  }
  const legend = h("ul", { class: "legend" }, ...series.map((x, i) => h("li", {}, swatch(color(i)), `${x.label} `, h("span", { class: "num" }, usd(x.total_usd)))));
  const spent = s.days.flatMap((day, d) => (series.some((x) => x.cost_usd[d]! > 0) ? [[day, ...series.map((x) => usd(x.cost_usd[d]!))]] : []));
  return h(
    "div",
    { "data-testid": "spend-chart" },
    bars(s, series, by),
    legend,
    h("details", { class: "spend-table" }, h("summary", {}, "The figures as a table"), table(`Spend per day by ${by}`, ["Day", ...series.map((x) => x.label)], spent)),
  );
}

/** The chart with its Stack by choice (model first, or key): the overview's and the usage page's. */
export function stackedChart(s: UsageSummary): HTMLElement {
  const by = select("stack", [["model", "model"], ["key", "key"]]);
  const drawn = h("div", {}, chart(s, "model"));
  by.addEventListener("change", () => drawn.replaceChildren(chart(s, by.value as "model" | "key")));
  return h("div", {}, h("div", { class: "row" }, field("Stack by", by)), drawn);
}

function filters(keys: KeyView[], models: string[], p: URLSearchParams): HTMLFormElement {
  const value = (k: string) => p.get(k) ?? "";
  return h(
    "form",
    { "aria-label": "Filter spend", class: "row" },
    field("From", input({ type: "date", name: "from", value: value("from") })),
    field("To", input({ type: "date", name: "to", value: value("to") })),
    field("Model", select("model", [["", "any model"], ...models.map((m): [string, string] => [m, m])], value("model"))),
    field("Key", select("key_id", [["", "any key"], ...keys.map((k): [string, string] => [String(k.id), `${k.prefix} ${k.name ?? ""}`])], value("key_id"))),
    h("button", { type: "submit" }, "Show"),
  );
}

/** The section; `choices` are the filters' keys and models, read while the summary is. */
export async function spendSection(ctx: Ctx, choices: Promise<{ keys: KeyView[]; models: string[] }>): Promise<HTMLElement> {
  const msg = messages();
  const summary = api<UsageSummary>("GET", "/api/usage/summary" + query(Object.fromEntries(FILTERS.map((k) => [k, ctx.params.get(k)]))));
  // Settled now, so a refusal waiting for the choices is never an unhandled rejection.
  summary.catch(() => {});
  const { keys, models } = await choices;
  const form = filters(keys, models, ctx.params);
  onSubmit(form, msg, async (d) => ctx.go(query(Object.fromEntries([...d.entries()].map(([k, v]) => [k, String(v)])))));
  const box = h("div", {}, msg.el);
  let s: UsageSummary;
  try {
    s = await summary;
  } catch (e) {
    // A bad filter in the address: the form stays, to correct it.
    msg.fail(e);
    return h("section", { "aria-label": "Spend" }, h("h2", {}, "Spend"), form, box);
  }
  return h(
    "section",
    { "aria-label": "Spend" },
    h("h2", {}, "Spend"),
    h("dl", { class: "figures" }, figure("Today", usd(s.spend.today_usd), "spend-today"), figure("Last 7 days", usd(s.spend.last_7_days_usd), "spend-7d"), figure("This month", usd(s.spend.this_month_usd), "spend-month")),
    h("p", { class: "hint" }, "UTC days, under the model and key filters below; the chart and the cache follow the dates too."),
    form,
    box,
    h("h3", {}, `Per day, ${s.from} to ${s.to}: `, h("span", { class: "num", "data-testid": "spend-period" }, usd(s.period.cost_usd))),
    stackedChart(s),
    h("h3", {}, "Prompt cache"),
    h(
      "dl",
      { class: "figures" },
      figure("Tokens read from cache", count(s.period.cache_read_tokens), "cache-read"),
      figure("Tokens written to cache", count(s.period.cache_write_tokens), "cache-write"),
      figure("Saved by caching", usd(s.period.cache_saved_usd), "cache-saved"),
    ),
    h("p", { class: "hint" }, "Saved: what the cache reads would have cost at the model's input price, minus what they cost."),
  );
}
