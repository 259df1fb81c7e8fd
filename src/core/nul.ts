import { GatewayError } from "./errors.ts";

// U+0000: SQLite's text keeps it, PostgreSQL's refuses it. Clients' text holding it is refused at the
// door (http/schemas.ts refuseNul, auth/passwords.ts); text that is only reported (a log row, a copy
// of an old database) is stored with U+FFFD in its place.

export const NUL = "\u0000";

/** 400 invalid_request naming where the character was found (a JSON path may be long: its start says enough). */
export function nulRefused(where: string): GatewayError {
  return new GatewayError("invalid_request", `${where.length > 200 ? `${where.slice(0, 199)}…` : where}: U+0000 (the NUL character) is not allowed in text.`);
}

/** `s` as PostgreSQL's text can hold it: each U+0000 written as U+FFFD. */
export function withoutNul(s: string): string {
  return s.includes(NUL) ? s.replaceAll(NUL, "\uFFFD") : s;
}
