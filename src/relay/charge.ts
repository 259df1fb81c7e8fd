import type { RelayCall } from "./context.ts";
import type { Alongside } from "../ledger/hold.ts";
import { boundedCost, type Hold, type Settlement } from "../ledger/hold.ts";
import type { LogRow } from "../store/request-log/contract.ts";
import { balanceRefused } from "../store/ledger/contract.ts";
import { promptTokens, type TokenUsage } from "../core/money.ts";
import { bodySize, type TextSize } from "../ledger/estimate.ts";

// A request's hold, as the relay takes and posts it: the one place where a request's money meets its
// log row (the JSON relays and the stream both post through here).

/**
 * Takes the request's hold; the pipeline's error path closes it too, as a last resort. SQLite's
 * hold is returned as it is, not promised: awaiting a value costs a turn of the microtask queue.
 */
export function reserve(call: RelayCall, amountNano: number): Hold | Promise<Hold> {
  const held = call.svc.ledger.reserve(call.requestId, call.key.accountId, call.key.id, amountNano);
  if (held instanceof Promise) return held.then((hold) => (call.hold = hold));
  return (call.hold = held);
}

/**
 * Refuses, before any costly work on the body (a translation), a request whose hold the account's
 * spendable balance cannot cover even at `floorNano`: a part of the hold known without that work
 * (its output cap), so that nothing the hold would admit is refused here. The reserve still decides.
 */
export async function refuseBelowFloor(call: RelayCall, floorNano: number): Promise<void> {
  if (floorNano <= 0) return;
  const { spendableNano } = await call.svc.ledger.balance(call.key.accountId);
  if (spendableNano < floorNano) throw balanceRefused(floorNano, spendableNano);
}

/** The request body's size for the estimator, measured on first use and kept on the call. */
export const bodySizeOf = (call: RelayCall): TextSize => (call.bodySize ??= bodySize(call.bytes));

/**
 * Posts the request's cost with its log row (usage, cost, status) in one commit. `inputCounted`: the
 * usage's input counts are the upstream's own, not our estimate; once charged, the request is a
 * sample of its model's input calibration (estimate-billed answers never are: they would only echo
 * the estimate). `countedOutput`: the text a completed stream delivered, when the usage's output
 * count is the upstream's own for it: a sample of the model's output calibration.
 */
export async function post(
  call: RelayCall,
  hold: Hold,
  cost: number,
  usage: TokenUsage | null,
  status: number,
  inputCounted = false,
  countedOutput: TextSize | null = null,
): Promise<void> {
  await commitCharge(call, hold, cost, usage, status);
  charged(call, cost, usage, inputCounted, countedOutput);
}

/**
 * post's commit: the hold's own promise, handed on without an async layer around it (the plain
 * answer's relay awaits it, then calls `charged`). Rejects as the commit does; never `charged` then.
 */
export function commitCharge(call: RelayCall, hold: Hold, cost: number, usage: TokenUsage | null, status: number): Promise<Settlement> {
  const log = call.log;
  log.costNano = boundedCost(cost);
  log.status = status;
  if (usage) {
    log.inputTokens = usage.input;
    log.outputTokens = usage.output;
    log.cacheReadTokens = usage.cacheRead;
    log.cacheWriteTokens = usage.cacheWrite;
    log.cacheWrite1hTokens = usage.cacheWrite1h ?? 0;
    log.webSearches = usage.webSearches ?? 0;
    log.serviceTier = usage.serviceTier ?? null;
    log.inferenceGeo = usage.inferenceGeo ?? null;
  }
  const logs = call.svc.logs;
  // One closure: the row is stamped as it is written, inside the commit.
  const alongside: Alongside = (tx) => logs.write(stamped(call), tx);
  if (logs.rider) alongside.rider = () => logs.rider!(stamped(call));
  return hold.post(cost, alongside);
}

/** The row's latency, at its write. */
function stamped(call: RelayCall): LogRow {
  call.log.latencyMs = performance.now() - call.started;
  return call.log;
}

/** What follows a committed charge: the low-balance notice and the calibration's samples (see post). */
export function charged(call: RelayCall, cost: number, usage: TokenUsage | null, inputCounted: boolean, countedOutput: TextSize | null): void {
  const log = call.log;
  // The low-balance notice is looked at off this request (notices/notices.ts): a no-op without [email] or [notifications].
  if (cost > 0) call.svc.notices?.charged(call.key.accountId);
  if (!usage || !log.model) return;
  if (inputCounted) {
    // The bytes the upstream counted, not the client's: a body that grows or shrinks in translation
    // would otherwise teach every tenant's estimate of the model a ratio no body has.
    const body = call.sentSize ?? bodySizeOf(call);
    call.svc.calibration.record(log.model, body.bytes, promptTokens(usage), body.chars);
  }
  if (countedOutput) call.svc.calibration.recordOutput(log.model, countedOutput.bytes, usage.output, countedOutput.chars);
}
