import { GatewayError } from "../core/errors.ts";
import { parseCidrList } from "../core/ip.ts";
import { usdToNano } from "../core/money.ts";
import { readIsoTime } from "../core/time.ts";
import { BUDGET_PERIODS, isBudgetPeriod } from "../ledger/budget.ts";
import type { NewKey } from "../store/keys/contract.ts";

// What a person types for a key (CLI flags, the dashboard's form), checked once for both.

/**
 * A key's restrictions as a person types them (CLI flags, dashboard form); for each field, undefined
 * leaves it as it is and null removes the restriction.
 */
export interface KeyRulesInput {
  name?: string;
  /** USD, as text ("0.5") or a number. */
  quota?: string | number | null;
  /** USD per `budgetPeriod`, given with it; null removes the budget (and takes no period). */
  budget?: string | number | null;
  /** day, week or month (UTC calendar periods). */
  budgetPeriod?: string | null;
  /** Model ids or aliases of the installation's catalog. */
  models?: string[] | null;
  /** IP addresses or CIDRs, IPv4 or IPv6. */
  ip?: string[] | null;
  rpm?: string | number | null;
  /** ISO 8601 text, or Unix milliseconds. */
  expires?: string | number | null;
}

/** A refused restriction; `field` names it as KeyRulesInput does, so each caller can name its own flag or form field. */
export class KeyRuleError extends GatewayError {
  constructor(
    readonly field: keyof KeyRulesInput,
    message: string,
  ) {
    super("invalid_request", message);
  }
}

/**
 * The key rules, the one implementation behind every create and update (CLI and dashboard): turns
 * what a person typed into a NewKey, or refuses it with the field and the reason.
 */
export function keyRules(input: KeyRulesInput, opts: { resolveModel: (name: string) => string | undefined; now?: number }): NewKey {
  const out: NewKey = {};
  const now = opts.now ?? Date.now();
  if (input.name !== undefined) {
    if (input.name.length > 100) throw new KeyRuleError("name", "a key's name has at most 100 characters");
    out.name = input.name;
  }
  if (input.quota !== undefined) {
    try {
      out.quotaNano = input.quota === null ? null : usdToNano(input.quota);
    } catch (e) {
      throw new KeyRuleError("quota", (e as Error).message);
    }
  }
  if (input.budget !== undefined || input.budgetPeriod !== undefined) out.budget = budgetRule(input.budget, input.budgetPeriod);
  if (input.models !== undefined) {
    if (input.models === null) out.models = null;
    else {
      const names = input.models.map((m) => m.trim()).filter(Boolean);
      // An empty allow-list would refuse every model: almost surely a slip, and "none" says "any model".
      if (names.length === 0) throw new KeyRuleError("models", "name at least one model (or none for no restriction)");
      out.models = [
        ...new Set(
          names.map((n) => {
            const id = opts.resolveModel(n);
            if (!id) throw new KeyRuleError("models", `no model '${n}' in this installation's catalog`);
            return id;
          }),
        ),
      ];
    }
  }
  if (input.ip !== undefined) {
    if (input.ip === null) out.ipAllow = null;
    else {
      const list = input.ip.map((c) => c.trim()).filter(Boolean);
      if (list.length === 0) throw new KeyRuleError("ip", "name at least one address or CIDR (or none for any address)");
      try {
        parseCidrList(list);
      } catch (e) {
        throw new KeyRuleError("ip", (e as Error).message);
      }
      out.ipAllow = list;
    }
  }
  if (input.rpm !== undefined) {
    const rpm = typeof input.rpm === "string" && /^\d+$/.test(input.rpm) ? Number(input.rpm) : input.rpm;
    // rpm 0 would refuse every request with Retry-After: Infinity; the config's limits need ≥ 1 too.
    if (rpm !== null && !(typeof rpm === "number" && Number.isSafeInteger(rpm) && rpm >= 1)) {
      throw new KeyRuleError("rpm", `requests per minute must be a whole number of at least 1, not ${input.rpm}`);
    }
    out.rpm = rpm;
  }
  if (input.expires !== undefined) {
    if (input.expires === null) out.expiresAt = null;
    else {
      const read = typeof input.expires === "number" ? { ms: input.expires } : readIsoTime(input.expires);
      if ("why" in read) throw new KeyRuleError("expires", read.why);
      const at = read.ms;
      if (!Number.isSafeInteger(at)) throw new KeyRuleError("expires", `not an ISO 8601 time: ${input.expires}`);
      if (at <= now) throw new KeyRuleError("expires", `${new Date(at).toISOString()} is in the past`);
      out.expiresAt = at;
    }
  }
  return out;
}


/** A budget is its amount and its period together, or neither (null: removed). */
function budgetRule(amount: string | number | null | undefined, period: string | null | undefined): NewKey["budget"] {
  if (amount === undefined) throw new KeyRuleError("budget", "give the budget's amount in USD with its period (or none to remove the budget)");
  if (amount === null) {
    if (period != null) throw new KeyRuleError("budgetPeriod", "a budget removed takes no period");
    return null;
  }
  if (period == null) throw new KeyRuleError("budgetPeriod", `give the budget's period with its amount: one of ${BUDGET_PERIODS.join(", ")}`);
  if (!isBudgetPeriod(period)) throw new KeyRuleError("budgetPeriod", `a budget resets each day, week or month (UTC), not each ${period}`);
  try {
    return { nano: usdToNano(amount), period };
  } catch (e) {
    throw new KeyRuleError("budget", (e as Error).message);
  }
}
