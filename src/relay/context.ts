import type { KeyRecord } from "../store/keys/contract.ts";
import type { Catalog } from "../catalog/catalog.ts";
import type { Config } from "../config/load.ts";
import type { Commits } from "../store/commits/contract.ts";
import type { Calibration } from "../ledger/calibration.ts";
import type { TextSize } from "../ledger/estimate.ts";
import type { Hold } from "../ledger/hold.ts";
import type { Notices } from "../notices/notices.ts";
import type { MoneyLedger } from "../store/ledger/contract.ts";
import type { LogRow, RequestLogStore } from "../store/request-log/contract.ts";
import type { Provider } from "../upstreams/types.ts";
import type { Cutoff } from "./cutoff.ts";
import type { Health } from "./health.ts";
import type { Capacity } from "./capacity.ts";

// The relay's view of a request and of the process: http/ builds a RelayCall once a key has passed
// auth and limits, and services.ts builds the parts; the relay imports neither.

/** The parts of the process a relayed request uses. */
export interface RelayServices {
  config: Config;
  catalog: Catalog;
  /** Per-request ledger and log writes: committed in groups on SQLite (store/commits/sqlite.ts), one by one on PostgreSQL. */
  commits: Commits;
  ledger: MoneyLedger;
  /** The estimator's window per model: holds are sized on it, settled requests feed it. */
  calibration: Calibration;
  logs: RequestLogStore;
  health: Health;
  /** Each provider's keys (in flight, resting) and each weighted model's turn. */
  capacity: Capacity;
  providers: Map<string, Provider>;
  /**
   * Aborted when a stop's deadline passes (server.ts drain): upstream calls still running end, so
   * that every request in flight answers, resolves its hold and writes its log row before the exit.
   */
  cutoff: Cutoff;
  /** Told of each charge, for the low-balance notice; absent in rigs that build the relay without it. */
  notices?: Pick<Notices, "charged">;
}

/** One request on a key route, past pause, body limit, key, rate limit, JSON and idempotency. */
export interface RelayCall {
  svc: RelayServices;
  request: Request;
  requestId: string;
  started: number;
  key: KeyRecord;
  bytes: Uint8Array;
  /** The parsed JSON object (json routes), or the form (multipart routes). */
  json: Record<string, unknown>;
  form: FormData | null;
  search: string;
  /** Filled in by the handler as it learns model, provider, usage and cost. */
  log: LogRow;
  /**
   * The request's hold (relay/charge.ts reserve). Whoever resolves it writes the request's log row
   * with it: post commits the charge and the row together, a stream writes its row at its end. The
   * pipeline's error path closes it as a last resort.
   */
  hold: Hold | null;
  /**
   * The body's bytes and characters as the estimator reads them, measured once (relay/charge.ts
   * bodySizeOf): the client's, or the translation a handler made of them before its hold.
   */
  bodySize?: TextSize;
  /** What the last route was sent, when it was translated there: the calibration's sample (relay/charge.ts post). */
  sentSize?: TextSize;
  /** The status the last upstream route answered with (relay/routes.ts). */
  upstreamStatus?: number;
}
