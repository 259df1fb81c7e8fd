import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { PgSettings } from "../../src/store/settings/postgres.ts";
import type { SettingsStore } from "../../src/store/settings/contract.ts";
import { Settings } from "../../src/store/settings/sqlite.ts";
import { ENGINES, stopEngines, pgOf, POSTGRES, run, type Opened } from "../support/engines.ts";

// This file's databases and PostgreSQL server (support/engines.ts).
afterAll(stopEngines);

// One settings store, two implementations: every behaviour below holds on SQLite and on PostgreSQL
// (never skipped: CI installs postgresql). SQLite's answers are the reference.

setDefaultTimeout(30_000);

/** A store as a process starting on the database makes it. */
const storeOn = async (o: Opened): Promise<SettingsStore> => (o.kind === "sqlite" ? new Settings(o.db) : await PgSettings.load(o.db));

for (const engine of ENGINES) {
  describe(`settings on ${engine.name}`, () => {
    let o: Opened;
    beforeAll(async () => {
      o = await engine.open();
    });

    it("are not paused on a new installation", async () => {
      expect((await storeOn(await engine.open())).paused).toBe(false);
    });

    it("pause and resume at once for the store that switched", async () => {
      const s = await storeOn(o);
      await s.setPaused(true);
      expect(s.paused).toBe(true);
      await s.setPaused(false);
      expect(s.paused).toBe(false);
    });

    it("keep the switch for a store started later", async () => {
      await (await storeOn(o)).setPaused(true);
      expect((await storeOn(o)).paused).toBe(true);
      await (await storeOn(o)).setPaused(false);
      expect((await storeOn(o)).paused).toBe(false);
    });

    it("keep calibration windows by model for a store started later, a save replacing a model's window", async () => {
      const s = await storeOn(o);
      await s.saveCalibrations([
        { model: "a", value: "1" },
        { model: "b/c:d", value: "2" },
      ]);
      await s.saveCalibrations([{ model: "a", value: "3" }]);
      const byModel = (rows: { model: string; value: string }[]) => Object.fromEntries(rows.map((r) => [r.model, r.value]));
      expect(byModel(s.calibrations())).toEqual({ a: "3", "b/c:d": "2" });
      expect(byModel((await storeOn(o)).calibrations())).toEqual({ a: "3", "b/c:d": "2" });
    });

    it("count no other setting as a calibration window", async () => {
      const fresh = await engine.open();
      const s = await storeOn(fresh);
      await s.setPaused(true);
      expect((await storeOn(fresh)).calibrations()).toEqual([]);
    });

    it("refuse a calibration row without a value, keeping the rows before", async () => {
      const fresh = await engine.open();
      const s = await storeOn(fresh);
      await s.saveCalibrations([{ model: "kept", value: "1" }]);
      await expect(async () => s.saveCalibrations([{ model: "kept", value: null as never }])).toThrow();
      expect((await storeOn(fresh)).calibrations()).toEqual([{ model: "kept", value: "1" }]);
    });
  });
}

describe("settings on PostgreSQL, the copy in memory", () => {
  let o: Opened;
  beforeAll(async () => {
    o = await POSTGRES.open();
  });

  it("answers paused without a promise, as read at load", async () => {
    const s = await PgSettings.load(pgOf(o));
    expect(s.paused).toBe(false);
  });

  it("sees another instance's pause only once refreshed", async () => {
    const [mine, other] = [await PgSettings.load(pgOf(o)), await PgSettings.load(pgOf(o))];
    await other.setPaused(true);
    expect(mine.paused).toBe(false);
    await mine.refresh();
    expect(mine.paused).toBe(true);
    await other.setPaused(false);
    await mine.refresh();
    expect(mine.paused).toBe(false);
  });

  it("reads calibration windows written since load on refresh", async () => {
    const mine = await PgSettings.load(pgOf(o));
    await run(o, "INSERT INTO settings (name, value) VALUES ($1, $2)", "calibration:late", "9");
    expect(mine.calibrations().some((r) => r.model === "late")).toBe(false);
    await mine.refresh();
    expect(mine.calibrations()).toContainEqual({ model: "late", value: "9" });
  });

  it("saves one window per model when a batch names a model twice, the last one winning", async () => {
    const s = await PgSettings.load(pgOf(o));
    await s.saveCalibrations([
      { model: "twice", value: "1" },
      { model: "twice", value: "2" },
    ]);
    expect((await PgSettings.load(pgOf(o))).calibrations()).toContainEqual({ model: "twice", value: "2" });
  });
});
