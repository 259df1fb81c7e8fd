import type { JsonObject } from "./shapes.ts";

// A translation the gateway serialised itself, kept member by member: each route's variant of it
// (another model name, a renamed output cap) is the same members' texts joined again, where a second
// JSON.stringify of the whole body cost as much as the first (bench/RESULTS.md, "The Responses agent
// turn"). Valid only for plain JSON data (no toJSON, no cycles), which is all a translation holds.

export class MemberText {
  private constructor(
    /** The object the texts were written from: a value is reused only while it is still this object's. */
    private readonly from: JsonObject,
    private readonly texts: Map<string, string>,
    /** JSON.stringify(from)'s size: UTF-8 bytes and UTF-16 characters. */
    readonly bytes: number,
    readonly chars: number,
  ) {}

  /** Serialises `body` once, a member at a time. Throws what JSON.stringify throws (RangeError past the engine's limits). */
  static of(body: JsonObject): MemberText {
    const texts = new Map<string, string>();
    let bytes = 1;
    let chars = 1;
    for (const key of Object.keys(body)) {
      const text = JSON.stringify(body[key]);
      if (text === undefined) continue;
      texts.set(key, text);
      // A member is `"key":value` with a comma before all but the first; JSON text never splits a
      // surrogate pair, so the parts' UTF-8 lengths add up to the whole's.
      const name = JSON.stringify(key);
      bytes += Buffer.byteLength(name) + Buffer.byteLength(text) + 2;
      chars += name.length + text.length + 2;
    }
    // The closing brace stands where the first member has no comma.
    if (texts.size === 0) bytes++, chars++;
    return new MemberText(body, texts, bytes, chars);
  }

  /**
   * JSON.stringify(out), where `out` is made of the serialised object's values (a shallow copy,
   * members renamed, replaced, added or left out): a value that is still the same one is not
   * serialised again.
   */
  text(out: JsonObject): string {
    return objectJson(out, (key, value) => (this.from[key] === value && this.texts.get(key)) || JSON.stringify(value));
  }
}

/** JSON.stringify of one object level, each value written by `value` (undefined leaves the key out, as JSON.stringify does). */
export function objectJson(obj: JsonObject, value: (key: string, v: unknown) => string | undefined): string {
  let out = "";
  for (const key of Object.keys(obj)) {
    const json = value(key, obj[key]);
    if (json === undefined) continue;
    out += `${out === "" ? "" : ","}${JSON.stringify(key)}:${json}`;
  }
  return `{${out}}`;
}
