/** The parts of a provider's config that carry credentials. */
export interface SecretBearer {
  api_key?: string;
  api_keys?: string[];
  headers?: Record<string, string>;
}

// The providers' credentials must never reach a client, yet vendors quote them in error messages
// (a proxy echoing the request, OpenAI's 401 showing `sk-abc***…***wxyz`). Everything an upstream
// says that is passed on (vendor error messages, mid-stream error events) goes through
// redactSecrets first. The secrets are collected once, when the providers are built.

export const REDACTED = "[redacted]";

/** Shorter values are not treated as secrets: they would redact ordinary words. */
const MIN_SECRET = 8;
/** Header names whose values are credentials. */
const SECRET_HEADER = /auth|key|token|secret|password|cookie|signature|credential/i;
/** A masked echo of a key: a visible head and/or tail around a run of `*` (or dots). */
const MASKED = /([A-Za-z0-9_-]*)(?:\*{3,}|\.{3,}|…)([A-Za-z0-9_-]*)/g;
/** Visible fragments shorter than this say too little to be told from ordinary text. */
const MIN_FRAGMENT = 3;

export type Redactor = (text: string) => string;

/** The credentials in these providers' configs: api_key, and header values that look secret. */
export function secretsOf(providers: readonly SecretBearer[]): string[] {
  const out = new Set<string>();
  const add = (v: string | undefined) => {
    const s = v?.trim();
    if (s && s.length >= MIN_SECRET) out.add(s);
  };
  for (const p of providers) {
    add(p.api_key);
    for (const k of p.api_keys ?? []) add(k);
    for (const [name, value] of Object.entries(p.headers ?? {})) {
      if (!SECRET_HEADER.test(name)) continue;
      add(value);
      // `Bearer <token>`, `Basic <credentials>`: the token alone is what gets echoed.
      const space = value.trim().indexOf(" ");
      if (space > 0) add(value.trim().slice(space + 1));
    }
  }
  return [...out];
}

/** One redactor for a set of secrets: whole occurrences first, then masked echoes of them. */
export function buildRedactor(secrets: readonly string[]): Redactor {
  if (secrets.length === 0) return (text) => text;
  // Longest first, so a key is replaced whole rather than by a shorter secret inside it.
  const sorted = [...secrets].sort((a, b) => b.length - a.length);
  const whole = new RegExp(sorted.map(escapeRegExp).join("|"), "g");
  const masked = (m: string, head: string, tail: string) =>
    (head.length >= MIN_FRAGMENT && sorted.some((s) => s.startsWith(head))) ||
    (tail.length >= MIN_FRAGMENT && sorted.some((s) => s.endsWith(tail)))
      ? REDACTED
      : m;
  return (text) => {
    if (text.length === 0) return text;
    let out = text.replace(whole, REDACTED);
    // Masked echoes need a mask: most messages have none, and skip the second pass.
    if (out.includes("**") || out.includes("...") || out.includes("…")) out = out.replace(MASKED, masked);
    return out;
  };
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

// The process's redactor. Each gateway built in this process adds its providers' secrets (tests
// start several in one process; redacting another's secret too costs nothing).
const known = new Set<string>();
let active: Redactor = (text) => text;

/** Called once per built set of providers (upstreams/registry.ts). */
export function rememberSecrets(providers: readonly SecretBearer[]): void {
  rememberSecretValues(secretsOf(providers));
}

/** Secrets that are not a provider's: the payment provider's API key and webhook secret (payments/). */
export function rememberSecretValues(values: readonly string[]): void {
  const before = known.size;
  for (const v of values) {
    const s = v.trim();
    if (s.length >= MIN_SECRET) known.add(s);
  }
  if (known.size !== before) active = buildRedactor([...known]);
}

/** `text` with every configured provider secret, and every masked echo of one, replaced. */
export const redactSecrets = (text: string): string => active(text);
