import { eq, like } from "drizzle-orm";
import { changeWatch, type ChangeWatch } from "./store/engine/sqlite/change-watch.ts";
import type { Db } from "./store/engine/sqlite/client.ts";
import { settings } from "./store/schema/sqlite.ts";
import type { Awaitable } from "./core/awaitable.ts";

/** Names of the estimator's calibration rows, one per model (ledger/calibration.ts writes their values). */
export const CALIBRATION = "calibration:";

export type CalibrationRow = { model: string; value: string };

/** The calibration rows among stored settings, by model id. */
export const calibrationRows = (stored: { name: string; value: string }[]): CalibrationRow[] =>
  stored.filter((r) => r.name.startsWith(CALIBRATION)).map((r) => ({ model: r.name.slice(CALIBRATION.length), value: r.value }));

/**
 * The row that sums the starting credits registrations were granted on the UTC day of `now`
 * (`registration_credit:2026-11-25`, nano-dollars): the daily ceiling of docs/dashboard.md.
 */
export const registrationCreditRow = (now: number) => `registration_credit:${new Date(now).toISOString().slice(0, 10)}`;

/**
 * Adds `amountNano` to the day's registration credits if they stay within `limitNano`; false (nothing
 * added) past it. Called inside the transaction that credits the account (ledger/accounts.ts), which
 * on SQLite holds the write lock: the read and the write see no other registration between them.
 */
export function countRegistrationCredit(db: Db, amountNano: number, limitNano: number, now: number): boolean {
  const name = registrationCreditRow(now);
  const granted = Number(db.select({ value: settings.value }).from(settings).where(eq(settings.name, name)).get()?.value ?? 0);
  if (granted + amountNano > limitNano) return false;
  const value = String(granted + amountNano);
  db.insert(settings).values({ name, value }).onConflictDoUpdate({ target: settings.name, set: { value } }).run();
  return true;
}

/**
 * The settings as every caller uses them, whichever database holds them: `Settings` on SQLite,
 * `PgSettings` (pg-settings.ts) on PostgreSQL. `paused` is read on every request, so it answers from
 * memory on both; tests/settings-contract.test.ts holds both to the same results.
 */
export interface SettingsStore {
  readonly paused: boolean;
  setPaused(on: boolean): Awaitable<void>;
  /** The calibration windows as stored, by model id. */
  calibrations(): CalibrationRow[];
  /** Replaces these models' calibration windows. */
  saveCalibrations(rows: CalibrationRow[]): Awaitable<void>;
}

/**
 * Operator switches kept in the database so the CLI of another process can flip them, and the
 * estimator's calibration windows, so that a restart keeps them.
 */
export class Settings implements SettingsStore {
  private readonly watch: ChangeWatch;
  // Read on every key route; read again only after another process commits (db/change-watch.ts), so
  // the query builder's cost is paid once per change, not per request.
  private pausedCopy: boolean | null = null;

  constructor(private readonly db: Db) {
    this.watch = changeWatch(db.$client);
    this.watch.onChange(() => {
      this.pausedCopy = null;
    });
  }

  get paused(): boolean {
    this.watch.sync();
    this.pausedCopy ??= this.db.select({ value: settings.value }).from(settings).where(eq(settings.name, "paused")).get()?.value === "true";
    return this.pausedCopy;
  }

  setPaused(on: boolean): void {
    const value = on ? "true" : "false";
    this.db.insert(settings).values({ name: "paused", value }).onConflictDoUpdate({ target: settings.name, set: { value } }).run();
    this.pausedCopy = on;
  }

  /** The calibration windows as stored, by model id. */
  calibrations(): CalibrationRow[] {
    return calibrationRows(this.db.select().from(settings).where(like(settings.name, `${CALIBRATION}%`)).all());
  }

  /** Replaces these models' calibration windows. No transaction of its own: the caller's batch, or one statement each. */
  saveCalibrations(rows: CalibrationRow[]): void {
    for (const { model, value } of rows) {
      const name = CALIBRATION + model;
      this.db.insert(settings).values({ name, value }).onConflictDoUpdate({ target: settings.name, set: { value } }).run();
    }
  }
}
