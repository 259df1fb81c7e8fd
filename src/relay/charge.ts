import type { RelayCall } from "./context.ts";
import { boundedCost, type Hold } from "../ledger/ledger.ts";
import type { TokenUsage } from "../core/money.ts";

// A request's hold, as the relay takes and posts it: the one place where a request's money meets its
// log row (the JSON relays and the stream both post through here).

/** Takes the request's hold; the pipeline's error path closes it too, as a last resort. */
export function reserve(call: RelayCall, amountNano: number): Hold {
  const hold = call.svc.ledger.reserve(call.requestId, call.key.accountId, call.key.id, amountNano);
  call.hold = hold;
  return hold;
}

/** Posts the request's cost with its log row (usage, cost, status) in one commit. */
export function post(call: RelayCall, hold: Hold, cost: number, usage: TokenUsage | null, status: number): Promise<unknown> {
  const log = call.log;
  log.costNano = boundedCost(cost);
  log.status = status;
  if (usage) {
    log.inputTokens = usage.input;
    log.outputTokens = usage.output;
    log.cacheReadTokens = usage.cacheRead;
    log.cacheWriteTokens = usage.cacheWrite;
  }
  return hold.post(cost, () => {
    log.latencyMs = performance.now() - call.started;
    call.svc.logs.write(log);
  });
}
