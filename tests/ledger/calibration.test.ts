import { describe, expect, it } from "bun:test";
import {
  Calibration, CalibrationWindow, MAX_HOLD_BYTES_PER_TOKEN, MIN_HOLD_BYTES_PER_TOKEN, MIN_OUTPUT_SAMPLE_BYTES, MIN_SAMPLES, WINDOW, type CalibrationStore,
} from "../../src/ledger/calibration.ts";
import { estimateInputTokens } from "../../src/ledger/estimate.ts";

// The estimator's calibration window (ledger/calibration.ts) on its own: what it keeps, what it
// answers, how it sizes holds and how it persists. The HTTP side is tests/ledger/calibration-http.test.ts.

/** A settings table in memory, counting its writes. */
function memoryStore(rows: { model: string; value: string }[] = []): CalibrationStore & { rows: Map<string, string>; writes: number } {
  const map = new Map(rows.map((r) => [r.model, r.value]));
  return {
    rows: map,
    writes: 0,
    calibrations: () => [...map].map(([model, value]) => ({ model, value })),
    saveCalibrations(rs) {
      this.writes++;
      for (const r of rs) map.set(r.model, r.value);
    },
  };
}

/** `n` samples of `bytes` each at `bpt` bytes per token. */
function fill(w: { push(b: number, t: number): void } | Calibration, n: number, bytes: number, bpt: number, model = "m"): void {
  for (let i = 0; i < n; i++) {
    if (w instanceof Calibration) w.record(model, bytes, Math.round(bytes / bpt));
    else w.push(bytes, Math.round(bytes / bpt));
  }
}

/** The output window of a model no stream has yet taught. */
const EMPTY_OUTPUT = { samples: 0, calibrated: false, medianBytesPerToken: null, cancelBytesPerToken: 4, plainErrorPct: null };

describe("the calibration window", () => {
  it(`keeps the last ${WINDOW} samples: the oldest is dropped first`, () => {
    const w = new CalibrationWindow();
    fill(w, WINDOW, 6000, 3); // 3 bytes a token, to be pushed out
    fill(w, WINDOW - 1, 6000, 6);
    expect(w.samples).toBe(WINDOW);
    // One old sample left: the median is the new ratio, the hold still sees the old one.
    expect(w.stats().medianBytesPerToken).toBe(6);
    expect(w.holdBytesPerToken()).toBe(3);
    fill(w, 1, 6000, 6);
    expect(w.holdBytesPerToken()).toBe(6);
    expect(w.toJson().bytes).toHaveLength(WINDOW);
  });

  it(`answers the plain estimate and no error before ${MIN_SAMPLES} samples`, () => {
    const c = new Calibration(memoryStore());
    fill(c, MIN_SAMPLES - 1, 6000, 6);
    expect(c.countTokens("m", 6000)).toEqual({ inputTokens: estimateInputTokens(6000), method: "byte_estimate", typicalErrorPct: null });
    expect(c.holdTokens("m", 6000)).toBe(estimateInputTokens(6000));
  });

  it(`answers bytes over the median bytes per token, with the median error, from ${MIN_SAMPLES} samples`, () => {
    const c = new Calibration(memoryStore());
    // Half the requests at 5 bytes a token, half at 7: the median ratio is 6, every calibrated estimate is off by 1/6 or 1/7.
    for (let i = 0; i < MIN_SAMPLES / 2; i++) {
      c.record("m", 7000, 1400);
      c.record("m", 7000, 1000);
    }
    const answer = c.countTokens("m", 6000);
    expect(answer.method).toBe("byte_estimate_calibrated");
    expect(answer.inputTokens).toBe(1000);
    // |7000/6 − 1400| / 1400 = 16.7 %, |7000/6 − 1000| / 1000 = 16.7 %; the plain rule is off by 25 % and 75 %.
    expect(answer.typicalErrorPct).toBe(16.7);
    expect(c.views()[0]).toMatchObject({ model: "m", samples: MIN_SAMPLES, calibrated: true, medianBytesPerToken: 6, holdBytesPerToken: 5, plainErrorPct: 50 });
  });

  it("sizes a hold on the lowest bytes per token of the window, so no request of it would have been held short", () => {
    const c = new Calibration(memoryStore());
    const samples: [number, number][] = [];
    for (let i = 0; i < 60; i++) samples.push([3000 + 97 * i, Math.round((3000 + 97 * i) / (5 + (i % 7) * 0.3))]);
    for (const [b, t] of samples) c.record("m", b, t);
    for (const [b, t] of samples) expect(c.holdTokens("m", b)).toBeGreaterThanOrEqual(t);
    // Fewer tokens than the plain rule says: the hold is smaller than the plain estimate.
    expect(c.holdTokens("m", 10_000)).toBeLessThan(estimateInputTokens(10_000));
  });

  it("holds more than the plain estimate for a model whose tokens are denser than 4 bytes", () => {
    const c = new Calibration(memoryStore());
    fill(c, MIN_SAMPLES, 6000, 2.5);
    expect(c.holdTokens("m", 10_000)).toBe(4000);
  });

  it(`never holds less than half the plain estimate, whatever the window says (${MAX_HOLD_BYTES_PER_TOKEN} bytes a token at most)`, () => {
    const c = new Calibration(memoryStore());
    fill(c, MIN_SAMPLES, 6000, 60);
    expect(c.holdTokens("m", 8000)).toBe(1000);
    expect(c.views()[0]!.holdBytesPerToken).toBe(MAX_HOLD_BYTES_PER_TOKEN);
  });

  it(`never holds more than four times the plain estimate, so one absurd upstream count cannot refuse every key (${MIN_HOLD_BYTES_PER_TOKEN} byte a token at least)`, () => {
    const c = new Calibration(memoryStore());
    fill(c, MIN_SAMPLES, 6000, 6);
    c.record("m", 300, 1_000_000_000);
    expect(c.holdTokens("m", 8000)).toBe(8000);
    expect(c.countTokens("m", 6000).inputTokens).toBe(1000);
  });

  it(`answers count_tokens within ${MIN_HOLD_BYTES_PER_TOKEN} to ${MAX_HOLD_BYTES_PER_TOKEN} bytes a token, whatever the median says`, () => {
    // A window of bodies the upstream counted 76 times over (0.05 bytes a token) answered 4,468 tokens for 117 bytes.
    const dense = new Calibration(memoryStore());
    fill(dense, 25, 10_900, 0.05);
    expect(dense.countTokens("m", 117).inputTokens).toBe(117);
    expect(dense.views()[0]!.medianBytesPerToken).toBe(MIN_HOLD_BYTES_PER_TOKEN);
    // Its typical error is that of the bounded answer: not 0 %, as the window's own median gave.
    expect(dense.countTokens("m", 117).typicalErrorPct).toBeGreaterThan(90);
    const sparse = new Calibration(memoryStore());
    fill(sparse, 25, 6000, 60);
    expect(sparse.countTokens("m", 8000).inputTokens).toBe(1000);
  });

  it("takes no sample without tokens to divide by, or with counts that are not whole numbers", () => {
    const c = new Calibration(memoryStore());
    c.record("m", 100, 0);
    c.record("m", 0, 10);
    c.record("m", 100, 2.5);
    c.record("m", 100, Number.NaN);
    expect(c.views()).toEqual([]);
  });

  it("keeps one window per model", () => {
    const c = new Calibration(memoryStore());
    fill(c, MIN_SAMPLES, 6000, 6, "a");
    fill(c, 3, 6000, 3, "b");
    expect(c.views().map((v) => [v.model, v.samples, v.calibrated])).toEqual([
      ["a", MIN_SAMPLES, true],
      ["b", 3, false],
    ]);
    expect(c.countTokens("b", 6000).method).toBe("byte_estimate");
  });
});

describe("the output window", () => {
  it("counts a cancelled stream's output on the lowest output bytes per token of the model's completed streams", () => {
    const c = new Calibration(memoryStore());
    for (let i = 0; i < MIN_SAMPLES; i++) c.recordOutput("m", 1200, i === 7 ? 600 : 300); // 4 bytes a token, once 2
    expect(c.outputTokens("m", 1000)).toBe(500);
    expect(c.views()[0]!.output).toEqual({ samples: MIN_SAMPLES, calibrated: true, medianBytesPerToken: 4, cancelBytesPerToken: 2, plainErrorPct: 0 });
    // The input window learnt nothing from them.
    expect(c.holdTokens("m", 1000)).toBe(250);
  });

  it(`counts the plain estimate before ${MIN_SAMPLES} samples: CJK a token a character`, () => {
    const c = new Calibration(memoryStore());
    for (let i = 0; i < MIN_SAMPLES - 1; i++) c.recordOutput("m", 1200, 600);
    // 76 CJK characters: 228 bytes.
    expect(c.outputTokens("m", 228, 76)).toBe(76);
    expect(c.outputTokens("other", 228, 76)).toBe(76);
  });

  it(`takes no sample from an answer under ${MIN_OUTPUT_SAMPLE_BYTES} bytes, whose count's fixed part would set the low end`, () => {
    const c = new Calibration(memoryStore());
    for (let i = 0; i < MIN_SAMPLES; i++) c.recordOutput("m", MIN_OUTPUT_SAMPLE_BYTES - 1, 200);
    expect(c.views()).toEqual([]);
  });

  it("persists beside the input window, and a row without it (an older version's) reads as an empty output window", () => {
    const store = memoryStore([{ model: "old", value: JSON.stringify({ bytes: [600], tokens: [100] }) }]);
    const c = new Calibration(store);
    expect(c.views()[0]).toMatchObject({ model: "old", samples: 1, output: EMPTY_OUTPUT });
    fill(c, 3, 6000, 6, "old");
    c.recordOutput("old", 900, 300);
    c.flush();
    const row = JSON.parse(store.rows.get("old")!);
    expect(row.bytes).toHaveLength(4);
    expect(row.output).toEqual({ bytes: [900], tokens: [300], chars: [900] });
    expect(new Calibration(store).views()).toEqual(c.views());
  });
});

describe("the calibration's persistence", () => {
  it("reads the windows back as they were written, oldest first", () => {
    const store = memoryStore();
    const c = new Calibration(store);
    fill(c, WINDOW + 30, 6000, 6);
    c.record("m", 9000, 1000);
    c.flush();
    const again = new Calibration(store);
    expect(again.views()).toEqual(c.views());
    expect(again.countTokens("m", 6000)).toEqual(c.countTokens("m", 6000));
    expect(JSON.parse(store.rows.get("m")!).bytes.at(-1)).toBe(9000);
  });

  it("writes what changed at once, then at most once per interval, then the rest at stop", () => {
    const store = memoryStore();
    const c = new Calibration(store, (save) => save(), 60_000);
    fill(c, 5, 6000, 6);
    expect(store.writes).toBe(1);
    expect(JSON.parse(store.rows.get("m")!).bytes).toHaveLength(1);
    c.flush();
    expect(store.writes).toBe(2);
    expect(JSON.parse(store.rows.get("m")!).bytes).toHaveLength(5);
    c.flush();
    expect(store.writes).toBe(2);
  });

  it("starts empty from a value that is not a window, rather than failing the start", () => {
    for (const value of ["", "not json", "null", '{"bytes":[1,2],"tokens":[1]}', '{"bytes":[100],"tokens":[-3]}', '{"bytes":"x","tokens":[]}']) {
      const c = new Calibration(memoryStore([{ model: "m", value }]));
      expect(c.views()).toEqual([{ model: "m", samples: 0, calibrated: false, medianBytesPerToken: null, holdBytesPerToken: 4, typicalErrorPct: null, plainErrorPct: null, output: EMPTY_OUTPUT }]);
    }
  });

  it("keeps the samples and tries again later when the database refuses the write", () => {
    const store = memoryStore();
    let refuse = true;
    const c = new Calibration(store, (save) => {
      if (refuse) throw Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });
      save();
    }, 0);
    fill(c, 3, 6000, 6);
    expect(store.rows.size).toBe(0);
    refuse = false;
    fill(c, 1, 6000, 6);
    expect(JSON.parse(store.rows.get("m")!).bytes).toHaveLength(4);
  });

  it("keeps the samples and tries again later when a store that promises (PostgreSQL) refuses the write", async () => {
    const store = memoryStore();
    let refuse = true;
    const saved = store.saveCalibrations.bind(store);
    store.saveCalibrations = async (rs) => {
      if (refuse) throw new Error("connection refused");
      saved(rs);
    };
    const c = new Calibration(store, (save) => save(), 0);
    fill(c, 3, 6000, 6);
    await Bun.sleep(0);
    expect(store.rows.size).toBe(0);
    refuse = false;
    c.flush();
    await Bun.sleep(0);
    expect(JSON.parse(store.rows.get("m")!).bytes).toHaveLength(3);
  });
});
