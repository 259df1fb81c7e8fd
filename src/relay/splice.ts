import { isUtf8 } from "node:buffer";
import type { JsonObject } from "../wire/shapes.ts";

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
 * Where the value of the top-level "model" lies in the client's bytes (the quotes excluded), or null
 * when it cannot be located for sure: the body is not valid UTF-8 (the decoder repaired what was
 * parsed), "model" is not the object's first key, its value holds an escape or differs from the
 * parsed one, or another "model" key may be present anywhere in the body.
 */
function modelValue(buf: Buffer, parsed: JsonObject): { start: number; end: number } | null {
  if (typeof parsed.model !== "string" || !isUtf8(buf)) return null;
  let i = skipSpace(buf, 0);
  if (buf[i] !== OPEN) return null;
  i = skipSpace(buf, i + 1);
  if (!buf.subarray(i, i + MODEL_KEY.length).equals(MODEL_KEY_BYTES)) return null;
  i = skipSpace(buf, i + MODEL_KEY.length);
  if (buf[i] !== COLON) return null;
  i = skipSpace(buf, i + 1);
  if (buf[i] !== QUOTE) return null;
  const start = i + 1;
  const end = buf.indexOf(QUOTE, start);
  if (end === -1 || buf.subarray(start, end).includes(BACKSLASH)) return null;
  if (decoder.decode(buf.subarray(start, end)) !== parsed.model) return null;
  // Any later '"model"' that could be a key, or a letter of it escaped anywhere: the safe answer is no.
  for (let at = buf.indexOf(MODEL_KEY_BYTES, end); at !== -1; at = buf.indexOf(MODEL_KEY_BYTES, at + 1)) {
    if (buf[skipSpace(buf, at + MODEL_KEY.length)] === COLON) return null;
  }
  if (buf.includes(ESCAPED_LETTER)) return null;
  return { start, end };
}

/**
 * The client's body with the top-level model replaced by `model` and `append` (members, JSON text
 * starting with a comma) added before the closing brace; null when the bytes cannot be trusted to
 * say what `parsed` says (see modelValue), and the caller serialises the parsed body instead.
 * A Blob of the client's byte ranges around the new name, not one new buffer: fetch sends its parts
 * without the copy into JavaScript memory a concatenation costs (9 µs of CPU per 100 KB request).
 */
export function spliceModel(bytes: Uint8Array, parsed: JsonObject, model: string, append = ""): Blob | null {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const at = modelValue(buf, parsed);
  if (!at) return null;
  let close = buf.length - 1;
  while (isSpace(buf[close])) close--;
  if (buf[close] !== CLOSE) return null;
  // JSON.stringify writes the name as a JSON string, quotes included; the splice keeps the client's.
  const name = JSON.stringify(model).slice(1, -1);
  if (!append) return new Blob([buf.subarray(0, at.start), name, buf.subarray(at.end)]);
  return new Blob([buf.subarray(0, at.start), name, buf.subarray(at.end, close), append, buf.subarray(close)]);
}
