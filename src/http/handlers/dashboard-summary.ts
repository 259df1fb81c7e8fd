import { invalidRequest } from "../../core/errors.ts";
import { nanoToUsd } from "../../core/money.ts";
import { isoTime, readIsoTime } from "../../core/time.ts";
import type { Catalog } from "../../catalog/catalog.ts";
import type { SpendFilter, SpendRow } from "../../store/reports/contract.ts";
import type { SessionCall } from "../session-guard.ts";
import { json } from "../exchange.ts";
import type { SpendSeries, UsageSummary } from "../api-schemas.ts";
import { keysOfParam, modelParam, queryOf } from "./dashboard-usage.ts";

// GET /api/usage/summary: the overview's spend at a glance (docs/dashboard.md#overview). Sums of the
// request log's integer cost_nano, turned into USD once at the end, so the figures are the exact
// sums of the rows' costs.

const DAY_MS = 24 * 3600 * 1000;
const MAX_DAYS = 366;

/** A UTC day parameter (YYYY-MM-DD) as the ms of its midnight; `fallback` when absent. */
function dayParam(q: URLSearchParams, name: string, fallback: number): number {
  const text = q.get(name);
  if (text === null) return fallback;
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) throw invalidRequest(`${name}: a UTC day such as 2026-11-01, not '${text}'`);
  const read = readIsoTime(text);
  if ("why" in read) throw invalidRequest(`${name}: ${read.why}`);
  return read.ms;
}

const dayOf = (ms: number) => isoTime(ms).slice(0, 10);

/**
 * What the period's cache reads saved: what they would have cost at the input price minus what they
 * cost, at the base prices of the route of the provider that answered (the model's first route when
 * that one is gone). Rounded down once per model and provider, so it never claims a nano too much.
 */
function cacheSaved(catalog: Catalog, rows: SpendRow[]): number {
  const reads = new Map<string, { model: string; provider: string | null; tokens: number }>();
  for (const r of rows) {
    if (r.model === null || r.cache_read_tokens === 0) continue;
    const k = `${r.model}\n${r.provider}`;
    const g = reads.get(k) ?? { model: r.model, provider: r.provider, tokens: 0 };
    g.tokens += r.cache_read_tokens;
    reads.set(k, g);
  }
  let saved = 0;
  for (const g of reads.values()) {
    const model = catalog.lookup(g.model);
    const route = model?.routes.find((x) => x.provider.id === g.provider) ?? model?.routes[0];
    if (!route) continue;
    const p = route.prices.standard.base.prices;
    // Prices are per million tokens: BigInt, as tokens × price passes 2^53 for a busy month.
    saved += Number((BigInt(g.tokens) * BigInt(p.input - p.cacheRead)) / 1_000_000n);
  }
  return saved;
}

/** One series per id over the days, in nano; labelled by `label`. */
function series(rows: SpendRow[], days: Map<string, number>, idOf: (r: SpendRow) => number | string | null, label: (id: number | string | null) => string): SpendSeries[] {
  const out = new Map<string, { id: number | string | null; nano: number[] }>();
  for (const r of rows) {
    const i = days.get(r.day);
    if (i === undefined || r.cost_nano === 0) continue;
    const id = idOf(r);
    const s = out.get(String(id)) ?? { id, nano: Array.from(days.keys(), () => 0) };
    s.nano[i]! += r.cost_nano;
    out.set(String(id), s);
  }
  const total = (s: { nano: number[] }) => s.nano.reduce((a, b) => a + b, 0);
  // The biggest spender first: it sits at the bottom of each stack and heads the legend.
  return [...out.values()].sort((a, b) => total(b) - total(a)).map((s) => ({ id: s.id, label: label(s.id), cost_usd: s.nano.map(nanoToUsd), total_usd: nanoToUsd(total(s)) }));
}

export async function getUsageSummary(c: SessionCall): Promise<Response> {
  const q = queryOf(c, ["from", "to", "model", "key_id"]);
  const accountId = c.session!.accountId;
  const now = Date.now();
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const to = dayParam(q, "to", today);
  const from = dayParam(q, "from", to - 29 * DAY_MS);
  if (from > to) throw invalidRequest(`from: ${dayOf(from)} is after to (${dayOf(to)})`);
  const count = (to - from) / DAY_MS + 1;
  if (count > MAX_DAYS) throw invalidRequest(`from: at most ${MAX_DAYS} days from 'from' to 'to', not ${count}`);

  const keys = await keysOfParam(c, q);
  const filter: SpendFilter = { accountId, keyIds: keys.map((k) => k.id) };
  const model = modelParam(c, q);
  if (model !== undefined) filter.model = model;

  // One read covers the chosen days and the fixed periods that end today: this month and the last 7 days.
  const monthStart = Date.UTC(new Date(today).getUTCFullYear(), new Date(today).getUTCMonth(), 1);
  const rows = await c.svc.spend.spend({ ...filter, since: Math.min(from, monthStart, today - 6 * DAY_MS), until: Math.max(to, today) + DAY_MS });
  const sumFrom = (start: number, end = today) => rows.reduce((n, r) => (r.day >= dayOf(start) && r.day <= dayOf(end) ? n + r.cost_nano : n), 0);
  const inPeriod = rows.filter((r) => r.day >= dayOf(from) && r.day <= dayOf(to));
  const days = new Map(Array.from({ length: count }, (_, i) => [dayOf(from + i * DAY_MS), i] as const));
  const names = new Map(keys.map((k) => [k.id, k.name || k.prefix]));

  return json<UsageSummary>({
    object: "usage_summary",
    from: dayOf(from),
    to: dayOf(to),
    spend: { today_usd: nanoToUsd(sumFrom(today)), last_7_days_usd: nanoToUsd(sumFrom(today - 6 * DAY_MS)), this_month_usd: nanoToUsd(sumFrom(monthStart)) },
    period: {
      cost_usd: nanoToUsd(inPeriod.reduce((n, r) => n + r.cost_nano, 0)),
      requests: inPeriod.reduce((n, r) => n + r.requests, 0),
      cache_read_tokens: inPeriod.reduce((n, r) => n + r.cache_read_tokens, 0),
      cache_write_tokens: inPeriod.reduce((n, r) => n + r.cache_write_tokens, 0),
      cache_saved_usd: nanoToUsd(cacheSaved(c.svc.catalog, inPeriod)),
    },
    days: [...days.keys()],
    by_model: series(inPeriod, days, (r) => r.model, (id) => (id === null ? "unknown model" : String(id))),
    by_key: series(inPeriod, days, (r) => r.key_id, (id) => (id === null ? "no key" : (names.get(Number(id)) ?? `key ${id}`))),
  });
}
