// The key a request presents, as its headers carry it: header parsing, not storage.

// One RegExp for every request, tested once: a literal in the function made one per request, and a
// second pass (replace) cut what the test had matched (bench/RESULTS.md). After "bearer" and one
// space, trim() drops the rest of the spaces the old `\s+` took: both strip the same characters.
const BEARER = /^bearer\s/i;

/** The key as sent: x-api-key, else Authorization: Bearer. */
export function presentedKey(headers: Headers): string | null {
  const x = headers.get("x-api-key");
  if (x) return x.trim();
  const auth = headers.get("authorization");
  if (auth && BEARER.test(auth)) return auth.slice(7).trim() || null;
  return null;
}
