import { randomBytes } from "node:crypto";
import { availableParallelism } from "node:os";
import { GatewayError } from "../core/errors.ts";
import { NUL, nulRefused } from "../core/nul.ts";

// Argon2id through Bun.password (Bun's defaults: 64 MiB, 2 passes), hashed and verified on Bun's
// thread pool: a login costs the event loop nothing while it runs. docs/decisions.md says why this
// and not an authentication library.

export const MIN_PASSWORD_LENGTH = 8;
// Argon2 takes any length, but a megabyte "password" would be hashed in full on every attempt.
export const MAX_PASSWORD_LENGTH = 1024;

/** A new password as the account holder typed it, or the refusal saying what is wrong with it. */
export function checkNewPassword(password: unknown, field = "password"): string {
  if (typeof password !== "string") throw new GatewayError("invalid_request", `${field}: required, a string`);
  if (password.length < MIN_PASSWORD_LENGTH) throw new GatewayError("invalid_request", `${field}: at least ${MIN_PASSWORD_LENGTH} characters`);
  if (password.length > MAX_PASSWORD_LENGTH) throw new GatewayError("invalid_request", `${field}: at most ${MAX_PASSWORD_LENGTH} characters`);
  // The dashboard refuses U+0000 in any text (http/schemas.ts); the CLI's stdin is held to the same.
  if (password.includes(NUL)) throw nulRefused(field);
  return password;
}

/**
 * Argon2id checks the process runs at once, and how many more may wait for a turn. Each throttle
 * counts one address or one email; a flood from many addresses, each within its own limits,
 * queued without end: 60 wrong logins at once made a right one wait 29 s instead of 0.9 s, and
 * a steady two a second kept every login that far behind. Past the queue a check is refused at once
 * (429, Retry-After 1), before any work, so a holder's wait stays bounded (docs/dashboard.md#throttles).
 */
export const PASSWORD_CHECKS = { running: Math.max(2, availableParallelism()), waiting: 8 * Math.max(2, availableParallelism()) };

let running = 0;
const waiting: (() => void)[] = [];

async function inTurn<T>(work: () => Promise<T>): Promise<T> {
  if (running < PASSWORD_CHECKS.running) running++;
  else if (waiting.length >= PASSWORD_CHECKS.waiting) {
    throw new GatewayError("rate_limit", "Too many password checks at once on this gateway. Try again in 1 second.", { retryAfter: 1 });
  } else await new Promise<void>((turn) => waiting.push(turn));
  try {
    return await work();
  } finally {
    // The turn passes straight to the next in line; only an empty line gives it back.
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}

const argon2id = (password: string): Promise<string> => Bun.password.hash(password, { algorithm: "argon2id" });

export const hashPassword = (password: string): Promise<string> => inTurn(() => argon2id(password));

// Verified against when the email is unknown, so that an unknown email and a wrong password take the
// same time; made once per process from random bytes nobody knows (outside the turns: it is made
// within one).
let decoy: Promise<string> | null = null;

/**
 * Whether `password` matches `hash`. With no hash (unknown email, or an account made without a
 * password) the same Argon2id work is done against a decoy and the answer is false. Argon2's own
 * comparison of the derived keys is constant-time.
 */
export function verifyPassword(password: string, hash: string | null): Promise<boolean> {
  return inTurn(async () => {
    if (hash === null) {
      await Bun.password.verify(password, await (decoy ??= argon2id(randomBytes(32).toString("hex")))).catch(() => false);
      return false;
    }
    try {
      return await Bun.password.verify(password, hash);
    } catch {
      // A hash written by hand in sqlite3 that is no hash: no password opens it.
      return false;
    }
  });
}
