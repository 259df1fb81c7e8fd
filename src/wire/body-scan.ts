import { isAscii } from "node:buffer";

// Questions several steps ask of one request body's bytes: the estimator (is it ASCII?), the hold
// (does it hold a \u escape that could spell cache_control?) and the splice (is it valid UTF-8? could
// an escape spell "model"?). Each is a native scan of the whole body (1 to 5 µs for an agent's
// 100 KB turn, bench/RESULTS.md); asked once per body, the answer is kept with the bytes, which the
// gateway never changes once read. A WeakMap keeps nothing alive past the request.

interface Answers {
  ascii?: boolean;
  escape?: boolean;
}

/** Under this size a scan costs less than keeping its answer (a map entry and an object): it is asked again. */
const KEPT_FROM_BYTES = 16 * 1024;

const answers = new WeakMap<Uint8Array, Answers>();
const answersOf = (bytes: Uint8Array): Answers => {
  let a = answers.get(bytes);
  if (a === undefined) answers.set(bytes, (a = {}));
  return a;
};

/** Whether every byte of `bytes` is ASCII (then it is valid UTF-8, one character a byte). */
export function asciiBody(bytes: Uint8Array): boolean {
  if (bytes.byteLength < KEPT_FROM_BYTES) return isAscii(bytes);
  const a = answersOf(bytes);
  return (a.ascii ??= isAscii(bytes));
}

const ESCAPE = Buffer.from("\\u");
// Buffer's native search, on the body's own Uint8Array: no Buffer made around it per request.
const indexOf = Buffer.prototype.indexOf;
const escapeIn = (bytes: Uint8Array) => indexOf.call(bytes, ESCAPE) !== -1;

/** Whether `bytes` holds `\u` anywhere: a JSON string's \uXXXX escape may be there (or a backslash written as `\\u`). */
export function mayHoldEscape(bytes: Uint8Array): boolean {
  if (bytes.byteLength < KEPT_FROM_BYTES) return escapeIn(bytes);
  const a = answersOf(bytes);
  return (a.escape ??= escapeIn(bytes));
}
