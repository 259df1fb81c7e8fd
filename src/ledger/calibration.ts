import type { Awaitable } from "../core/awaitable.ts";
import { BYTES_PER_TOKEN, estimateTokens } from "./estimate.ts";

// The byte estimator calibrated on the traffic itself. Every settled text request whose upstream
// reported its own input count gives one input sample per model: the bytes (and characters) of the
// body the upstream was sent (its translation, when translated) and the real input tokens
// (uncached, cache read and cache write alike: all of them are input the bytes carried). Every completed stream whose upstream reported its output count
// gives one output sample: the text, thinking and tool argument bytes delivered and that count. The
// rules (docs/database.md, "The hold's input estimate" and "A cancelled stream's output estimate"):
// - count_tokens answers bytes / the window's median bytes per token, and the typical error of that
//   answer over the window, once the window holds MIN_SAMPLES;
// - a hold is sized on the window's lowest bytes per token, so no request of the window would have
//   been held short; never below half the plain estimate (MAX_HOLD_BYTES_PER_TOKEN) nor above four
//   times it (MIN_HOLD_BYTES_PER_TOKEN);
// - a cancelled stream's output is counted on the output window's lowest bytes per token (most
//   tokens for the bytes delivered: what the provider bills the operator is not undercounted), within
//   the same bounds.

/** Requests kept per model: the oldest is dropped when a new one comes. */
export const WINDOW = 500;
/** Below this many samples the plain estimate stands (`typical_error_pct: null`, docs/api.md#rules). */
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

/**
 * An answer shorter than this is no output sample: its count's fixed part (the tokens of a tool
 * call's wrapper, an end-of-turn token) would weigh on a few bytes, and the window's low end, which
 * every cancelled stream of the model is charged on, would follow the shortest answer of the window.
 */
export const MIN_OUTPUT_SAMPLE_BYTES = 256;

/** What one window (input or output) says. */
export interface WindowView {
  samples: number;
  /** The window holds MIN_SAMPLES: count_tokens and holds use it. */
  calibrated: boolean;
  /** Median body bytes per real input token within [1, 8] (count_tokens' divisor); null without samples. */
  medianBytesPerToken: number | null;
  /** The divisor of a hold's input estimate (a cancelled stream's output estimate): the window's lowest bytes per token, within [1, 8] (4 before MIN_SAMPLES). */
  holdBytesPerToken: number;
  /** Median absolute percentage error of the calibrated estimate over the window, one decimal. */
  typicalErrorPct: number | null;
  /** The same for the plain estimate (ledger/estimate.ts): how far the uncalibrated rule is off for this model. */
  plainErrorPct: number | null;
}

/** What one model's estimator says: its input window, and its output window under `output`. */
export interface CalibrationView extends WindowView {
  model: string;
  output: OutputView;
}

/** The output window as reported: count_tokens never reads it, so it has no typical error. */
export interface OutputView {
  samples: number;
  calibrated: boolean;
  medianBytesPerToken: number | null;
  /** The divisor of a cancelled stream's output estimate (the plain estimate before MIN_SAMPLES). */
  cancelBytesPerToken: number;
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
function typicalError(bytes: Uint32Array, chars: Uint32Array, tokens: Uint32Array, n: number, estimate: (b: number, c: number) => number): number {
  const errors = new Float64Array(n);
  for (let i = 0; i < n; i++) errors[i] = (Math.abs(estimate(bytes[i]!, chars[i]!) - tokens[i]!) / tokens[i]!) * 100;
  return oneDecimal(median(errors.sort()));
}

/** A window as a settings value holds it: whole numbers, oldest first (`chars` absent in rows of older versions). */
interface WindowJson {
  bytes: number[];
  tokens: number[];
  chars: number[];
}

/**
 * One model's last WINDOW samples of one kind (input or output) in a ring: a push is three stores and
 * a comparison, nothing allocated. A sample's characters serve the plain estimate's error only: the
 * calibrated divisors are bytes per token.
 */
export class CalibrationWindow {
  private readonly bytes = new Uint32Array(WINDOW);
  private readonly chars = new Uint32Array(WINDOW);
  private readonly tokens = new Uint32Array(WINDOW);
  private next = 0;
  private count = 0;
  /** Lowest bytes per token in the window; rescanned only when the sample that held it is dropped. */
  private lowest = Infinity;
  private lowestStale = false;
  /** The statistics, until the next push. */
  private computed: { view: WindowView; median: number | null } | null = null;

  get samples(): number {
    return this.count;
  }

  /** One settled request: its text's bytes, the upstream's tokens (both whole, at least 1), its characters (bytes: ASCII). */
  push(bytes: number, tokens: number, chars = bytes): void {
    const at = this.next;
    if (this.count === WINDOW && this.bytes[at]! / this.tokens[at]! <= this.lowest) this.lowestStale = true;
    this.bytes[at] = bytes;
    this.chars[at] = Math.min(chars, bytes);
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

  /** The divisor of a hold's input estimate, or a cancelled stream's output one (see MAX_HOLD_BYTES_PER_TOKEN and MIN_HOLD_BYTES_PER_TOKEN). */
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
  stats(): WindowView {
    return (this.computed ??= this.compute()).view;
  }

  /** count_tokens' estimate: the plain one before MIN_SAMPLES, else bytes / the median bytes per token (within [1, 8]). */
  estimate(bytes: number, chars = bytes): number {
    if (this.count < MIN_SAMPLES) return estimateTokens(bytes, chars);
    const m = (this.computed ??= this.compute()).median!;
    return Math.ceil(bytes / m);
  }

  /**
   * The conservative estimate (a hold's input, a cancelled stream's output): the plain one before
   * MIN_SAMPLES, else bytes over the window's lowest bytes per token, never below half the plain one.
   */
  conservative(bytes: number, chars = bytes): number {
    const plain = estimateTokens(bytes, chars);
    if (this.count < MIN_SAMPLES) return plain;
    return Math.max(Math.ceil(bytes / this.holdBytesPerToken()), Math.ceil(plain / 2));
  }

  private compute(): { view: WindowView; median: number | null } {
    const n = this.count;
    let m: number | null = null;
    let typical: number | null = null;
    let plain: number | null = null;
    if (n > 0) {
      const ratios = new Float64Array(n);
      for (let i = 0; i < n; i++) ratios[i] = this.bytes[i]! / this.tokens[i]!;
      // Bounded as holds are: past [1, 8] bytes a token the window says more of its samples (a body
      // the upstream counted 76 times over, an upstream's absurd count) than of the model, and an
      // unbounded median once answered 4,468 tokens for another account's 117 bytes.
      const mid = Math.min(Math.max(median(ratios.sort()), MIN_HOLD_BYTES_PER_TOKEN), MAX_HOLD_BYTES_PER_TOKEN);
      m = mid;
      typical = typicalError(this.bytes, this.chars, this.tokens, n, (b) => Math.ceil(b / mid));
      plain = typicalError(this.bytes, this.chars, this.tokens, n, estimateTokens);
    }
    const view: WindowView = {
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

  /** The window as a settings value holds it, oldest first. */
  toJson(): WindowJson {
    const start = this.count === WINDOW ? this.next : 0;
    const out: WindowJson = { bytes: [], tokens: [], chars: [] };
    for (let k = 0; k < this.count; k++) {
      const i = (start + k) % WINDOW;
      out.bytes.push(this.bytes[i]!);
      out.tokens.push(this.tokens[i]!);
      out.chars.push(this.chars[i]!);
    }
    return out;
  }

  /** A window from its settings value; one that is not a window (edited by hand, cut short) gives an empty window. */
  static fromJson(parsed: unknown): CalibrationWindow {
    const w = new CalibrationWindow();
    const { bytes, tokens, chars } = (parsed ?? {}) as { bytes?: unknown; tokens?: unknown; chars?: unknown };
    if (!Array.isArray(bytes) || !Array.isArray(tokens) || bytes.length !== tokens.length) return w;
    if (![...bytes, ...tokens].every(isSampleCount)) return w;
    // Rows written before characters were kept: as many as bytes (what the plain rule was then, bytes / 4).
    const chs = Array.isArray(chars) && chars.length === bytes.length && chars.every(isSampleCount) ? chars : bytes;
    // The newest WINDOW, should the value hold more (a larger window in an older version).
    for (let i = Math.max(0, bytes.length - WINDOW); i < bytes.length; i++) w.push(bytes[i], tokens[i], chs[i]);
    return w;
  }
}

/**
 * One model's two windows. Its settings value is the input window's arrays, read by an operator with
 * sqlite3's json functions (`json_array_length(value, '$.bytes')`), with the output window's under
 * `output`; a value written before output was learnt has none, and starts an empty output window.
 */
export class ModelCalibration {
  constructor(
    readonly model: string,
    readonly input = new CalibrationWindow(),
    readonly output = new CalibrationWindow(),
  ) {}

  view(): CalibrationView {
    const o = this.output.stats();
    return {
      model: this.model,
      ...this.input.stats(),
      output: { samples: o.samples, calibrated: o.calibrated, medianBytesPerToken: o.medianBytesPerToken, cancelBytesPerToken: o.holdBytesPerToken, plainErrorPct: o.plainErrorPct },
    };
  }

  encode(): string {
    return JSON.stringify({ ...this.input.toJson(), output: this.output.toJson() });
  }

  static decode(model: string, value: string): ModelCalibration {
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(value);
    } catch {
      // an empty window, below
    }
    const output = (parsed as { output?: unknown } | null)?.output;
    return new ModelCalibration(model, CalibrationWindow.fromJson(parsed), CalibrationWindow.fromJson(output));
  }
}

/** A count a sample may hold: whole, at least 1, within the window's 32-bit cells. */
export const isSampleCount = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 1 && v <= 0xffff_ffff;

/** Where windows persist: one settings row per model (src/store/settings/ owns the SQL). */
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
  private readonly windows = new Map<string, ModelCalibration>();
  private readonly changed = new Set<ModelCalibration>();
  private due = 0;

  constructor(
    private readonly store: CalibrationStore,
    private readonly write: (save: () => Awaitable<void>) => Awaitable<void> = (save) => save(),
    private readonly saveEveryMs = SAVE_EVERY_MS,
  ) {
    for (const row of store.calibrations()) this.windows.set(row.model, ModelCalibration.decode(row.model, row.value));
  }

  /** A settled request of `model` whose upstream counted its input: its body's bytes, those tokens, its characters. */
  record(model: string, bytes: number, tokens: number, chars = bytes): void {
    this.sample(model, "input", bytes, tokens, chars);
  }

  /** A completed stream of `model` whose upstream counted its output: the text's bytes delivered, that count, its characters. */
  recordOutput(model: string, bytes: number, tokens: number, chars = bytes): void {
    if (bytes >= MIN_OUTPUT_SAMPLE_BYTES) this.sample(model, "output", bytes, tokens, chars);
  }

  private sample(model: string, kind: "input" | "output", bytes: number, tokens: number, chars: number): void {
    // Zero tokens tells nothing about a ratio; neither does a text of zero bytes (an answer of thinking kept hidden).
    if (!isSampleCount(bytes) || !isSampleCount(tokens) || !isSampleCount(chars)) return;
    let m = this.windows.get(model);
    if (!m) this.windows.set(model, (m = new ModelCalibration(model)));
    m[kind].push(bytes, tokens, chars);
    this.changed.add(m);
    const now = performance.now();
    if (now < this.due) return;
    this.due = now + this.saveEveryMs;
    this.save(this.write);
  }

  /** Input tokens a hold of a body of `model` is sized on (the plain estimate before MIN_SAMPLES). */
  holdTokens(model: string, bytes: number, chars = bytes): number {
    const m = this.windows.get(model);
    return m ? m.input.conservative(bytes, chars) : estimateTokens(bytes, chars);
  }

  /**
   * Output tokens a cancelled stream of `model` is charged for the text it delivered: the plain
   * estimate before MIN_SAMPLES, else on the window's lowest bytes per token (the most tokens any
   * answer of the window had for its bytes: conservative for the operator, who pays the provider).
   */
  outputTokens(model: string, bytes: number, chars = bytes): number {
    const m = this.windows.get(model);
    return m ? m.output.conservative(bytes, chars) : estimateTokens(bytes, chars);
  }

  /** count_tokens' answer for a body of `model`. */
  countTokens(model: string, bytes: number, chars = bytes): { inputTokens: number; method: "byte_estimate" | "byte_estimate_calibrated"; typicalErrorPct: number | null } {
    const w = this.windows.get(model)?.input;
    if (!w || w.samples < MIN_SAMPLES) return { inputTokens: estimateTokens(bytes, chars), method: "byte_estimate", typicalErrorPct: null };
    return { inputTokens: w.estimate(bytes, chars), method: "byte_estimate_calibrated", typicalErrorPct: w.stats().typicalErrorPct };
  }

  /** Every model's windows, by model id. */
  views(): CalibrationView[] {
    return [...this.windows.values()].map((m) => m.view()).sort((a, b) => (a.model < b.model ? -1 : a.model > b.model ? 1 : 0));
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
