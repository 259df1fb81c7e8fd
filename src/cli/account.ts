import { createAccount, findAccount } from "../ledger/accounts.ts";
import { formatUsd, usdToNano } from "../ledger/money.ts";
import { parse, required, UsageError } from "./args.ts";
import { openInstallation, output } from "./context.ts";

async function readPasswordFromStdin(): Promise<string> {
  const text = (await Bun.stdin.text()).replace(/\r?\n$/, "");
  if (text.length < 8) throw new UsageError("the password from stdin must have at least 8 characters");
  return text;
}

export async function accountCommand(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  const { values } = parse(rest, {
    email: { type: "string" },
    balance: { type: "string" },
    usd: { type: "string" },
    note: { type: "string" },
    "password-stdin": { type: "boolean" },
  });
  const ctx = openInstallation(values);
  if (sub === "create") {
    const email = required(values, "email");
    const balanceNano = values.balance === undefined ? undefined : usdToNano(values.balance);
    const passwordHash = values["password-stdin"] ? await Bun.password.hash(await readPasswordFromStdin()) : null;
    const acc = createAccount(ctx.db, ctx.ledger, email, { balanceNano, passwordHash });
    output(
      values.json,
      { id: acc.id, email: acc.email, balance_usd: formatUsd(acc.balanceNano) },
      `account ${acc.id} created for ${acc.email} with ${formatUsd(acc.balanceNano)} USD`,
    );
    return;
  }
  if (sub === "credit") {
    const email = required(values, "email");
    const nano = usdToNano(required(values, "usd"));
    if (nano <= 0) throw new UsageError("--usd must be more than 0");
    const acc = findAccount(ctx.db, email);
    if (!acc) throw new UsageError(`no account with email ${email}`);
    ctx.ledger.credit(acc.id, nano, "operator_credit", values.note ?? null);
    const after = findAccount(ctx.db, email)!;
    output(
      values.json,
      { id: after.id, email: after.email, credited_usd: formatUsd(nano), balance_usd: formatUsd(after.balanceNano) },
      `credited ${formatUsd(nano)} USD to ${after.email}; balance ${formatUsd(after.balanceNano)} USD`,
    );
    return;
  }
  throw new UsageError("usage: gateway account create --email E [--balance USD] | account credit --email E --usd N [--note T]");
}
