import { api } from "../api.ts";
import { h, table, usd } from "../dom.ts";
import type { AdminTotals, TotalsCell } from "../../../http/api-schemas.ts";

// The admin page's totals: the whole gateway's spend, requests and error rate today and this month
// (UTC), and this month per model and per provider, from the request log.

const PERCENT = new Intl.NumberFormat("en-US", { style: "percent", maximumFractionDigits: 1 });
const rate = (c: TotalsCell) => (c.requests === 0 ? "—" : PERCENT.format(c.error_rate));

const figure = (label: string, c: TotalsCell, id: string) =>
  h("div", { class: "figure" }, h("dt", {}, label), h("dd", { "data-testid": id }, usd(c.spend_usd)), h("dt", {}, `${c.requests} requests · ${rate(c)} failed`));

const slice = (name: string | null, s: { today: TotalsCell; month: TotalsCell }) => [
  name ?? "(refused before a route)",
  usd(s.today.spend_usd),
  usd(s.month.spend_usd),
  String(s.month.requests),
  rate(s.month),
];

export async function totalsSection(): Promise<HTMLElement> {
  const t = await api<AdminTotals>("GET", "/api/admin/totals");
  const head = ["Today", "This month", "Requests (month)", "Error rate (month)"];
  const layout = { oneLine: true, numeric: [1, 2, 3, 4] };
  return h(
    "section",
    { "aria-label": "Totals" },
    h("h2", {}, "Totals"),
    h("dl", { class: "figures" }, figure("Spend today (UTC)", t.today, "total-today"), figure("Spend this month (UTC)", t.month, "total-month")),
    table("By model", ["Model", ...head], t.by_model.map((m) => slice(m.model, m)), "No requests this month.", layout),
    table("By provider", ["Provider", ...head], t.by_provider.map((p) => slice(p.provider, p)), "No requests this month.", layout),
  );
}
