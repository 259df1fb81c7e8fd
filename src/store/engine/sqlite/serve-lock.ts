import { Database } from "bun:sqlite";
import { existsSync, lstatSync, readlinkSync, realpathSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { OperatorError } from "../../../core/operator-error.ts";

export class ServeLockError extends OperatorError {}

/** How long a start waits for a server that is still stopping (a restart that overlaps the old process). */
const WAIT_MS = 3000;

/**
 * One `gateway serve` per database: the holds of running requests live in the serving process
 * (store/ledger/holds.ts), so a second server on the same file could spend the same balance twice. The
 * lock is an exclusive SQLite lock on a file next to the database, held by an open connection: the
 * operating system drops it when the process ends, however it ends, so a crashed server never
 * leaves a stale lock behind. The CLI's other commands do not take it.
 */
// Referenced here so that a lock nobody keeps a handle to is not closed by the garbage collector.
const held = new Set<Database>();

export function acquireServeLock(database: string): { release(): void } {
  if (database === ":memory:") return { release() {} };
  // Keyed by the file's real path: a symlink or `./x/../gateway.db` names the same database.
  const path = `${realDatabasePath(database)}.serve-lock`;
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const lock = tryLock(path);
    if (lock) {
      held.add(lock);
      return {
        release: () => {
          held.delete(lock);
          lock.close();
        },
      };
    }
    if (Date.now() >= deadline) {
      throw new ServeLockError(
        `another 'gateway serve' is running on the database ${database} (its lock file ${path} is held); ` +
          "one server per database: stop the other one, or give this one its own --db",
      );
    }
    Bun.sleepSync(100);
  }
}

function tryLock(path: string): Database | null {
  const lock = new Database(path, { create: true });
  try {
    lock.exec("PRAGMA busy_timeout = 0");
    lock.exec("PRAGMA locking_mode = EXCLUSIVE");
    lock.exec("PRAGMA journal_mode = OFF");
    // The first write in exclusive locking mode takes the lock; it is kept until the connection closes.
    lock.exec("CREATE TABLE IF NOT EXISTS server (pid INTEGER, started_at INTEGER)");
    lock.exec("DELETE FROM server");
    // run, not prepare: a statement left unfinalised would keep the connection (and its lock) open after close().
    lock.run("INSERT INTO server VALUES (?, ?)", [process.pid, Date.now()]);
    return lock;
  } catch (e) {
    lock.close();
    if (/locked|busy/i.test(String(e))) return null;
    throw e;
  }
}

/** The database's path with every symlink and `..` resolved; the file itself may not exist yet. */
export function realDatabasePath(database: string, depth = 0): string {
  if (existsSync(database)) return realpathSync(database);
  // A symlink to a file not created yet still names that file.
  if (depth < 16 && lstatSync(database, { throwIfNoEntry: false })?.isSymbolicLink()) {
    return realDatabasePath(resolve(dirname(database), readlinkSync(database)), depth + 1);
  }
  return join(realpathSync(dirname(database)), basename(database));
}
