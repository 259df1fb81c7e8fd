import type { Database, Statement } from "bun:sqlite";

/**
 * When to forget the in-memory copies of rows the hot path reads (keys, balances and spend, the pause
 * switch). The serving process writes money itself and keeps those copies current as it writes; the
 * CLI, another process, revokes keys, tops up and pauses. SQLite's `PRAGMA data_version` moves when
 * another connection has committed, and reading it costs one read transaction, the cost the copies
 * save: so it is read once per turn of the event loop, not per request. A commit of another process
 * inside the turn is seen in the next one, as if it had come a few microseconds later.
 *
 * One watch per connection (`changeWatch(db)`), so every cache on a connection forgets together.
 */
export class ChangeWatch {
  private version = -1;
  private checked = false;
  private readonly listeners: (() => void)[] = [];
  private readonly stmt: Statement;
  private readonly reset = () => {
    this.checked = false;
  };

  constructor(db: Database) {
    this.stmt = db.prepare("PRAGMA data_version");
  }

  /** `forget` runs whenever the copies may be wrong. */
  onChange(forget: () => void): void {
    this.listeners.push(forget);
  }

  /** Called before a copy is used: forgets them all when another connection has committed. */
  sync(): void {
    if (this.checked) return;
    this.check();
  }

  /**
   * Looks now, also when it has this turn: inside a write transaction just begun (the group commit's),
   * which no other connection can commit into, the copies are then exact until it ends.
   */
  check(): void {
    if (!this.checked) {
      this.checked = true;
      setImmediate(this.reset);
    }
    const v = (this.stmt.values() as number[][])[0]![0]!;
    if (v !== this.version) {
      this.version = v;
      this.forget();
    }
  }

  /** For writes of this connection the copies were not told of, and for rolled-back ones. */
  forget(): void {
    for (const f of this.listeners) f();
  }
}

const watches = new WeakMap<Database, ChangeWatch>();

export function changeWatch(db: Database): ChangeWatch {
  let w = watches.get(db);
  if (!w) watches.set(db, (w = new ChangeWatch(db)));
  return w;
}
