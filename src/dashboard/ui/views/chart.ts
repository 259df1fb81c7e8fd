import uPlot from "uplot";
import { api } from "../api.ts";
import { errorText, field, h, loading, select, usd } from "../dom.ts";
import type { DailyUsage } from "../../../http/api-schemas.ts";

// The daily spend chart (uPlot, bundled): one line per key or per model over the last 30 days, and
// the same figures as a table for whoever cannot see the chart.

const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563", "#ca8a04"];

function draw(box: HTMLElement, u: DailyUsage): void {
  const xs = u.days.map((d) => Date.parse(d + "T00:00:00Z") / 1000);
  const width = Math.max(280, Math.min(box.clientWidth || 640, 960));
  const opts: uPlot.Options = {
    width,
    height: 240,
    scales: { x: { time: true } },
    series: [{}, ...u.series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], width: 2, value: (_: uPlot, v: number | null) => usd(v) }))],
    axes: [{}, { values: (_: uPlot, ticks: number[]) => ticks.map((t) => usd(t)), size: 70 }],
  };
  box.replaceChildren();
  new uPlot(opts, [xs, ...u.series.map((s) => s.cost_usd)], box);
}

function summary(u: DailyUsage): HTMLElement {
  const total = u.total_usd.reduce((a, b) => a + b, 0);
  return h(
    "details",
    {},
    h("summary", {}, `Spend per ${u.by} over ${u.days.length} days: ${usd(total)} in all`),
    h("ul", {}, ...u.series.map((s) => h("li", {}, `${s.label}: ${usd(s.cost_usd.reduce((a, b) => a + b, 0))}`))),
  );
}

export function spendChart(): HTMLElement {
  const by = select("by", [["key", "per key"], ["model", "per model"]]);
  const box = h("div", { class: "chart", role: "img", "aria-label": "Daily spend chart", "aria-busy": "true" }, loading("Loading the chart…"));
  const text = h("div", {});
  const load = async () => {
    const u = await api<DailyUsage>("GET", `/api/usage/daily?days=30&by=${by.value}`);
    box.setAttribute("aria-label", `Daily spend per ${u.by}, last ${u.days.length} days`);
    draw(box, u);
    box.removeAttribute("aria-busy");
    text.replaceChildren(summary(u));
  };
  const fail = (e: unknown) => {
    box.removeAttribute("aria-busy");
    box.replaceChildren(h("p", { class: "error", role: "alert" }, errorText(e), " ", h("button", { type: "button", onclick: () => load().catch(fail) }, "Retry")));
  };
  by.addEventListener("change", () => load().catch(fail));
  // Drawn once the section is in the page, so the chart can take its width.
  requestAnimationFrame(() => load().catch(fail));
  return h("section", {}, h("h2", {}, "Daily spend"), field("Show", by), box, text);
}
