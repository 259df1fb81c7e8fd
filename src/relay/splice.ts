import { isUtf8 } from "node:buffer";
import type { JsonObject } from "../wire/shapes.ts";
import { asciiBody, mayHoldEscape } from "../wire/body-scan.ts";

// A native route sends the client's body with another model name. Serialising the parsed body again
// costs about one parse (90 µs for an agent's 100 KB turn); copying the client's bytes with the model
// string replaced costs a memcpy. Only when the bytes say exactly what the parsed body says: the
// "model" the splice replaces must be the one key "model" of the top-level object, so the upstream
// cannot read another value than the one the gateway routed, priced and checked.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN = 0x7b;
const CLOSE = 0x7d;
const COLON = 0x3a;
const MODEL_KEY = '"model"';
const MODEL_KEY_BYTES = Buffer.from(MODEL_KEY);
// m, o, d, e, l are U+0064..U+006F: a "model" key spelled with an escape holds this sequence. JSON
// encoders escape control characters and non-ASCII, never these letters.
const ESCAPED_LETTER = Buffer.from("\\u006");
// Searched as bytes made once: a string needle is encoded again on every search (bench/RESULTS.md).

const isSpace = (b: number | undefined) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

function skipSpace(bytes: Uint8Array, i: number): number {
  while (isSpace(bytes[i])) i++;
  return i;
}

const decoder = new TextDecoder();

/**
 * Whether the bytes between the quotes are exactly `model`, with no escape. Of the same length, only
 * an ASCII name can match (UTF-8 spends more than one byte on any other character): compared byte by
 * byte, with no view or string made for the usual name.
 */
function sameName(buf: Buffer, start: number, end: number, model: string): boolean {
  if (end - start === model.length) {
    for (let k = 0; k < model.length; k++) {
      const c = model.charCodeAt(k);
      if (c >= 0x80 || c === BACKSLASH || buf[start + k] !== c) return false;
    }
    return true;
  }
  const value = buf.subarray(start, end);
  return !value.includes(BACKSLASH) && decoder.decode(value) === model;
}

/**
 * Where the value of the top-level "model" lies in the client's bytes (the quotes excluded), or null
 * when it cannot be located for sure: the body is not valid UTF-8 (the decoder repaired what was
 * parsed), "model" is not the object's first key, its value holds an escape or differs from the
 * parsed one, or another "model" key may be present anywhere in the body.
 */
function modelValue(bytes: Uint8Array, buf: Buffer, parsed: JsonObject): { start: number; end: number } | null {
  // An ASCII body is valid UTF-8, and the estimator has asked already (wire/body-scan.ts).
  if (typeof parsed.model !== "string" || !(asciiBody(bytes) || isUtf8(buf))) return null;
  let i = skipSpace(buf, 0);
  if (buf[i] !== OPEN) return null;
  i = skipSpace(buf, i + 1);
  for (let k = 0; k < MODEL_KEY_BYTES.length; k++) if (buf[i + k] !== MODEL_KEY_BYTES[k]) return null;
  i = skipSpace(buf, i + MODEL_KEY.length);
  if (buf[i] !== COLON) return null;
  i = skipSpace(buf, i + 1);
  if (buf[i] !== QUOTE) return null;
  const start = i + 1;
  const end = buf.indexOf(QUOTE, start);
  if (end === -1 || !sameName(buf, start, end, parsed.model)) return null;
  // Any later '"model"' that could be a key, or a letter of it escaped anywhere: the safe answer is no.
  for (let at = buf.indexOf(MODEL_KEY_BYTES, end); at !== -1; at = buf.indexOf(MODEL_KEY_BYTES, at + 1)) {
    if (buf[skipSpace(buf, at + MODEL_KEY.length)] === COLON) return null;
  }
  // Without any \u (the hold has asked already) there is no need to search for the longer needle.
  if (mayHoldEscape(bytes) && buf.includes(ESCAPED_LETTER)) return null;
  return { start, end };
}

/**
 * The client's body with the top-level model replaced by `model` and `append` (members, JSON text
 * starting with a comma) added before the closing brace; null when the bytes cannot be trusted to
 * say what `parsed` says (see modelValue), and the caller serialises the parsed body instead; the
 * client's bytes themselves when nothing changes.
 * A large body goes out as a Blob of the client's byte ranges around the new name: fetch sends it
 * for less CPU than one concatenated buffer (9 µs per 100 KB request). A small one goes out as one
 * buffer, which fetch sends for less than a Blob (bench/RESULTS.md).
 */
export function spliceModel(bytes: Uint8Array, parsed: JsonObject, model: string, append = ""): Blob | Uint8Array | null {
  // A view on the client's bytes needs their ArrayBuffer, which a small array (JavaScriptCore keeps
  // those of up to 1000 bytes inline) has to be moved out into first: a copy is 0.6 µs cheaper there,
  // a view cheaper past it (bench/RESULTS.md).
  const buf = bytes.byteLength <= INLINE_ARRAY_BYTES ? Buffer.from(bytes) : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const at = modelValue(bytes, buf, parsed);
  if (!at) return null;
  // The upstream's name is the one asked for (a catalog id that is its upstream's own), nothing to
  // append: the client's bytes are the body, sent without the copy a Blob of their parts costs
  // (10 to 13 µs a 100 KB turn, bench/RESULTS.md "The agent turns, third pass").
  if (!append && model === parsed.model) return bytes;
  let close = buf.length - 1;
  while (isSpace(buf[close])) close--;
  if (buf[close] !== CLOSE) return null;
  const name = jsonName(model);
  if (buf.length > SMALL_BODY_BYTES) {
    if (!append) return new Blob([buf.subarray(0, at.start), name, buf.subarray(at.end)]);
    return new Blob([buf.subarray(0, at.start), name, buf.subarray(at.end, close), append, buf.subarray(close)]);
  }
  const out = Buffer.allocUnsafe(buf.length - (at.end - at.start) + name.length + append.length);
  let o = buf.copy(out, 0, 0, at.start);
  o += name.copy(out, o);
  o += buf.copy(out, o, at.end, append ? close : buf.length);
  if (append) buf.copy(out, o + out.write(append, o, "latin1"), close);
  return out;
}

/** JavaScriptCore's limit for a typed array kept inline in its object (fastSizeLimit). */
const INLINE_ARRAY_BYTES = 1000;

/** Under this size one buffer is cheaper to send than a Blob; over it, the Blob (bench/RESULTS.md). */
export const SMALL_BODY_BYTES = 16 * 1024;

// The name as JSON writes it inside a string's quotes (the splice keeps the client's quotes), in
// UTF-8. Once per upstream model name: the names are the config's, so the map stays small.
const names = new Map<string, Buffer>();
function jsonName(model: string): Buffer {
  let name = names.get(model);
  if (name === undefined) names.set(model, (name = Buffer.from(JSON.stringify(model).slice(1, -1))));
  return name;
}
