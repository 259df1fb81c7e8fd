import type { Statement } from "bun:sqlite";
import { changeWatch, type ChangeWatch } from "./db/change-watch.ts";
import type { Db } from "./db/client.ts";

/** Operator switches kept in the database so the CLI of another process can flip them. */
export class Settings {
  private readonly get: Statement;
  private readonly put: Statement;
  private readonly watch: ChangeWatch;
  // Read on every key route; read again after another process commits (db/change-watch.ts).
  private pausedCopy: boolean | null = null;

  constructor(db: Db) {
    this.get = db.$client.prepare("SELECT value FROM settings WHERE name = ?");
    this.put = db.$client.prepare("INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value");
    this.watch = changeWatch(db.$client);
    this.watch.onChange(() => {
      this.pausedCopy = null;
    });
  }

  get paused(): boolean {
    this.watch.sync();
    this.pausedCopy ??= (this.get.get("paused") as { value: string } | null)?.value === "true";
    return this.pausedCopy;
  }

  setPaused(on: boolean): void {
    this.put.run("paused", on ? "true" : "false");
    this.pausedCopy = on;
  }
}
