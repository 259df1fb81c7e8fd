import { Type as T } from "@sinclair/typebox";
import { invalidRequest } from "../../core/errors.ts";
import { throttleAddress } from "../../core/ip.ts";
import { formatUsd, nanoToUsd, usdToNano } from "../../core/money.ts";
import { readIsoTime } from "../../core/time.ts";
import { batchView, hashOrRefuse, mintBatch } from "../../payments/codes.ts";
import { adminOnly } from "./dashboard-admin.ts";
import { meView } from "./dashboard-login.ts";
import type { SessionCall } from "../session-guard.ts";
import { json } from "../exchange.ts";
import type { CodeBatchList, NewCodeBatch, Redeemed } from "../api-schemas.ts";

// Redemption codes under /api/ (docs/dashboard.md#redemption-codes): a holder redeems one; an admin
// lists the batches and mints one. The codes' rules are payments/codes.ts's, the once-only credit
// the store's (store/codes/).

export const RedeemBody = T.Object({ code: T.String({ maxLength: 100 }) }, { additionalProperties: false });
export const CodeBatchBody = T.Object(
  {
    usd: T.Union([T.Number(), T.String()]),
    count: T.Optional(T.Integer({ minimum: 1 })),
    expires: T.Optional(T.Union([T.String(), T.Null()])),
    note: T.Optional(T.Union([T.String({ maxLength: 500 }), T.Null()])),
  },
  { additionalProperties: false },
);

/**
 * POST /api/redeem. Both throttles count the attempt before the code is looked up, so that parallel
 * guesses cannot all pass a check that has not counted them yet; a code that credits gives both back.
 */
export async function redeem(c: SessionCall): Promise<Response> {
  const t = c.dash.throttles;
  const accountId = c.session!.accountId;
  const perIp = await t.redeemPerIp.take(throttleAddress(c.clientIp() ?? "unknown"), "refused codes from this address");
  const perAccount = await t.redeemPerAccount.take(String(accountId), "refused codes for this account");
  const done = await c.svc.codes.redeem(hashOrRefuse((c.json as { code: string }).code), accountId);
  await Promise.all([t.redeemPerIp.refund(perIp), t.redeemPerAccount.refund(perAccount)]);
  await c.svc.audit.record({ actorAccountId: accountId, action: "code_redeemed", targetAccountId: accountId, detail: `batch ${done.batchId}: ${formatUsd(done.amountNano)} USD` });
  return json<Redeemed>({ ...(await meView(c.svc, accountId)), redeemed_usd: nanoToUsd(done.amountNano) });
}

export const listCodeBatches = adminOnly(async (c) => json<CodeBatchList>({ object: "list", data: (await c.svc.codes.batches()).map((b) => batchView(b)) }));

/** POST /api/admin/codes: a batch minted by the admin; the codes are in this answer only. */
export const createCodeBatch = adminOnly(async (c, adminId) => {
  const b = c.json as { usd: number | string; count?: number; expires?: string | null; note?: string | null };
  let amountNano: number;
  try {
    amountNano = usdToNano(b.usd);
  } catch (e) {
    throw invalidRequest(`usd: ${(e as Error).message}`);
  }
  let expiresAt: number | null = null;
  if (b.expires) {
    const read = readIsoTime(b.expires);
    if ("why" in read) throw invalidRequest(`expires: ${read.why}`);
    expiresAt = read.ms;
  }
  const count = b.count ?? 1;
  const { batch, codes } = await mintBatch(c.svc.codes, { amountNano, count, expiresAt, note: b.note?.trim() || null, createdByAccountId: adminId });
  await c.svc.audit.record({ actorAccountId: adminId, action: "codes_created", detail: `batch ${batch.id}: ${count} × ${formatUsd(amountNano)} USD` });
  return json<NewCodeBatch>({ object: "code_batch", ...batchView(batch), codes }, 201);
});
