import { parseCidrList } from "../auth/ip.ts";
import { findAccount } from "../ledger/accounts.ts";
import { formatUsd, usdToNano } from "../ledger/money.ts";
import { parse, required, UsageError } from "./args.ts";
import { openInstallation, output, type CliContext } from "./context.ts";

const list = (v: string | undefined) => (v === undefined ? null : v.split(",").map((s) => s.trim()).filter(Boolean));

function create(ctx: CliContext, values: Record<string, string | boolean | undefined>): void {
  const email = required(values, "email");
  const acc = findAccount(ctx.db, email);
  if (!acc) throw new UsageError(`no account with email ${email}`);
  const models = list(values.models as string | undefined);
  const ip = list(values.ip as string | undefined);
  if (ip) parseCidrList(ip);
  let expiresAt: number | null = null;
  if (values.expires !== undefined) {
    expiresAt = Date.parse(values.expires as string);
    if (Number.isNaN(expiresAt)) throw new UsageError(`--expires: not an ISO 8601 time: ${values.expires}`);
  }
  let rpm: number | null = null;
  if (values.rpm !== undefined) {
    rpm = Number(values.rpm);
    if (!Number.isInteger(rpm) || rpm < 1) throw new UsageError("--rpm must be a whole number of at least 1");
  }
  const quotaNano = values.quota === undefined ? null : usdToNano(values.quota as string);
  const { key, record } = ctx.keys.create(acc.id, { name: (values.name as string | undefined) ?? "", quotaNano, models, ipAllow: ip, rpm, expiresAt });
  output(
    values.json as boolean | undefined,
    { id: record.id, key, prefix: record.prefix, account: acc.email, name: record.name, quota_usd: quotaNano === null ? null : formatUsd(quotaNano), models, ip, rpm, expires_at: expiresAt === null ? null : new Date(expiresAt).toISOString() },
    `key ${record.id} for ${acc.email} (shown once, store it now):\n${key}`,
  );
}

interface KeyRow {
  id: number;
  name: string;
  prefix: string;
  quota_nano: number | null;
  spent_nano: number;
  models: string | null;
  ip_allow: string | null;
  rpm: number | null;
  expires_at: number | null;
  revoked_at: number | null;
  created_at: number;
}

function listKeys(ctx: CliContext, values: Record<string, string | boolean | undefined>): void {
  const email = required(values, "email");
  const acc = findAccount(ctx.db, email);
  if (!acc) throw new UsageError(`no account with email ${email}`);
  const rows = ctx.db.$client.query("SELECT * FROM api_keys WHERE account_id = ? ORDER BY id").all(acc.id) as KeyRow[];
  const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
  const data = rows.map((r) => ({
    id: r.id,
    name: r.name,
    prefix: r.prefix,
    status: r.revoked_at !== null ? "revoked" : r.expires_at !== null && r.expires_at <= Date.now() ? "expired" : "active",
    quota_usd: r.quota_nano === null ? null : formatUsd(r.quota_nano),
    spent_usd: formatUsd(r.spent_nano),
    models: r.models ? JSON.parse(r.models) : null,
    ip: r.ip_allow ? JSON.parse(r.ip_allow) : null,
    rpm: r.rpm,
    expires_at: iso(r.expires_at),
    created_at: iso(r.created_at),
  }));
  const human = data.length
    ? data.map((k) => `${k.id}\t${k.prefix}…\t${k.status}\t${k.name || "-"}\tspent ${k.spent_usd} USD${k.quota_usd ? ` of ${k.quota_usd}` : ""}`).join("\n")
    : `no keys for ${acc.email}`;
  output(values.json as boolean | undefined, data, human);
}

export function keyCommand(argv: string[]): void {
  const [sub, ...rest] = argv;
  const { values, positionals } = parse(rest, {
    email: { type: "string" },
    name: { type: "string" },
    quota: { type: "string" },
    models: { type: "string" },
    expires: { type: "string" },
    ip: { type: "string" },
    rpm: { type: "string" },
  });
  const ctx = openInstallation(values);
  if (sub === "create") return create(ctx, values);
  if (sub === "list") return listKeys(ctx, values);
  if (sub === "revoke") {
    const id = Number(positionals[0]);
    if (!Number.isInteger(id)) throw new UsageError("usage: gateway key revoke ID");
    const changed = ctx.db.$client.prepare("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL").run(Date.now(), id).changes;
    const exists = ctx.db.$client.query("SELECT id FROM api_keys WHERE id = ?").get(id);
    if (!exists) throw new UsageError(`no key with id ${id}`);
    output(values.json, { id, revoked: true, already_revoked: changed === 0 }, changed ? `key ${id} revoked` : `key ${id} was already revoked`);
    return;
  }
  throw new UsageError("usage: gateway key create --email E … | key list --email E | key revoke ID");
}
