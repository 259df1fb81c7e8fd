import { Type as T } from "@sinclair/typebox";
import type { KeyRow, NewKey } from "../../store/keys/contract.ts";
import { keyRules, KeyRuleError, type KeyRulesInput } from "../../auth/key-rules.ts";
import { GatewayError } from "../../core/errors.ts";
import { nanoToUsd } from "../../core/money.ts";
import type { Services } from "../../services.ts";
import type { SessionCall } from "../session-guard.ts";
import { json, pathParam } from "../exchange.ts";
import { isoTime } from "../../core/time.ts";
import { budgetView } from "./v1-account.ts";
import { isBudgetPeriod } from "../../ledger/budget.ts";
import type { KeyList, KeyView, NewKeyView } from "../api-schemas.ts";

// The account holder's keys under /api/keys: the same rules as `gateway key create|update`
// (auth/key-rules.ts keyRules, one implementation), on the session's own account only.

const ListOrNull = T.Union([T.Array(T.String()), T.Null()]);
export const KeyBody = T.Object(
  {
    name: T.Optional(T.String()),
    quota_usd: T.Optional(T.Union([T.Number(), T.String(), T.Null()])),
    // Both together, or budget_usd null (and no period) to remove the budget.
    budget_usd: T.Optional(T.Union([T.Number(), T.String(), T.Null()])),
    budget_period: T.Optional(T.Union([T.String(), T.Null()])),
    models: T.Optional(ListOrNull),
    ip_allow: T.Optional(ListOrNull),
    rpm: T.Optional(T.Union([T.Integer(), T.Null()])),
    expires_at: T.Optional(T.Union([T.String(), T.Null()])),
  },
  { additionalProperties: false },
);

// The body's name of each field of the shared rules, so a refusal names what the client sent.
const FIELD: Record<keyof KeyRulesInput, string> = {
  name: "name",
  quota: "quota_usd",
  budget: "budget_usd",
  budgetPeriod: "budget_period",
  models: "models",
  ip: "ip_allow",
  rpm: "rpm",
  expires: "expires_at",
};

/**
 * A key's rules as the holder may set them: the CLI's rules, and an rpm no higher than the gateway's
 * limit per key (`[limits] default_rpm`), or than the key's own when the operator raised it: a holder
 * who could raise their own limit would have none. The operator raises it with `gateway key update`.
 */
function rulesOf(svc: Services, body: Record<string, unknown>, currentRpm: number | null = null): NewKey {
  const rules = sharedRules(svc, body);
  const ceiling = Math.max(svc.config.defaultRpm, currentRpm ?? 0);
  if (typeof rules.rpm === "number" && rules.rpm > ceiling) {
    // Said to a holder, who has no shell on the gateway: whom to ask, not which command.
    throw new GatewayError("invalid_request", `rpm: at most ${ceiling} requests per minute; the gateway's operator can raise a key's limit.`);
  }
  return rules;
}

export function sharedRules(svc: Services, body: Record<string, unknown>): NewKey {
  const b = body as {
    name?: string;
    quota_usd?: number | string | null;
    budget_usd?: number | string | null;
    budget_period?: string | null;
    models?: string[] | null;
    ip_allow?: string[] | null;
    rpm?: number | null;
    expires_at?: string | null;
  };
  const input: KeyRulesInput = {
    name: b.name,
    quota: b.quota_usd,
    budget: b.budget_usd,
    budgetPeriod: b.budget_period,
    models: b.models,
    ip: b.ip_allow,
    rpm: b.rpm,
    expires: b.expires_at,
  };
  try {
    return keyRules(input, { resolveModel: (n) => svc.catalog.lookup(n)?.id });
  } catch (e) {
    if (e instanceof KeyRuleError) throw new GatewayError("invalid_request", `${FIELD[e.field]}: ${e.message}`);
    throw e;
  }
}

/** A key as the dashboard shows it: its prefix, never the key or its hash; money in USD. */
export async function keyView(svc: Services, r: KeyRow, lastUsed?: Map<number, number>, now = Date.now()): Promise<KeyView> {
  const [used, spend] = await Promise.all([lastUsed ?? svc.reports.lastUsedByKey([r.id]), svc.ledger.keySpend(r.id)]);
  return {
    object: "key",
    id: r.id,
    name: r.name,
    prefix: r.prefix,
    status: r.revokedAt !== null ? "revoked" : r.expiresAt !== null && r.expiresAt <= now ? "expired" : "active",
    quota_usd: r.quotaNano === null ? null : nanoToUsd(r.quotaNano),
    spent_usd: nanoToUsd(r.spentNano),
    // What the key's running requests hold, on every instance.
    held_usd: nanoToUsd(spend?.reservedNano ?? 0),
    budget_usd: r.budgetNano === null ? null : nanoToUsd(r.budgetNano),
    // The stores write only the three periods (rows.ts checks them); the guard gives the column its type.
    budget_period: isBudgetPeriod(r.budgetPeriod) ? r.budgetPeriod : null,
    // The budget in its current UTC period, as GET /v1/me shows it; `reached` is the page's notice.
    budget: spend?.budget ? budgetView(spend.budget, spend.reservedNano) : null,
    models: r.models ? (JSON.parse(r.models) as string[]) : null,
    ip_allow: r.ipAllow ? (JSON.parse(r.ipAllow) as string[]) : null,
    rpm: r.rpm,
    expires_at: isoTime(r.expiresAt),
    created_at: isoTime(r.createdAt),
    revoked_at: isoTime(r.revokedAt),
    last_used_at: isoTime(used.get(r.id) ?? null),
  };
}

/** The session's own key with the id of the path; any other (another account's, none, not a number) is the same 404. */
async function ownKey(c: SessionCall): Promise<KeyRow> {
  const given = pathParam(c, "id");
  const id = /^\d{1,15}$/.test(given) ? Number(given) : null;
  const row = id === null ? null : await c.svc.keys.row(id);
  if (!row || row.accountId !== c.session!.accountId) throw new GatewayError("key_not_found", `No key with id ${given} on this account.`);
  return row;
}

export async function listKeys(c: SessionCall): Promise<Response> {
  const rows = await c.svc.keys.ofAccount(c.session!.accountId);
  const lastUsed = await c.svc.reports.lastUsedByKey(rows.map((r) => r.id));
  return json<KeyList>({ object: "list", data: await Promise.all(rows.map((r) => keyView(c.svc, r, lastUsed))), default_rpm: c.svc.config.defaultRpm });
}

/** The key's row as it is now, in the dashboard's view. */
export const rowView = async (svc: Services, id: number) => keyView(svc, (await svc.keys.row(id))!);

export async function createKey(c: SessionCall): Promise<Response> {
  const rules = rulesOf(c.svc, c.json);
  // The holder's keys are capped (`[dashboard] max_keys_per_account`); the operator's CLI is not.
  const { key, record } = await c.svc.keys.create(c.session!.accountId, rules, c.svc.config.dashboard.maxKeysPerAccount);
  // The only time the key is shown: the table keeps its hash.
  return json<NewKeyView>({ ...(await rowView(c.svc, record.id)), key }, 201);
}

export async function updateKey(c: SessionCall): Promise<Response> {
  const row = await ownKey(c);
  const rules = rulesOf(c.svc, c.json, row.rpm);
  if (Object.keys(rules).length === 0) throw new GatewayError("invalid_request", "Nothing to change: give at least one of name, quota_usd, budget_usd, models, ip_allow, rpm, expires_at.");
  await c.svc.keys.update(row.id, rules);
  return json<KeyView>(await rowView(c.svc, row.id));
}

export async function revokeKey(c: SessionCall): Promise<Response> {
  const row = await ownKey(c);
  await c.svc.keys.revoke(row.id);
  return json<KeyView>(await rowView(c.svc, row.id));
}
