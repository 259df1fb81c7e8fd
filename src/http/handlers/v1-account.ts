import { findNonTextContent, unsupportedContent } from "../../dialects/content-check.ts";
import { nanoToUsd } from "../../core/money.ts";
import { resolveModel } from "../../relay/text.ts";
import { bodySizeOf } from "../../relay/charge.ts";
import { BODY_LIMIT_BYTES } from "../../wire/body-limit.ts";
import { json, type KeyedCall } from "../exchange.ts";
import type { BudgetSpend } from "../../store/ledger/contract.ts";
import { isoTime } from "../../core/time.ts";
import type { BudgetView } from "../api-schemas.ts";

// The key's own answers under /v1 that reach no upstream: GET /v1/me (what the key may still spend)
// and POST /v1/messages/count_tokens (the free estimate). The dashboard's login and account, under
// /api/, are dashboard-account.ts's.

/** The low-balance notice of GET /v1/me and GET /api/me: `below` while spendable is under the holder's threshold. */
export function lowBalanceView(thresholdNano: number | null, spendableNano: number) {
  return {
    threshold_usd: thresholdNano === null ? null : nanoToUsd(thresholdNano),
    below: thresholdNano !== null && spendableNano < thresholdNano,
  };
}

/**
 * A key's budget that resets, in GET /v1/me and the dashboard: its spend in the current UTC period,
 * what running requests hold, what is left, when it resets, and `reached` (a request was refused for
 * it in this period: the "budget reached" notice).
 */
export function budgetView(b: BudgetSpend, reservedNano: number): BudgetView {
  return {
    limit_usd: nanoToUsd(b.nano),
    period: b.period,
    spent_usd: nanoToUsd(b.spentNano),
    reserved_usd: nanoToUsd(reservedNano),
    remaining_usd: nanoToUsd(Math.max(b.nano - b.spentNano - reservedNano, 0)),
    resets_at: isoTime(b.resetsAt),
    reached: b.reached,
  };
}

/** GET /v1/me: what this key may still spend, and its limits. */
export async function me(call: KeyedCall): Promise<Response> {
  const { svc, key } = call;
  const [found, b, profile] = await Promise.all([svc.ledger.keySpend(key.id), svc.ledger.balance(key.accountId), svc.accounts.profileOf(key.accountId)]);
  // Keys are never deleted, and this one was just looked up.
  const spend = found!;
  const quota = key.quotaNano;
  const spendable = Math.max(b.spendableNano, 0);
  return json({
    object: "me",
    key: {
      id: key.id,
      name: key.name,
      prefix: key.prefix,
      models: key.models,
      expires_at: key.expiresAt === null ? null : new Date(key.expiresAt).toISOString(),
      quota: {
        limit_usd: quota === null ? null : nanoToUsd(quota),
        spent_usd: nanoToUsd(spend.spentNano),
        reserved_usd: nanoToUsd(spend.reservedNano),
        remaining_usd: quota === null ? null : nanoToUsd(Math.max(quota - spend.spentNano - spend.reservedNano, 0)),
      },
      budget: spend.budget ? budgetView(spend.budget, spend.reservedNano) : null,
    },
    balance: {
      balance_usd: nanoToUsd(b.balanceNano),
      reserved_usd: nanoToUsd(b.reservedNano),
      spendable_usd: nanoToUsd(spendable),
    },
    low_balance: lowBalanceView(profile?.lowBalanceNano ?? null, spendable),
    limits: {
      rpm: key.rpm ?? svc.config.defaultRpm,
      count_tokens_rpm: svc.config.countTokensRpm,
      // All the account's keys together; null: no account-wide limit.
      account_rpm: svc.config.accountRpm,
      max_body_bytes: BODY_LIMIT_BYTES,
    },
  });
}

/**
 * POST /v1/messages/count_tokens: the byte estimate, free, no reservation; calibrated on the model's
 * settled requests once it has enough of them (ledger/calibration.ts), with its measured error.
 */
export function countTokens(call: KeyedCall): Response {
  const model = resolveModel(call, call.json.model, "messages");
  const hit = findNonTextContent("messages", call.json);
  if (hit) throw unsupportedContent(hit);
  const body = bodySizeOf(call);
  const estimate = call.svc.calibration.countTokens(model.id, body.bytes, body.chars);
  return json({
    input_tokens: estimate.inputTokens,
    gateway: { exact: false, method: estimate.method, typical_error_pct: estimate.typicalErrorPct },
  });
}
