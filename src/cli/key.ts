import { KEY_PREFIX, storedBudget, type KeyRow, type NewKey } from "../store/keys/contract.ts";
import { keyRules, KeyRuleError, type KeyRulesInput } from "../auth/key-rules.ts";
import { alreadyClosed, type Account } from "../store/accounts/contract.ts";
import { invocation, parse, required, UsageError, usdFlag, wholeNumber } from "./args.ts";
import { openInstallation, output, type CliContext } from "./context.ts";
import { formatUsd, iso, table, usd, usdOrNull } from "./format.ts";
import { budgetSpend } from "../store/ledger/contract.ts";

export const KEY_USAGE = `Usage:
  gateway key create --email E [--name N] [--quota USD] [--budget USD --budget-period day|week|month] [--models a,b] [--expires ISO8601] [--ip CIDR,…] [--rpm N]
  gateway key list --email E
  gateway key find PREFIX|KEY
  gateway key update ID [--name N] [--quota USD|none] [--budget USD|none --budget-period day|week|month] [--models a,b|none] [--expires ISO8601|none] [--ip CIDR,…|none] [--rpm N|none]
  gateway key revoke ID

--quota caps what the key spends in its lifetime; --budget with --budget-period caps what it spends
per UTC day, week (from Monday) or month (from the 1st), refusing with 429 until the period ends
("--budget none" removes it).

create prints the new key once. --models takes model ids or aliases of this installation's catalog;
--ip takes addresses or CIDRs (IPv4, IPv6; no zone id such as %eth0); --expires takes an ISO 8601
date or time the calendar has (2099-02-30 is refused) in the future. In update, "none"
removes a restriction and a flag left out leaves it as it is. find answers which account owns a
key: give its visible prefix (gk_sk_ and a few characters) or, after a leak, the whole key, which is
matched by its hash and never printed.`;

const KEY_FLAGS = {
  email: { type: "string" },
  name: { type: "string" },
  quota: { type: "string" },
  budget: { type: "string" },
  "budget-period": { type: "string" },
  models: { type: "string" },
  expires: { type: "string" },
  ip: { type: "string" },
  rpm: { type: "string" },
} as const;

type Flags = Partial<Record<keyof typeof KEY_FLAGS, string>>;

/** The flags as the shared key rules take them; "none" clears a restriction. */
function rulesOf(ctx: CliContext, flags: Flags): NewKey {
  const none = <T>(v: string | undefined, f: (s: string) => T): T | null | undefined => (v === undefined ? undefined : v === "none" ? null : f(v));
  const list = (s: string) => s.split(",");
  // Amounts are read by the CLI's one amount helper first, so --quota and --budget refuse as --usd does.
  const amount = (name: "quota" | "budget") => (s: string) => (usdFlag(name, s), s);
  const input: KeyRulesInput = {
    name: flags.name,
    quota: none(flags.quota, amount("quota")),
    budget: none(flags.budget, amount("budget")),
    budgetPeriod: flags["budget-period"],
    models: none(flags.models, list),
    ip: none(flags.ip, list),
    rpm: none(flags.rpm, String),
    expires: none(flags.expires, String),
  };
  try {
    return keyRules(input, { resolveModel: (n) => ctx.catalog().lookup(n)?.id });
  } catch (e) {
    // Without a config file the catalog is the built-in demo one: say so, rather than speak of "this installation's".
    if (e instanceof KeyRuleError && e.field === "models" && ctx.config.source === "built-in defaults") {
      throw new UsageError(`--models: ${e.message.replace("this installation's catalog", "the built-in demo catalog")} (no config file given: --config FILE or GATEWAY_CONFIG names the catalog to check against)`);
    }
    if (e instanceof KeyRuleError) throw new UsageError(`--${e.field === "budgetPeriod" ? "budget-period" : e.field}: ${e.message}`);
    throw e;
  }
}

/** A key as the CLI shows it: prefix, never the key; money in USD numbers. */
/** The key's budget and its spend in the period that contains `now`; null without a budget. */
const budgetOf = (r: KeyRow, now: number) =>
  budgetSpend({ budget: storedBudget(r.budgetNano, r.budgetPeriod), periodStart: r.periodStart, periodSpentNano: r.periodSpentNano, reachedAt: r.budgetReachedAt }, now);

export function keyView(r: KeyRow, now = Date.now()) {
  const budget = budgetOf(r, now);
  return {
    id: r.id,
    name: r.name,
    prefix: r.prefix,
    status: r.revokedAt !== null ? "revoked" : r.expiresAt !== null && r.expiresAt <= now ? "expired" : "active",
    quota_usd: usdOrNull(r.quotaNano),
    spent_usd: usd(r.spentNano),
    budget_usd: usdOrNull(r.budgetNano),
    budget_period: r.budgetPeriod,
    // The budget's spend in the current UTC period, and when the period ends.
    budget_spent_usd: budget ? usd(budget.spentNano) : null,
    budget_resets_at: budget ? iso(budget.resetsAt) : null,
    models: r.models ? (JSON.parse(r.models) as string[]) : null,
    ip: r.ipAllow ? (JSON.parse(r.ipAllow) as string[]) : null,
    rpm: r.rpm,
    expires_at: iso(r.expiresAt),
    created_at: iso(r.createdAt),
  };
}

export const keyLine = (r: KeyRow) => {
  const b = budgetOf(r, Date.now());
  const budget = b ? `\tbudget ${formatUsd(b.spentNano)} of ${formatUsd(b.nano)} USD ${{ day: "today", week: "this week", month: "this month" }[b.period]}` : "";
  return `${r.id}\t${r.prefix}…\t${keyView(r).status}\t${r.name || "-"}\tspent ${formatUsd(r.spentNano)} USD${r.quotaNano !== null ? ` of ${formatUsd(r.quotaNano)}` : ""}${budget}`;
};

export async function accountOf(ctx: CliContext, email: string): Promise<Account> {
  const acc = await ctx.accounts.find(email);
  if (!acc) throw new UsageError(`no account with email ${email}`);
  return acc;
}

async function create(ctx: CliContext, flags: Flags): Promise<void> {
  const acc = await accountOf(ctx, required(flags, "email"));
  if (acc.closedAt !== null) throw alreadyClosed(acc.id);
  const rules = rulesOf(ctx, flags);
  const { key, record } = await ctx.keys.create(acc.id, rules);
  const row = (await ctx.keys.row(record.id))!;
  output(ctx, { ...keyView(row), key, account: acc.email }, `key ${record.id} for ${acc.email} (shown once, store it now):\n${key}`);
}

async function update(ctx: CliContext, id: number, flags: Flags): Promise<void> {
  if (flags.email !== undefined) throw new UsageError("--email: a key stays with its account; update takes the key's ID");
  const rules = rulesOf(ctx, flags);
  if (Object.keys(rules).length === 0) throw new UsageError("nothing to update: give at least one of --name --quota --budget --models --expires --ip --rpm");
  if (!(await ctx.keys.update(id, rules))) throw new UsageError(`no key with id ${id}`);
  const row = (await ctx.keys.row(id))!;
  output(ctx, keyView(row), `key ${id} updated\n${keyLine(row)}`);
}

/** Keys whose prefix matches the text, or, for a whole key, the one with its hash. */
export async function findKeys(ctx: CliContext, text: string): Promise<KeyRow[]> {
  const t = text.startsWith(KEY_PREFIX) ? text : KEY_PREFIX + text;
  if (t.length < KEY_PREFIX.length + 3) throw new UsageError("give at least 3 characters of the key after gk_sk_");
  return ctx.keys.find(t);
}

async function find(ctx: CliContext, text: string): Promise<void> {
  const found = await findKeys(ctx, text);
  // Never echo a whole key back: it may be the leaked secret.
  const shown = text.length > KEY_PREFIX.length + 6 ? `${text.slice(0, KEY_PREFIX.length + 6)}…` : text;
  if (found.length === 0) throw new UsageError(`no key matches ${shown}`);
  const emails = new Map<number, string | null>();
  for (const k of found) if (!emails.has(k.accountId)) emails.set(k.accountId, (await ctx.accounts.findById(k.accountId))?.email ?? null);
  const data = found.map((k) => ({ ...keyView(k), account_id: k.accountId, account: emails.get(k.accountId) ?? null }));
  const human = table(
    ["id", "prefix", "status", "account", "name", "created"],
    data.map((k) => [k.id, `${k.prefix}…`, k.status, k.account, k.name, k.created_at]),
  );
  output(ctx, data, human);
}

const keyId = (word: string | undefined, sub: string) => {
  if (word === undefined) throw new UsageError(`usage: gateway key ${sub} ID`);
  return wholeNumber(`key ${sub}: ID`, word);
};

export async function keyCommand(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  const takesWord = sub === "find" || sub === "update" || sub === "revoke";
  const { values, words } = parse(rest, KEY_FLAGS, takesWord ? ["arg"] : []);
  const readOnly = sub === "list" || sub === "find";
  if (!["create", "list", "find", "update", "revoke"].includes(sub ?? "")) {
    throw new UsageError(`key needs one of: create, list, find, update, revoke (see ${invocation()} key --help)`);
  }
  const restricted = (Object.keys(KEY_FLAGS) as (keyof typeof KEY_FLAGS)[]).filter((f) => f !== "email" && values[f] !== undefined);
  if ((sub === "list" || sub === "find" || sub === "revoke") && restricted.length) throw new UsageError(`key ${sub} takes no --${restricted[0]}`);
  const ctx = await openInstallation(values, readOnly ? "read" : "write");
  if (sub === "create") return create(ctx, values);
  if (sub === "update") return update(ctx, keyId(words.arg, "update"), values);
  if (sub === "find") {
    if (!words.arg) throw new UsageError("usage: gateway key find PREFIX|KEY");
    return find(ctx, words.arg);
  }
  if (sub === "list") {
    const acc = await accountOf(ctx, required(values, "email"));
    const rows = await ctx.keys.ofAccount(acc.id);
    output(ctx, rows.map((r) => keyView(r)), rows.length ? rows.map(keyLine).join("\n") : `no keys for ${acc.email}`);
    return;
  }
  const id = keyId(words.arg, "revoke");
  const revoked = await ctx.keys.revoke(id);
  if (revoked === null) throw new UsageError(`no key with id ${id}`);
  output(ctx, { id, revoked: true, already_revoked: !revoked }, revoked ? `key ${id} revoked` : `key ${id} was already revoked`);
}
