// The key a request presents, as its headers carry it: header parsing, not storage.

const BEARER = /^bearer\s+/i;

/** The key as sent: x-api-key, else Authorization: Bearer. */
export function presentedKey(headers: Headers): string | null {
  const x = headers.get("x-api-key");
  if (x) return x.trim();
  const auth = headers.get("authorization");
  // One match, its length then cut off: not a test and a replace, two runs of the same pattern.
  const scheme = auth ? BEARER.exec(auth) : null;
  return scheme ? auth!.slice(scheme[0].length).trim() || null : null;
}
