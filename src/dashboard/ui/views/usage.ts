import { api, query } from "../api.ts";
import type { Ctx } from "../context.ts";
import { field, h, heading, loading, type Column, input, messages, onSubmit, select, table, usd, when } from "../dom.ts";
import type { KeyList, KeyView, LedgerEntry, LedgerPage, Pricing, RequestPage, RequestRow, UsageSummary } from "../../../http/api-schemas.ts";
import { stackedChart } from "./spend.ts";
import { requestDetail } from "./request-detail.ts";

// Recent requests (never their content) with filters, paging and a CSV export; the ledger with the
// charges grouped per day, and its CSV; the spend per day as the overview draws it (docs/dashboard.md#overview),
// under the same filters as the requests but their status.

const tokens = (n: number | null) => (n === null ? "—" : String(n));

const KIND: Record<string, string> = {
  registration_credit: "Starting credit",
  top_up: "Top-up",
  operator_credit: "Credit from the operator",
  redemption: "Redeemed code",
  operator_debit: "Debit by the operator",
  charges: "Charges",
};

/** A row's cells; its request id opens the detail view in `show`. */
const requestCells = (show: (r: RequestRow) => void) => (r: RequestRow) => {
  return [
    when(r.created_at),
    h("button", { type: "button", class: "link", "aria-label": `Details of ${r.request_id}`, onclick: () => show(r) }, h("code", {}, r.request_id)),
    r.key_prefix ? `${r.key_prefix}${r.key_name ? ` (${r.key_name})` : ""}` : "—",
    r.model ?? "—",
    r.path,
    h("span", { class: r.status < 400 ? "badge active" : "badge failed" }, r.error_code ? `${r.status} ${r.error_code}` : String(r.status)),
    `${tokens(r.input_tokens)} / ${tokens(r.output_tokens)}`,
    usd(r.cost_usd),
  ];
};

function ledgerCells(e: LedgerEntry) {
  const label = KIND[e.kind] ?? e.kind;
  const detail = "day" in e ? `${e.day}: ${e.count} request${e.count === 1 ? "" : "s"}` : [e.note, e.external_ref].filter(Boolean).join(" · ");
  return [when(e.created_at), label, detail, usd(e.amount_usd)];
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * The summary's days for the requests' filters: `since` is the first day; `until` is exclusive (the
 * requests before it), so a date's day is not charted, a time's day is. Anything else goes as it
 * came, for the server to refuse with its own message.
 */
export function chartDays(since: string | null, until: string | null): { from: string | null; to: string | null } {
  const day = (v: string | null, last: boolean) => {
    if (!v) return null;
    const ms = Date.parse(DAY.test(v) ? v + "T00:00:00Z" : v);
    if (Number.isNaN(ms)) return v;
    return utcDay(last ? ms - 1 : ms);
  };
  return { from: day(since, false), to: day(until, true) };
}

/** The spend per day under the filters: loaded after the view, with its own spinner and refusal. */
function spendPerDay(f: Record<string, string | null>): HTMLElement {
  const days = chartDays(f.since ?? null, f.until ?? null);
  const title = h("h2", {}, "Spend per day");
  if (days.from && days.to && DAY.test(days.from) && DAY.test(days.to) && days.to < days.from) {
    // Until on the From day (it is left out, as for the requests): no day to chart, and no refusal.
    return h("section", { "aria-label": "Spend per day" }, title, h("p", { class: "muted", "data-testid": "spend-empty" }, "No days to show: Until is the first day left out."));
  }
  const box = h("div", { "aria-busy": "true" }, loading("Loading the spend per day…"));
  const load = async () => {
    box.setAttribute("aria-busy", "true");
    const s = await api<UsageSummary>("GET", "/api/usage/summary" + query({ ...days, model: f.model, key_id: f.key_id })).finally(() =>
      box.removeAttribute("aria-busy"),
    );
    box.replaceChildren(h("p", { class: "hint" }, `${s.from} to ${s.to}, UTC days: `, h("span", { class: "num", "data-testid": "usage-spend-period" }, usd(s.period.cost_usd))), stackedChart(s));
  };
  const fail = (e: unknown) => {
    const msg = messages();
    msg.fail(e);
    box.replaceChildren(msg.el, h("button", { type: "button", onclick: () => load().catch(fail) }, "Retry"));
  };
  load().catch(fail);
  return h("section", { "aria-label": "Spend per day" }, title, box);
}

/**
 * A list that pages backwards with its `next` cursor: "Older <what>" appends the next page (named
 * after its list: the page has two, and two buttons both called "Older" read the same).
 */
function paged<T>(
  caption: string,
  what: string,
  head: Column[],
  cells: (row: T) => unknown[],
  fetchPage: (before: string | null) => Promise<{ data: T[]; next: string | null }>,
  empty: string,
): HTMLElement {
  const msg = messages();
  // The message is in the box from the start: a first page refused (a bad filter) shows why.
  const box = h("div", { "aria-busy": "true" }, loading(`Loading ${caption.toLowerCase()}…`), msg.el);
  const rows: T[] = [];
  const more = async (before: string | null) => {
    box.setAttribute("aria-busy", "true");
    const page = await fetchPage(before).finally(() => box.removeAttribute("aria-busy"));
    rows.push(...page.data);
    const next = page.next ?? null;
    box.replaceChildren(
      table(caption, head, rows.map((r) => cells(r) as Node[]), empty),
      next === null ? "" : h("button", { type: "button", onclick: () => more(String(next)).catch(msg.fail) }, `Older ${what}`),
      msg.el,
    );
  };
  more(null).catch((e) => {
    box.querySelector(".loading")?.remove();
    msg.fail(e);
  });
  return box;
}

function filters(keys: KeyView[], pricing: Pricing, current: URLSearchParams): HTMLFormElement {
  const value = (k: string) => current.get(k) ?? "";
  return h(
    "form",
    { "aria-label": "Filter requests", class: "row" },
    field("Key", select("key_id", [["", "any key"], ...keys.map((k): [string, string] => [String(k.id), `${k.prefix} ${k.name ?? ""}`])], value("key_id"))),
    field("Model", select("model", [["", "any model"], ...pricing.models.map((m): [string, string] => [m.id, m.id])], value("model"))),
    field("Status", input({ name: "status", value: value("status"), placeholder: "2xx, 402, failures…", size: 8 })),
    field("From", input({ type: "date", name: "since", value: value("since") })),
    field("Until", input({ type: "date", name: "until", value: value("until") })),
    h("button", { type: "submit" }, "Filter"),
  );
}

export async function usageView(ctx: Ctx): Promise<HTMLElement> {
  const [keys, pricing] = await Promise.all([api<KeyList>("GET", "/api/keys"), api<Pricing>("GET", "/api/pricing")]);
  const f = Object.fromEntries(["key_id", "model", "status", "since", "until"].map((k) => [k, ctx.params.get(k)]));
  const form = filters(keys.data, pricing, ctx.params);
  const msg = messages();
  // The filters live in the address (#/usage?model=…), so a filtered view can be bookmarked.
  onSubmit(form, msg, async (d) => ctx.go("usage" + query(Object.fromEntries([...d.entries()].map(([k, v]) => [k, String(v)])))));
  const detail = h("div", {});
  const show = (r: RequestRow) => {
    detail.replaceChildren(requestDetail(r, pricing));
    (detail.firstElementChild as HTMLElement).focus();
  };
  const failures = ctx.params.get("status") === "failures";
  const requests = paged<RequestRow>(
    "Recent requests",
    "requests",
    // A phone keeps what a row is read for: when, which request, whether it worked, what it cost.
    ["Time", "Request id", { label: "Key", optional: true }, { label: "Model", optional: true }, { label: "Route", optional: true }, "Status", { label: "Tokens in / out", optional: true }, "Cost"],
    requestCells(show),
    (before) => api<RequestPage>("GET", "/api/requests" + query({ ...f, limit: 50, before })),
    "No requests match.",
  );
  const ledger = paged<LedgerEntry>(
    "Ledger",
    "ledger entries",
    ["Time", "Entry", "Detail", "Amount"],
    ledgerCells,
    (before) => api<LedgerPage>("GET", "/api/ledger" + query({ limit: 50, before })),
    "No entries yet.",
  );
  return h(
    "section",
    {},
    heading("Usage"),
    form,
    msg.el,
    spendPerDay(f),
    h("h2", {}, "Requests"),
    h(
      "p",
      {},
      failures ? h("a", { href: "#/usage" }, "All requests") : h("a", { href: "#/usage" + query({ status: "failures" }) }, "Failures only"),
      " · ",
      h("a", { href: "/api/requests.csv" + query(f), download: "requests.csv" }, "Export these requests as CSV"),
    ),
    requests,
    detail,
    h("h2", {}, "Ledger"),
    h("p", {}, h("a", { href: "/api/ledger.csv", download: "ledger.csv" }, "Export the ledger as CSV")),
    ledger,
  );
}
