// The key a request presents, as its headers carry it: header parsing, not storage.
import { KEY_PREFIX } from "../store/keys/contract.ts";

// One RegExp for every request, tested once: a literal in the function made one per request, and a
// second pass (replace) cut what the test had matched (bench/RESULTS.md). After "bearer" and one
// space, trim() drops the rest of the spaces the old `\s+` took: both strip the same characters.
const BEARER = /^bearer\s/i;

/**
 * The key as sent: x-api-key, else Authorization: Bearer. When both are sent and only the Bearer
 * one is a gateway key, that one: an Anthropic SDK given the vendor's own key in its environment
 * and the gateway's as its auth token sends both headers (docs/api.md#authentication).
 */
export function presentedKey(headers: Headers): string | null {
  const x = headers.get("x-api-key")?.trim();
  if (x && x.startsWith(KEY_PREFIX)) return x;
  const auth = headers.get("authorization");
  const bearer = auth && BEARER.test(auth) ? auth.slice(7).trim() : "";
  if (x && !bearer.startsWith(KEY_PREFIX)) return x;
  return bearer || null;
}
