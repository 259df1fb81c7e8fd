import { GatewayError } from "./errors.ts";

// An account's address as stored, for every layer that takes one: registration, an account the
// operator creates, a change of address (docs/dashboard.md#change-of-email).

// No space and no control character (U+0000 to U+001F, U+007F to U+009F): no address holds one, and
// U+0000 is refused by PostgreSQL's text while SQLite's would store it.
const EMAIL = /^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+$/u;

/** The email as stored (trimmed, lower case); refuses what is not an address. */
export function normalizedEmail(email: string): string {
  const normalized = email.trim().toLowerCase();
  if (!EMAIL.test(normalized)) throw new GatewayError("invalid_request", `not an email address: ${email}`);
  return normalized;
}
