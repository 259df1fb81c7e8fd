import type { SQL } from "bun";
import { eq, like, or, sql } from "drizzle-orm";
import type { PgDb } from "../engine/postgres/client.ts";
import { settings } from "../schema/postgres.ts";
import { CALIBRATION, calibrationRows, registrationCreditRow, type CalibrationRow, type SettingsStore } from "./contract.ts";

// The settings on PostgreSQL (`[database] url`). `paused` is read on every request and cannot wait
// for the network, so the rows are read at start (`load`) and again by `refresh()`, which the lead
// calls when another instance or the CLI says they changed (LISTEN/NOTIFY); this instance's own
// writes refresh at once.

export class PgSettings implements SettingsStore {
  private pausedCopy = false;
  private calibrationCopy: CalibrationRow[] = [];

  private constructor(private readonly db: PgDb) {}

  static async load(db: PgDb): Promise<PgSettings> {
    const s = new PgSettings(db);
    await s.refresh();
    return s;
  }

  get paused(): boolean {
    return this.pausedCopy;
  }

  /** Reads the switch and the calibration rows again, in one query. */
  async refresh(): Promise<void> {
    const rows = await this.db
      .select()
      .from(settings)
      .where(or(eq(settings.name, "paused"), like(settings.name, `${CALIBRATION}%`)));
    this.pausedCopy = rows.some((r) => r.name === "paused" && r.value === "true");
    this.calibrationCopy = calibrationRows(rows);
  }

  async setPaused(on: boolean): Promise<void> {
    const value = on ? "true" : "false";
    await this.db.insert(settings).values({ name: "paused", value }).onConflictDoUpdate({ target: settings.name, set: { value } });
    await this.refresh();
  }

  /** The calibration windows as read by the last load or refresh, with this instance's saves since. */
  calibrations(): CalibrationRow[] {
    return this.calibrationCopy;
  }

  /** One statement for all the rows: several instances' saves of one model end with the last one written. */
  async saveCalibrations(rows: CalibrationRow[]): Promise<void> {
    // One row per model: a statement may not upsert one row twice.
    const latest = [...new Map(rows.map((r) => [r.model, r])).values()];
    if (latest.length === 0) return;
    await this.db
      .insert(settings)
      .values(latest.map((r) => ({ name: CALIBRATION + r.model, value: r.value })))
      .onConflictDoUpdate({ target: settings.name, set: { value: sql`excluded.value` } });
    const saved = new Map(this.calibrationCopy.map((r) => [r.model, r]));
    for (const r of latest) saved.set(r.model, r);
    this.calibrationCopy = [...saved.values()];
  }
}

/**
 * sqlite.ts's countRegistrationCredit on PostgreSQL, in the registration's transaction `tx`. The
 * upsert locks the day's row until that transaction ends, so concurrent registrations on every
 * instance take their turns, and its WHERE is evaluated on the newest committed count.
 */
export async function countRegistrationCredit(tx: SQL, amountNano: number, limitNano: number, now: number): Promise<boolean> {
  if (amountNano > limitNano) return false;
  const [row] = await tx`INSERT INTO settings (name, value) VALUES (${registrationCreditRow(now)}, ${String(amountNano)})
    ON CONFLICT (name) DO UPDATE SET value = (settings.value::bigint + ${amountNano}::bigint)::text
    WHERE settings.value::bigint + ${amountNano}::bigint <= ${limitNano}::bigint
    RETURNING value`;
  return row !== undefined;
}
