import { nanoToUsd } from "../../core/money.ts";
import { isoTime } from "../../core/time.ts";
import type { TotalsCell as StoredCell, TotalsRow } from "../../store/admin/contract.ts";
import type { AdminTotals, TotalsCell } from "../api-schemas.ts";
import { json } from "../exchange.ts";
import { adminOnly } from "./dashboard-admin.ts";

// GET /api/admin/totals: the whole gateway's spend and error rate today and this month (UTC), per
// model and per route's provider, summed from the request log (docs/dashboard.md#admin).

const cell = (c: StoredCell): TotalsCell => ({
  requests: c.requests,
  failed: c.failed,
  // The share of requests that failed: a refusal (4xx) counts as much as an upstream's failure.
  error_rate: c.requests === 0 ? 0 : c.failed / c.requests,
  spend_usd: nanoToUsd(c.costNano),
});

const add = (a: StoredCell, b: StoredCell): StoredCell => ({ requests: a.requests + b.requests, failed: a.failed + b.failed, costNano: a.costNano + b.costNano });
const ZERO: StoredCell = { requests: 0, failed: 0, costNano: 0 };

/** The rows summed per `key`, the month's biggest spend first. */
function slices(rows: TotalsRow[], key: (r: TotalsRow) => string | null) {
  const by = new Map<string | null, { today: StoredCell; month: StoredCell }>();
  for (const r of rows) {
    const k = key(r);
    const s = by.get(k) ?? { today: ZERO, month: ZERO };
    by.set(k, { today: add(s.today, r.today), month: add(s.month, r.month) });
  }
  return [...by].sort((a, b) => b[1].month.costNano - a[1].month.costNano || b[1].month.requests - a[1].month.requests).map(([k, s]) => ({ key: k, today: cell(s.today), month: cell(s.month) }));
}

export const getTotals = adminOnly(async (c) => {
  const now = new Date();
  const dayStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const monthStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
  const rows = await c.svc.adminQueries.totals(monthStart, dayStart);
  return json<AdminTotals>({
    day_start: isoTime(dayStart)!,
    month_start: isoTime(monthStart)!,
    today: cell(rows.reduce((s, r) => add(s, r.today), ZERO)),
    month: cell(rows.reduce((s, r) => add(s, r.month), ZERO)),
    by_model: slices(rows, (r) => r.model).map(({ key, ...s }) => ({ model: key, ...s })),
    by_provider: slices(rows, (r) => r.provider).map(({ key, ...s }) => ({ provider: key, ...s })),
  });
});
