/**
 * The most a client may send in one body (docs/api.md), and so the most the gateway sends upstream
 * in one: a translation cannot make of an accepted body one no upstream was ever sent.
 */
export const BODY_LIMIT_BYTES = 20 * 1024 * 1024;
