import { batchView, MAX_BATCH, mintBatch } from "../payments/codes.ts";
import { readIsoTime } from "../core/time.ts";
import { invocation, parse, required, UsageError, usdFlag, wholeNumber } from "./args.ts";
import { openInstallation, output } from "./context.ts";
import { formatUsd, iso, table } from "./format.ts";

export const CODE_USAGE = `Usage:
  gateway code create --usd N [--count K] [--expires ISO8601] [--note T]
  gateway code list

create mints K codes (1 by default, at most ${MAX_BATCH}) worth N USD each, as one batch, and prints
them once: the database keeps only each code's SHA-256, so a lost code cannot be shown again (mint
another). A holder redeems a code in the dashboard (the top-up page), which credits its value once
as a redemption ledger entry; with [dashboard] registration = "invite", a code is also what opens
an account. list shows the batches and how many of their codes are used, never a code.`;

const SUBS = ["create", "list"];

export async function codeCommand(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  if (!sub || !SUBS.includes(sub)) throw new UsageError(`code needs one of: ${SUBS.join(", ")} (see ${invocation()} code --help)`);
  const flags = { usd: { type: "string" }, count: { type: "string" }, expires: { type: "string" }, note: { type: "string" } } as const;
  const { values } = parse(rest, flags);
  if (sub === "list") {
    const stray = (Object.keys(flags) as (keyof typeof flags)[]).find((f) => values[f] !== undefined);
    if (stray) throw new UsageError(`code list takes no --${stray}`);
    const ctx = await openInstallation(values, "read");
    const batches = (await ctx.codes.batches(1000)).map((b) => batchView(b));
    const rows = batches.map((b) => [b.id, formatUsd(b.usd * 1e9), b.count, b.used, b.unused, b.expires_at ?? "never", b.expired ? "yes" : "", b.note, b.created_at]);
    output(ctx, batches, batches.length ? table(["batch", "usd", "count", "used", "unused", "expires", "expired", "note", "created"], rows) : "no code batches");
    return;
  }
  const amountNano = usdFlag("usd", required(values, "usd"), { positive: true });
  const count = values.count === undefined ? 1 : wholeNumber("--count", values.count);
  if (count > MAX_BATCH) throw new UsageError(`--count: at most ${MAX_BATCH} codes in one batch`);
  let expiresAt: number | null = null;
  if (values.expires !== undefined) {
    const read = readIsoTime(values.expires);
    if ("why" in read) throw new UsageError(`--expires: ${read.why}`);
    if (read.ms <= Date.now()) throw new UsageError(`--expires: ${iso(read.ms)} is in the past`);
    expiresAt = read.ms;
  }
  const ctx = await openInstallation(values, "write");
  const { batch, codes } = await mintBatch(ctx.codes, { amountNano, count, expiresAt, note: values.note?.trim() || null, createdByAccountId: null });
  await ctx.audit.record({ actorAccountId: null, action: "codes_created", detail: `batch ${batch.id}: ${count} × ${formatUsd(amountNano)} USD` });
  output(
    ctx,
    { ...batchView(batch), codes },
    `batch ${batch.id}: ${count} code${count === 1 ? "" : "s"} of ${formatUsd(amountNano)} USD${expiresAt ? `, expiring ${iso(expiresAt)}` : ""}. Shown once, kept only as hashes:\n${codes.join("\n")}`,
  );
}
