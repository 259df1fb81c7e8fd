import { checkNewPassword, hashPassword } from "../auth/passwords.ts";
import { Notices } from "../notices/notices.ts";
import { alreadyClosed, STARTING_BALANCE_NANO, type Account } from "../store/accounts/contract.ts";
import { invocation, parse, required, UsageError, usdFlag } from "./args.ts";
import { openInstallation, output, type CliContext } from "./context.ts";
import { scopedIdempotencyKey } from "../store/idempotency/contract.ts";
import { formatUsd, iso, table, usd } from "./format.ts";
import { GatewayError } from "../core/errors.ts";
import { accountOf, keyLine, keyView } from "./key.ts";

export const ACCOUNT_USAGE = `Usage:
  gateway account create --email E [--balance USD] [--password-stdin] [--admin]
  gateway account update --email E [--admin|--no-admin] [--password-stdin] [--reset-2fa]
  gateway account credit --email E --usd N [--note T] [--idempotency-key K]
  gateway account debit --email E --usd N --note T [--idempotency-key K]
  gateway account list
  gateway account show --email E
  gateway account note --email E --text T
  gateway account disable --email E
  gateway account enable --email E

create without --balance credits the starting balance of ${formatUsd(STARTING_BALANCE_NANO)} USD (--balance 0 for none).
--admin marks the account admin: its dashboard session may use the admin page and /api/admin/
(accounts, credits and debits, disable, pause); update --no-admin takes that away. Both are
written to the audit log as the operator's (no admin account) action. update --password-stdin sets
the dashboard password (read from standard input, 8 to 1,024 characters, as the dashboard takes): how an account created
without one gets its login, or a holder who lost theirs a new one; the account's open sessions end.
update --reset-2fa removes the account's two-factor login (its authenticator secret and recovery
codes), for a holder who lost both the app and the codes: the next login asks for the password only,
and the holder can set it up again. Check who is asking before you do: it is what the second factor
stood against. It is written to the audit log; list and show say which accounts have it on.
note sets the operator's note on the account (at most 2,000 characters, the one the admin page
shows and writes; --text "" removes it), written to the audit log; show prints it.
debit is a correcting ledger entry (kind operator_debit) with a required note; it never takes the
balance below zero. With --idempotency-key, a credit or debit run again with the same key, account,
amount and note within 24 h moves nothing and prints the first run's result (a script may retry
after a timeout); the same key with another amount or note is refused. On SQLite the debit cannot
see what the server's running requests hold (in its memory): the admin page's debit, and
POST /api/admin/accounts/{id}/debit, can, and keep it. disable refuses every key of the account (403 inactive) on the running server
at its next request, until enable. An account its holder closed shows as closed, under the address
closed-account-ID; every command but list, show, note and debit answers that closure is final. list and
show print the balance in the database file; the holds of running requests live in the serving
process's memory, which the CLI cannot see, so they are not shown (GET /v1/me with a key of the
account shows them).`;

/** active, disabled (by the operator, until enabled) or closed (by its holder, for good). */
const statusOf = (a: Account) => (a.closedAt !== null ? "closed" : a.disabledAt === null ? "active" : "disabled");

/** Who wrote a note: the admin account's email, or null when the CLI (no account) did. */
/** Sends what `send` asks of a Notices of the config's [email] and [notifications], and waits for the send (a command ends after it). */
async function notify(ctx: CliContext, send: (n: Notices) => void): Promise<void> {
  const notices = new Notices(ctx.config, ctx);
  notices.deliveries.retryDelaysMs = [1_000];
  send(notices);
  await notices.drain(15_000);
  notices.close();
}

async function noteAuthor(ctx: CliContext, by: number | null): Promise<string | null> {
  return by === null ? null : ((await ctx.accounts.findById(by))?.email ?? null);
}

/** The password on standard input (one trailing newline dropped), held to the dashboard's rules for a new one. */
async function readPasswordFromStdin(): Promise<string> {
  return checkNewPassword((await Bun.stdin.text()).replace(/\r?\n$/, ""), "the password from stdin");
}

const SUBS = ["create", "update", "credit", "debit", "list", "show", "note", "disable", "enable"];
/** The admin page's limit on a note (docs/dashboard.md#an-accounts-page). */
const NOTE_MAX = 2000;
const READ_ONLY = new Set(["list", "show"]);
// Which flags each subcommand takes, so a flag of another one is refused rather than ignored.
const TAKES: Record<string, string[]> = {
  create: ["email", "balance", "password-stdin", "admin"],
  update: ["email", "admin", "no-admin", "password-stdin", "reset-2fa"],
  credit: ["email", "usd", "note", "idempotency-key"],
  debit: ["email", "usd", "note", "idempotency-key"],
  list: [],
  show: ["email"],
  note: ["email", "text"],
  disable: ["email"],
  enable: ["email"],
};

export async function accountCommand(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  if (!sub || !SUBS.includes(sub)) throw new UsageError(`account needs one of: ${SUBS.join(", ")} (see ${invocation()} account --help)`);
  const flags = {
    email: { type: "string" },
    balance: { type: "string" },
    usd: { type: "string" },
    note: { type: "string" },
    text: { type: "string" },
    "idempotency-key": { type: "string" },
    "password-stdin": { type: "boolean" },
    admin: { type: "boolean" },
    "no-admin": { type: "boolean" },
    "reset-2fa": { type: "boolean" },
  } as const;
  const { values } = parse(rest, flags);
  const stray = (Object.keys(flags) as (keyof typeof flags)[]).find((f) => values[f] !== undefined && !TAKES[sub]!.includes(f));
  if (stray) throw new UsageError(`account ${sub} takes no --${stray}`);
  const ctx = await openInstallation(values, READ_ONLY.has(sub) ? "read" : "write");

  if (sub === "create") {
    const email = required(values, "email");
    const balanceNano = values.balance === undefined ? undefined : usdFlag("balance", values.balance);
    const passwordHash = values["password-stdin"] ? await hashPassword(await readPasswordFromStdin()) : null;
    const admin = values.admin ?? false;
    const acc = await ctx.accounts.create(email, { balanceNano, passwordHash, admin });
    if (admin) await ctx.audit.record({ actorAccountId: null, action: "admin_granted", targetAccountId: acc.id });
    output(
      ctx,
      { id: acc.id, email: acc.email, admin, balance_usd: usd(acc.balanceNano) },
      `${admin ? "admin " : ""}account ${acc.id} created for ${acc.email} with ${formatUsd(acc.balanceNano)} USD`,
    );
    return;
  }
  if (sub === "list") {
    const counts = await ctx.keys.countsByAccount();
    const list = await ctx.accounts.list();
    const twoFactor = await ctx.twoFactor.enabledAmong(list.map((a) => a.id));
    const rows = list.map((a) => ({ ...a, ...(counts.get(a.id) ?? { keys: 0, active: 0 }), twoFactor: twoFactor.has(a.id) }));
    const data = rows.map((a) => ({
      id: a.id,
      email: a.email,
      balance_usd: usd(a.balanceNano),
      status: statusOf(a),
      admin: a.admin,
      two_factor: a.twoFactor,
      keys: a.keys,
      active_keys: a.active,
      created_at: iso(a.createdAt),
    }));
    const human = rows.length
      ? table(
          ["id", "email", "balance USD", "status", "keys (active)", "admin", "2fa", "created"],
          rows.map((a, i) => [a.id, a.email, formatUsd(a.balanceNano), data[i]!.status, `${a.keys} (${a.active})`, a.admin ? "yes" : "", a.twoFactor ? "on" : "", data[i]!.created_at]),
        )
      : "no accounts";
    output(ctx, data, human);
    return;
  }

  const acc = await accountOf(ctx, required(values, "email"));
  if (sub === "show") {
    const keys = await ctx.keys.ofAccount(acc.id);
    const entries = await ctx.accounts.recentEntries(acc.id, 10);
    const note = await ctx.adminQueries.noteOf(acc.id);
    const status = statusOf(acc);
    const twoFactor = (await ctx.twoFactor.enabledAmong([acc.id])).has(acc.id);
    const data = {
      id: acc.id,
      email: acc.email,
      balance_usd: usd(acc.balanceNano),
      status,
      admin: acc.admin,
      two_factor: twoFactor,
      disabled_at: iso(acc.disabledAt),
      closed_at: iso(acc.closedAt),
      created_at: iso(acc.createdAt),
      note: note && { text: note.note, updated_at: iso(note.updatedAt), updated_by: await noteAuthor(ctx, note.updatedBy) },
      keys: keys.map((k) => keyView(k)),
      recent_ledger: entries.map((e) => ({ id: e.id, kind: e.kind, amount_usd: usd(e.amountNano), note: e.note, request_id: e.requestId, created_at: iso(e.createdAt) })),
    };
    const human = [
      `account ${acc.id} ${acc.email} (${status}${acc.disabledAt === null ? "" : ` since ${acc.closedAt === null ? data.disabled_at : data.closed_at}`}${acc.admin ? ", admin" : ""}${twoFactor ? ", two-factor login on" : ""})`,
      `balance ${formatUsd(acc.balanceNano)} USD, created ${data.created_at}`,
      ...(data.note ? [`note (${data.note.updated_by ?? "the operator's CLI"}, ${data.note.updated_at}): ${data.note.text}`] : []),
      `keys:${keys.length ? "\n" + keys.map(keyLine).join("\n") : " none"}`,
      `recent ledger entries:`,
      table(["id", "kind", "USD", "note", "when"], entries.map((e) => [e.id, e.kind, formatUsd(e.amountNano), e.note ?? e.requestId, iso(e.createdAt)])),
    ].join("\n");
    output(ctx, data, human);
    return;
  }
  if (sub === "note") {
    if (values.text === undefined) throw new UsageError('--text is required (--text "" removes the note)');
    const text = values.text.trim();
    if (text.length > NOTE_MAX) throw new UsageError(`--text: ${text.length} characters; a note holds at most ${NOTE_MAX}`);
    // By no admin account: the CLI is the operator's own hand, as for its other audit rows.
    await ctx.adminQueries.setNote(acc.id, text, null);
    await ctx.audit.record({ actorAccountId: null, action: text ? "account_note_set" : "account_note_removed", targetAccountId: acc.id, detail: text || null });
    output(ctx, { id: acc.id, email: acc.email, note: text || null }, text ? `note on ${acc.email} set` : `note on ${acc.email} removed`);
    return;
  }
  // Closure is final (docs/dashboard.md#closing-the-account): only a correcting debit (and the operator's note) still apply.
  if (acc.closedAt !== null && sub !== "debit") throw alreadyClosed(acc.id);
  if (sub === "update") {
    const setsPassword = values["password-stdin"] === true;
    const resets2fa = values["reset-2fa"] === true;
    if (values.admin && values["no-admin"]) throw new UsageError("account update takes one of --admin or --no-admin, not both");
    if (values.admin === undefined && values["no-admin"] === undefined && !setsPassword && !resets2fa) {
      throw new UsageError("account update needs --admin or --no-admin, --password-stdin, or --reset-2fa");
    }
    const data: Record<string, unknown> = { id: acc.id, email: acc.email };
    const said: string[] = [];
    if (setsPassword) {
      await ctx.accounts.setPasswordHash(acc.id, await hashPassword(await readPasswordFromStdin()));
      // Whoever logged in with the old password (or a stolen session) is out.
      const ended = await ctx.sessions.revokeAll(acc.id);
      // A reset link or a change of address asked with the old password opens nothing now.
      await ctx.links.cancelAll(acc.id, Date.now());
      await ctx.twoFactor.endChallenges(acc.id);
      await ctx.audit.record({ actorAccountId: null, action: "password_set", targetAccountId: acc.id });
      Object.assign(data, { password_set: true, sessions_ended: ended });
      said.push(`account ${acc.email} has a new password (${ended} session${ended === 1 ? "" : "s"} ended)`);
    }
    if (resets2fa) {
      const removed = await ctx.twoFactor.remove(acc.id);
      if (removed) {
        await ctx.audit.record({ actorAccountId: null, action: "two_factor_reset", targetAccountId: acc.id });
        // The holder hears of it as of a change in the dashboard: the account is back to its password alone.
        await notify(ctx, (n) => n.twoFactorChanged(acc.id, "reset"));
      }
      Object.assign(data, { two_factor_reset: removed });
      said.push(removed ? `account ${acc.email}: two-factor login removed; the next login asks for the password only` : `account ${acc.email} had no two-factor login`);
    }
    if (values.admin !== undefined || values["no-admin"] !== undefined) {
      const admin = values.admin === true;
      const changed = await ctx.accounts.setAdmin(acc.id, admin);
      if (changed) await ctx.audit.record({ actorAccountId: null, action: admin ? "admin_granted" : "admin_revoked", targetAccountId: acc.id });
      Object.assign(data, { admin, changed });
      said.push(`account ${acc.email} ${changed ? "" : "already "}${admin ? "is an admin" : "is not an admin"}`);
    }
    output(ctx, data, said.join("\n"));
    return;
  }
  if (sub === "credit" || sub === "debit") {
    const nano = usdFlag("usd", required(values, "usd"), { positive: true });
    const note = sub === "credit" ? values.note || null : required(values, "note");
    const verb = sub === "credit" ? "credited" : "debited";
    const move = async (): Promise<Moved> => {
      if (sub === "credit") await ctx.ledger.credit(acc.id, nano, "operator_credit", note);
      else await ctx.accounts.debit(acc.id, nano, note!);
      const after = (await ctx.accounts.find(acc.email))!;
      return {
        data: { id: after.id, email: after.email, [`${verb}_usd`]: usd(nano), balance_usd: usd(after.balanceNano) },
        human: `${verb} ${formatUsd(nano)} USD ${sub === "credit" ? "to" : "from"} ${after.email}; balance ${formatUsd(after.balanceNano)} USD`,
      };
    };
    const key = values["idempotency-key"];
    const done = key === undefined ? { ...(await move()), replayed: false } : await once(ctx, acc.id, `gateway account ${sub}`, key, JSON.stringify([nano, note]), move);
    if (done.replayed) {
      output(ctx, { ...done.data, replayed: true }, `already ${verb} with this --idempotency-key, nothing moved now: ${done.human}`);
      return;
    }
    // The operator's webhook hears of it as of a credit in the dashboard.
    if (sub === "credit") await notify(ctx, (n) => n.credited(acc.id, nano, "operator_credit"));
    output(ctx, done.data, done.human);
    return;
  }
  const disable = sub === "disable";
  const changed = await ctx.accounts.setDisabled(acc.id, disable);
  // Sessions opened before the disable stay ended, and logins waiting for their code: enabling must not bring back a stolen one.
  if (changed && !disable) {
    await ctx.sessions.revokeAll(acc.id);
    await ctx.twoFactor.endChallenges(acc.id);
  }
  const status = disable ? "disabled" : "active";
  output(
    ctx,
    { id: acc.id, email: acc.email, status, changed },
    changed ? `account ${acc.email} ${disable ? "disabled: its keys are refused" : "enabled"}` : `account ${acc.email} was already ${status}`,
  );
}

interface Moved {
  data: Record<string, unknown>;
  human: string;
}

/**
 * `move` run at most once per (account, command, key) within 24 h, through the idempotency records
 * /v1 and the admin routes use (docs/operations.md#the-admin-cli): a second run with the same key and
 * body gets the first result back, another body is refused (idempotency_conflict). A failed move
 * frees the key. Stored as soon as the money moved, before the webhook's send.
 */
async function once(ctx: CliContext, accountId: number, command: string, key: string, body: string, move: () => Promise<Moved>): Promise<Moved & { replayed: boolean }> {
  const scoped = scopedIdempotencyKey(command, key);
  if (!scoped) throw new UsageError("--idempotency-key needs a value");
  // The store's refusal speaks HTTP (a header, a request body); the operator gave a flag, an amount and a note.
  const begun = await ctx.idempotency.begin(accountId, scoped, Bun.SHA256.hash(body, "hex"), `cli_${crypto.randomUUID()}`).catch((e: unknown) => {
    if (e instanceof GatewayError && e.code === "idempotency_conflict")
      throw new UsageError(`--idempotency-key '${key}' was used within 24 h for this account with another amount or note (idempotency_conflict): nothing moved; give a new key for a new move`);
    throw e;
  });
  if (begun.kind === "replay") return { ...(JSON.parse(begun.answer.body) as Moved), replayed: true };
  let moved: Moved;
  try {
    moved = await move();
  } catch (e) {
    await ctx.idempotency.finish(accountId, scoped, null);
    throw e;
  }
  await ctx.idempotency.finish(accountId, scoped, { status: 200, contentType: "application/json", body: JSON.stringify(moved) });
  return { ...moved, replayed: false };
}
