import { OperatorError } from "../../core/operator-error.ts";

/**
 * Drizzle's migrator compares only the newest migration time, so an older gateway on a database a
 * newer one migrated would call it up to date and fail later on a column it has never heard of
 * (mid-request). A downgrade is a restore of the backup taken before the upgrade: say so at once.
 * `database` names it for the operator (a file, or a URL without its password).
 */
export function refuseIfNewer(database: string, lastApplied: number | null, known: readonly { when: number }[]): void {
  const newestKnown = Math.max(...known.map((m) => m.when));
  if (lastApplied !== null && lastApplied > newestKnown) {
    throw new OperatorError(
      `the database ${database} was migrated by a newer gateway (schema of ${new Date(lastApplied).toISOString()}; this one knows up to ${new Date(newestKnown).toISOString()}): run the newer gateway, or restore the backup taken before the upgrade`,
    );
  }
}
