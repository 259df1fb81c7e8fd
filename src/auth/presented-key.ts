// The key a request presents, as its headers carry it: header parsing, not storage.

/** The key as sent: x-api-key, else Authorization: Bearer. */
export function presentedKey(headers: Headers): string | null {
  const x = headers.get("x-api-key");
  if (x) return x.trim();
  const auth = headers.get("authorization");
  if (auth && /^bearer\s+/i.test(auth)) return auth.replace(/^bearer\s+/i, "").trim() || null;
  return null;
}
