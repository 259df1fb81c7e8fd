// The settings: operator switches kept in the database so the CLI of another process can flip them,
// and the estimator's calibration windows, so that a restart keeps them. One row per name (the
// `settings` table). tests/settings/contract.test.ts holds both engines to the same results.

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
 * The settings as every caller uses them, whichever database holds them. `paused` is read on every
 * request, so it answers from memory on both engines.
 */
export interface SettingsStore {
  readonly paused: boolean;
  setPaused(on: boolean): Promise<void>;
  /** The calibration windows as stored, by model id. */
  calibrations(): CalibrationRow[];
  /**
   * Replaces these models' calibration windows. Synchronous on SQLite: it runs inside the group
   * commit's turn (the requests' batch), which an await would leave before the write.
   */
  saveCalibrations(rows: CalibrationRow[]): void | Promise<void>;
}
