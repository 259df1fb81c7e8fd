// The translators' one way to say no, the shape checks and the field-table walker they share.
import { GatewayError } from "../core/errors.ts";
import type { JsonObject } from "../wire/shapes.ts";

/**
 * A field the other dialect cannot carry: 400 invalid_request whose message starts with the
 * field's JSON path (translation.md ground rules), the way Anthropic prefixes its own 400s.
 */
export function refuse(path: string, reason: string): never {
  throw new GatewayError("invalid_request", `${path}: ${reason}`);
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Clients send `null` for fields they did not set (chat-completions.md §2); treat it as absent. */
export function isSet(v: unknown): boolean {
  return v !== null && v !== undefined;
}

export function objectAt(v: unknown, path: string): JsonObject {
  return isObject(v) ? v : refuse(path, "must be an object");
}

export function arrayAt(v: unknown, path: string): unknown[] {
  return Array.isArray(v) ? v : refuse(path, "must be an array");
}

export function stringAt(v: unknown, path: string): string {
  return typeof v === "string" ? v : refuse(path, "must be a string");
}

/** What one field of a request becomes; `path` is the field's JSON path in the client's request. */
export type FieldRule<C> = (value: unknown, ctx: C, path: string) => void;

/**
 * Runs the rule of every set field of `obj`. A field without a rule is refused: translation.md §7
 * allows dropping only the losses it lists, so an unknown field is never passed or lost silently.
 */
export function applyFields<C>(obj: JsonObject, rules: Record<string, FieldRule<C>>, ctx: C, prefix: string, upstream: string): void {
  // for…in, not Object.entries: no [key, value] array per field (each tool of an agent's turn is walked here).
  for (const key in obj) {
    if (!Object.hasOwn(obj, key)) continue;
    const value = obj[key];
    if (!isSet(value)) continue;
    const path = prefix ? `${prefix}.${key}` : key;
    const rule = Object.hasOwn(rules, key) ? rules[key] : undefined;
    if (!rule) refuse(path, `is not supported when this model is served by a ${upstream} upstream`);
    rule(value, ctx, path);
  }
}

/** A field read together with others by the translator itself. */
export const handledElsewhere: FieldRule<unknown> = () => {};

/**
 * The longest x-gateway-dropped value. A turn of a thousand messages each with a `name` would list a
 * thousand paths, and Node's HTTP parser (the official SDKs') refuses an answer whose headers pass
 * 16 KiB in all: past this the list is cut and ends with how many it left out.
 */
const DROPPED_HEADER_MAX = 2048;

/** The x-gateway-dropped (or -tools) value for these paths, cut at DROPPED_HEADER_MAX. */
export function droppedList(paths: readonly string[]): string {
  let out = "";
  for (let i = 0; i < paths.length; i++) {
    const next = out ? `${out}, ${paths[i]}` : paths[i]!;
    // Room kept for the tail, ", and 99999 more".
    if (next.length > DROPPED_HEADER_MAX - 20) return out ? `${out}, and ${paths.length - i} more` : `${paths.length} fields`;
    out = next;
  }
  return out;
}

/** Accepted but not sent: the path goes into the x-gateway-dropped list. */
export const lose: FieldRule<{ dropped: string[] }> = (_v, c, path) => void c.dropped.push(path);
