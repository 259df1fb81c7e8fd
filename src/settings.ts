import type { Statement } from "bun:sqlite";
import type { Db } from "./db/client.ts";

/** Operator switches kept in the database so the CLI of another process can flip them. */
export class Settings {
  private readonly get: Statement;
  private readonly put: Statement;

  constructor(db: Db) {
    this.get = db.$client.prepare("SELECT value FROM settings WHERE name = ?");
    this.put = db.$client.prepare("INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value");
  }

  get paused(): boolean {
    return (this.get.get("paused") as { value: string } | null)?.value === "true";
  }

  setPaused(on: boolean): void {
    this.put.run("paused", on ? "true" : "false");
  }
}
