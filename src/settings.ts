import { eq } from "drizzle-orm";
import { changeWatch, type ChangeWatch } from "./db/change-watch.ts";
import type { Db } from "./db/client.ts";
import { settings } from "./db/schema.ts";

/** Operator switches kept in the database so the CLI of another process can flip them. */
export class Settings {
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
}
