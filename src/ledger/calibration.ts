import type { Awaitable } from "../core/awaitable.ts";
import { BYTES_PER_TOKEN, estimateInputTokens } from "./estimate.ts";

// The byte estimator calibrated on the traffic itself (issue 17). Every settled text request whose
// upstream reported its own input count gives one sample per model: the body bytes the estimator
// counted and the real input tokens (uncached, cache read and cache write alike: all of them are
// input the bytes carried). The rules (docs/database.md, "The hold's input estimate"):
// - count_tokens answers bytes / the window's median bytes per token, and the typical error of that
//   answer over the window, once the window holds MIN_SAMPLES;
// - a hold is sized on the window's lowest bytes per token, so no request of the window would have
//   been held short; never below half the plain estimate (MAX_HOLD_BYTES_PER_TOKEN) nor above four
//   times it (MIN_HOLD_BYTES_PER_TOKEN).

/** Requests kept per model: the oldest is dropped when a new one comes. */
export const WINDOW = 500;
/** Below this many samples the plain estimate stands (the spec's null error). */
export const MIN_SAMPLES = 20;
/**
 * The window describes past requests, not the next one: a different body, a fallback route with
 * another tokenizer, an upstream that reports implausibly few tokens. Whatever it says, a hold's
 * input part is never below half the plain estimate, so calibration cannot take more off a hold than that.
 */
export const MAX_HOLD_BYTES_PER_TOKEN = 2 * BYTES_PER_TOKEN;
/**
 * Fewer than one body byte per token is an upstream's nonsense (a valid but absurd count: the fuzz
 * suite sends 1e9) or a tiny request's fixed overhead (a vendor's hidden tool prompt). One such
 * sample must not make a model's holds so large that every key is refused for the next 500
 * requests: a hold's input part is never above four times the plain estimate.
 */
export const MIN_HOLD_BYTES_PER_TOKEN = 1;

/** What the window says of one model's estimator. */
export interface CalibrationView {
  model: string;
  samples: number;
  /** The window holds MIN_SAMPLES: count_tokens and holds use it. */
  calibrated: boolean;
  /** Median body bytes per real input token (count_tokens' divisor); null without samples. */
  medianBytesPerToken: number | null;
  /** The divisor of a hold's input estimate: the window's lowest bytes per token, within [1, 8] (4 before MIN_SAMPLES). */
  holdBytesPerToken: number;
  /** Median absolute percentage error of the calibrated estimate over the window, one decimal. */
  typicalErrorPct: number | null;
  /** The same for the plain 4-bytes estimate: how far the uncalibrated rule is off for this model. */
  plainErrorPct: number | null;
}

const median = (sorted: Float64Array): number => {
  const n = sorted.length;
  const mid = n >> 1;
  return n % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const oneDecimal = (x: number) => Math.round(x * 10) / 10;
const twoDecimals = (x: number) => Math.round(x * 100) / 100;

/** Median absolute percentage error of `estimate` over the samples. */
function typicalError(bytes: Uint32Array, tokens: Uint32Array, n: number, estimate: (b: number) => number): number {
  const errors = new Float64Array(n);
  for (let i = 0; i < n; i++) errors[i] = (Math.abs(estimate(bytes[i]!) - tokens[i]!) / tokens[i]!) * 100;
  return oneDecimal(median(errors.sort()));
}

/** One model's last WINDOW samples in a ring: a push is two stores and a comparison, nothing allocated. */
export class CalibrationWindow {
  private readonly bytes = new Uint32Array(WINDOW);
  private readonly tokens = new Uint32Array(WINDOW);
  private next = 0;
  private count = 0;
  /** Lowest bytes per token in the window; rescanned only when the sample that held it is dropped. */
  private lowest = Infinity;
  private lowestStale = false;
  /** The statistics, until the next push. */
  private computed: { view: CalibrationView; median: number | null } | null = null;

  constructor(readonly model: string) {}

  get samples(): number {
    return this.count;
  }

  /** One settled request: its body's bytes and the upstream's input tokens (both whole, at least 1). */
  push(bytes: number, tokens: number): void {
    const at = this.next;
    if (this.count === WINDOW && this.bytes[at]! / this.tokens[at]! <= this.lowest) this.lowestStale = true;
    this.bytes[at] = bytes;
    this.tokens[at] = tokens;
    this.next = (at + 1) % WINDOW;
    if (this.count < WINDOW) this.count++;
    const ratio = bytes / tokens;
    if (ratio <= this.lowest) {
      // The new sample is the lowest, whatever the dropped one was.
      this.lowest = ratio;
      this.lowestStale = false;
    }
    this.computed = null;
  }

  /** The divisor of a hold's input estimate (see MAX_HOLD_BYTES_PER_TOKEN and MIN_HOLD_BYTES_PER_TOKEN). */
  holdBytesPerToken(): number {
    if (this.count < MIN_SAMPLES) return BYTES_PER_TOKEN;
    if (this.lowestStale) {
      let low = Infinity;
      for (let i = 0; i < this.count; i++) low = Math.min(low, this.bytes[i]! / this.tokens[i]!);
      this.lowest = low;
      this.lowestStale = false;
    }
    return Math.min(Math.max(this.lowest, MIN_HOLD_BYTES_PER_TOKEN), MAX_HOLD_BYTES_PER_TOKEN);
  }

  /** The statistics of the window, computed when read after a change (count_tokens, /metrics, the CLI). */
  stats(): CalibrationView {
    return (this.computed ??= this.compute()).view;
  }

  /** count_tokens' estimate: the plain one before MIN_SAMPLES, else bytes / the median bytes per token. */
  estimate(bytes: number): number {
    if (this.count < MIN_SAMPLES) return estimateInputTokens(bytes);
    const m = (this.computed ??= this.compute()).median!;
    return Math.ceil(bytes / m);
  }

  private compute(): { view: CalibrationView; median: number | null } {
    const n = this.count;
    let m: number | null = null;
    let typical: number | null = null;
    let plain: number | null = null;
    if (n > 0) {
      const ratios = new Float64Array(n);
      for (let i = 0; i < n; i++) ratios[i] = this.bytes[i]! / this.tokens[i]!;
      const mid = median(ratios.sort());
      m = mid;
      typical = typicalError(this.bytes, this.tokens, n, (b) => Math.ceil(b / mid));
      plain = typicalError(this.bytes, this.tokens, n, estimateInputTokens);
    }
    const view: CalibrationView = {
      model: this.model,
      samples: n,
      calibrated: n >= MIN_SAMPLES,
      medianBytesPerToken: m === null ? null : twoDecimals(m),
      holdBytesPerToken: twoDecimals(this.holdBytesPerToken()),
      typicalErrorPct: typical,
      plainErrorPct: plain,
    };
    // The exact median divides count_tokens' bytes; the view shows it rounded.
    return { view, median: m };
  }

  /**
   * The window as a settings value, oldest first: two arrays of whole numbers, so an operator can
   * read it with sqlite3's json functions (`json_array_length(value, '$.bytes')`).
   */
  encode(): string {
    const start = this.count === WINDOW ? this.next : 0;
    const bytes: number[] = [];
    const tokens: number[] = [];
    for (let k = 0; k < this.count; k++) {
      const i = (start + k) % WINDOW;
      bytes.push(this.bytes[i]!);
      tokens.push(this.tokens[i]!);
    }
    return JSON.stringify({ bytes, tokens });
  }

  /** A window from its settings value; a value that is not one (edited by hand, cut short) gives an empty window. */
  static decode(model: string, value: string): CalibrationWindow {
    const w = new CalibrationWindow(model);
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      return w;
    }
    const { bytes, tokens } = (parsed ?? {}) as { bytes?: unknown; tokens?: unknown };
    if (!Array.isArray(bytes) || !Array.isArray(tokens) || bytes.length !== tokens.length) return w;
    if (![...bytes, ...tokens].every(isSampleCount)) return w;
    // The newest WINDOW, should the value hold more (a larger window in an older version).
    for (let i = Math.max(0, bytes.length - WINDOW); i < bytes.length; i++) w.push(bytes[i], tokens[i]);
    return w;
  }
}

/** A count a sample may hold: whole, at least 1, within the window's 32-bit cells. */
export const isSampleCount = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 1 && v <= 0xffff_ffff;

/** Where windows persist: one settings row per model (src/settings.ts owns the SQL). */
export interface CalibrationStore {
  /** Read once, at start (PostgreSQL's store has them loaded by then). */
  calibrations(): { model: string; value: string }[];
  saveCalibrations(rows: { model: string; value: string }[]): Awaitable<void>;
}

/** How often at most the windows that changed are written while the server runs. */
export const SAVE_EVERY_MS = 5_000;

/**
 * Every model's window, kept in memory: the relay records and reads it on every request without SQL.
 * Windows that changed are written at most every SAVE_EVERY_MS, through `write` (the server's group
 * commit, so the rows join a batch instead of a commit of their own), and at stop; they are read at start.
 */
export class Calibration {
  private readonly windows = new Map<string, CalibrationWindow>();
  private readonly changed = new Set<CalibrationWindow>();
  private due = 0;

  constructor(
    private readonly store: CalibrationStore,
    private readonly write: (save: () => Awaitable<void>) => Awaitable<void> = (save) => save(),
    private readonly saveEveryMs = SAVE_EVERY_MS,
  ) {
    for (const row of store.calibrations()) this.windows.set(row.model, CalibrationWindow.decode(row.model, row.value));
  }

  /** A settled request of `model` whose upstream counted its input: its body's bytes and those tokens. */
  record(model: string, bytes: number, tokens: number): void {
    // Zero tokens tells nothing about a ratio; a body of zero bytes never reaches the relay.
    if (!isSampleCount(bytes) || !isSampleCount(tokens)) return;
    let w = this.windows.get(model);
    if (!w) this.windows.set(model, (w = new CalibrationWindow(model)));
    w.push(bytes, tokens);
    this.changed.add(w);
    const now = performance.now();
    if (now < this.due) return;
    this.due = now + this.saveEveryMs;
    this.save(this.write);
  }

  /** Input tokens a hold of a `bytes` body of `model` is sized on (the plain estimate before MIN_SAMPLES). */
  holdTokens(model: string, bytes: number): number {
    const w = this.windows.get(model);
    return w ? Math.ceil(bytes / w.holdBytesPerToken()) : estimateInputTokens(bytes);
  }

  /** count_tokens' answer for a `bytes` body of `model`. */
  countTokens(model: string, bytes: number): { inputTokens: number; method: "byte_estimate" | "byte_estimate_calibrated"; typicalErrorPct: number | null } {
    const w = this.windows.get(model);
    if (!w || w.samples < MIN_SAMPLES) return { inputTokens: estimateInputTokens(bytes), method: "byte_estimate", typicalErrorPct: null };
    return { inputTokens: w.estimate(bytes), method: "byte_estimate_calibrated", typicalErrorPct: w.stats().typicalErrorPct };
  }

  /** Every model's window, by model id. */
  views(): CalibrationView[] {
    return [...this.windows.values()].map((w) => w.stats()).sort((a, b) => (a.model < b.model ? -1 : a.model > b.model ? 1 : 0));
  }

  /** Writes what changed now, outside any batch (the server's stop, after the last request). */
  flush(): Awaitable<void> {
    return this.save((save) => save());
  }

  private save(write: (save: () => Awaitable<void>) => Awaitable<void>): Awaitable<void> {
    if (this.changed.size === 0) return;
    const windows = [...this.changed];
    this.changed.clear();
    // The database refused (full, locked, unreachable): the requests' own writes fail and say so;
    // these rows are tried again with the next save, and the windows stay in memory meanwhile.
    const retry = () => {
      for (const w of windows) this.changed.add(w);
    };
    try {
      const saved = write(() => this.store.saveCalibrations(windows.map((w) => ({ model: w.model, value: w.encode() }))));
      if (saved instanceof Promise) return saved.catch(retry);
    } catch {
      retry();
    }
  }
}
