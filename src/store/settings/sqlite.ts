import { eq, like } from "drizzle-orm";
import { changeWatch, type ChangeWatch } from "../engine/sqlite/change-watch.ts";
import type { Db } from "../engine/sqlite/client.ts";
import { settings } from "../schema/sqlite.ts";
import { CALIBRATION, calibrationRows, registrationCreditRow, type CalibrationRow, type SettingsStore } from "./contract.ts";

/**
 * Adds `amountNano` to the day's registration credits if they stay within `limitNano`; false (nothing
 * added) past it. Called inside the transaction that credits the account (the accounts' registration), which
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

/** The settings on SQLite: the switch read once per change another process commits. */
export class Settings implements SettingsStore {
  private readonly watch: ChangeWatch;
  // Read on every key route; read again only after another process commits (store/engine/sqlite/change-watch.ts), so
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

  async setPaused(on: boolean): Promise<void> {
    const value = on ? "true" : "false";
    await this.db.insert(settings).values({ name: "paused", value }).onConflictDoUpdate({ target: settings.name, set: { value } });
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
