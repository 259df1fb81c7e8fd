// Route health and the circuit breaker: a route that failed FAILURE_THRESHOLD times in a row is
// skipped for OPEN_MS, then one request is let through to probe it (half-open).

import { isoTime } from "../core/time.ts";

export const FAILURE_THRESHOLD = 3;
export const OPEN_MS = 30_000;

export interface RouteHealth {
  route: string;
  state: "healthy" | "failing" | "open";
  consecutive_failures: number;
  successes: number;
  failures: number;
  last_error: string | null;
  last_failure_at: string | null;
  last_success_at: string | null;
}

interface Entry {
  consecutive: number;
  successes: number;
  failures: number;
  openUntil: number;
  lastError: string | null;
  lastFailureAt: number | null;
  lastSuccessAt: number | null;
}

export class Health {
  private readonly routes = new Map<string, Entry>();

  constructor(private readonly now: () => number = Date.now) {}

  private entry(key: string): Entry {
    let e = this.routes.get(key);
    if (!e) {
      e = { consecutive: 0, successes: 0, failures: 0, openUntil: 0, lastError: null, lastFailureAt: null, lastSuccessAt: null };
      this.routes.set(key, e);
    }
    return e;
  }

  /** False while the breaker is open. When it expires, one caller gets through and re-arms it. */
  allow(key: string): boolean {
    const e = this.routes.get(key);
    if (!e || e.consecutive < FAILURE_THRESHOLD) return true;
    const t = this.now();
    if (t < e.openUntil) return false;
    e.openUntil = t + OPEN_MS; // half-open: this probe decides; others keep skipping meanwhile
    return true;
  }

  success(key: string): void {
    const e = this.entry(key);
    e.consecutive = 0;
    e.successes++;
    e.lastSuccessAt = this.now();
  }

  failure(key: string, reason: string): void {
    const e = this.entry(key);
    e.consecutive++;
    e.failures++;
    e.lastError = reason;
    e.lastFailureAt = this.now();
    if (e.consecutive >= FAILURE_THRESHOLD) e.openUntil = this.now() + OPEN_MS;
  }

  view(key: string): RouteHealth {
    const e = this.entry(key);
    const open = e.consecutive >= FAILURE_THRESHOLD && this.now() < e.openUntil;
    return {
      route: key,
      state: open ? "open" : e.consecutive > 0 ? "failing" : "healthy",
      consecutive_failures: e.consecutive,
      successes: e.successes,
      failures: e.failures,
      last_error: e.lastError,
      last_failure_at: isoTime(e.lastFailureAt),
      last_success_at: isoTime(e.lastSuccessAt),
    };
  }
}
