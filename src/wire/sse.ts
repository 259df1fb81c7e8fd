// Server-sent events: an incremental parser for upstream bodies and the encoder for what we send.
// Framing rules are the ones the vendors' SDKs accept (protocols/sse.md §1): `\n`, `\r\n` or a lone
// `\r` ends a line, a blank line ends an event, only `event:` and `data:` are read.

export interface SseEvent {
  event?: string;
  data: string;
}

const LF = 10;

export class SseParser {
  // stream:true keeps a multi-byte character that straddles two chunks until its last byte arrives.
  private readonly decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: false });
  // Pieces of the current, unfinished line. Kept apart and joined only when a line break arrives,
  // so a long line spread over many chunks costs one join instead of one copy per chunk.
  private tail: string[] = [];
  // A chunk that ended in `\r` may be followed by the `\n` of the same CRLF in the next chunk.
  private skipLeadingLf = false;
  private event: string | undefined = undefined;
  private data: string | null = null;

  push(chunk: Uint8Array | string): SseEvent[] {
    const text = typeof chunk === "string" ? chunk : this.decoder.decode(chunk, { stream: true });
    return this.scan(text);
  }

  /**
   * Flushes the stream at EOF. An event whose lines all ended is dispatched even without the final
   * blank line (a server that closed right after `data: …\n` meant it); a half-written last line is
   * dropped, since it is evidence of truncation, not a complete field.
   */
  end(): SseEvent[] {
    const out = this.scan(this.decoder.decode());
    this.tail = [];
    this.skipLeadingLf = false;
    this.dispatch(out);
    return out;
  }

  private scan(text: string): SseEvent[] {
    const out: SseEvent[] = [];
    if (text.length === 0) return out;
    let nextCr = text.indexOf("\r");
    let nextLf = text.indexOf("\n");
    if (nextCr === -1 && nextLf === -1) {
      this.skipLeadingLf = false;
      this.tail.push(text);
      return out;
    }
    // Offsets found in `text` shift by the length of the unfinished line before it.
    const head = this.tail.length === 0 ? "" : this.tail.length === 1 ? this.tail[0]! : this.tail.join("");
    this.tail = [];
    const buf = head.length === 0 ? text : head + text;
    if (nextCr !== -1) nextCr += head.length;
    if (nextLf !== -1) nextLf += head.length;
    let pos = 0;
    if (this.skipLeadingLf) {
      this.skipLeadingLf = false;
      if (buf.charCodeAt(0) === LF) pos = 1;
    }
    // Most streams use `\n` only: once a `\r` search fails, the loop never repeats it.
    while (true) {
      if (nextCr !== -1 && nextCr < pos) nextCr = buf.indexOf("\r", pos);
      if (nextLf !== -1 && nextLf < pos) nextLf = buf.indexOf("\n", pos);
      let eol: number;
      if (nextCr === -1) eol = nextLf;
      else if (nextLf === -1) eol = nextCr;
      else eol = nextCr < nextLf ? nextCr : nextLf;
      if (eol === -1) break;
      this.line(buf, pos, eol, out);
      pos = eol + 1;
      if (eol === nextCr) {
        if (pos === buf.length) this.skipLeadingLf = true;
        else if (buf.charCodeAt(pos) === LF) pos++;
      }
    }
    if (pos < buf.length) this.tail.push(pos === 0 ? buf : buf.slice(pos));
    return out;
  }

  private line(buf: string, start: number, end: number, out: SseEvent[]): void {
    if (start === end) {
      this.dispatch(out);
      return;
    }
    const first = buf.charCodeAt(start);
    if (first === 58 /* ":" comment */) return;
    // Fast paths for the two fields we read; `data:` dominates every stream.
    if (first === 100 /* d */ && buf.startsWith("data", start)) {
      const value = fieldValue(buf, start + 4, end);
      if (value === null) return;
      this.data = this.data === null ? value : this.data + "\n" + value;
      return;
    }
    if (first === 101 /* e */ && buf.startsWith("event", start)) {
      const value = fieldValue(buf, start + 5, end);
      if (value !== null) this.event = value;
    }
    // id:, retry: and unknown fields are ignored, as the SDKs do.
  }

  private dispatch(out: SseEvent[]): void {
    if (this.data === null && this.event === undefined) return;
    const ev: SseEvent = { data: this.data ?? "" };
    if (this.event !== undefined) ev.event = this.event;
    out.push(ev);
    this.data = null;
    this.event = undefined;
  }
}

/** The value after `name` when the line is exactly that field (`name`, `name:` or `name: v`); else null. */
function fieldValue(buf: string, afterName: number, end: number): string | null {
  if (afterName === end) return "";
  if (buf.charCodeAt(afterName) !== 58 /* ":" */) return null; // e.g. `datax: …` is another field
  let from = afterName + 1;
  if (from < end && buf.charCodeAt(from) === 32) from++;
  return buf.slice(from, end);
}

/** The most an upstream may send of one SSE event (its lines included) before it ends it. */
export const MAX_SSE_EVENT_BYTES = 16 * 1024 * 1024;

const CR = 13;
// Where the byte scan stands: inside a line, at the start of a line, or just after a CR (whose LF,
// if it comes, belongs to the same line break).
const MID = 0;
const LINE_START = 1;
const AFTER_CR = 2;

/**
 * Counts the bytes of the SSE event in progress, so a line or an event that never ends is cut at
 * `limit` instead of growing the parser's buffers without bound. Runs on the raw bytes before they
 * are decoded; a chunk that ends with a blank line (the usual case) costs two byte reads.
 */
export class SseSizeGuard {
  private pending = 0;
  private state = LINE_START;

  constructor(private readonly limit = MAX_SSE_EVENT_BYTES) {}

  /** null while within the limit; the error to fail the stream with once past it. */
  push(chunk: Uint8Array): Error | null {
    const n = chunk.length;
    if (n >= 2 && chunk[n - 1] === LF && chunk[n - 2] === LF) {
      this.pending = 0;
      this.state = LINE_START;
      return null;
    }
    let state = this.state;
    let boundary = -1;
    for (let i = 0; i < n; i++) {
      const b = chunk[i]!;
      if (b === LF) {
        if (state === LINE_START) boundary = i;
        state = LINE_START;
      } else if (b === CR) {
        if (state !== MID) boundary = i;
        state = AFTER_CR;
      } else state = MID;
    }
    this.state = state;
    this.pending = boundary === -1 ? this.pending + n : n - boundary - 1;
    if (this.pending <= this.limit) return null;
    return new Error(`the upstream sent an SSE event over ${this.limit} bytes without ending it`);
  }
}

/** One event in the framing both SDKs parse: `\n` line ends and a `\n\n` terminator. */
export function encodeSse(event: string | undefined, data: string): string {
  // A raw newline inside data would end the field early; SSE carries it as several data lines.
  if (data.indexOf("\n") !== -1 || data.indexOf("\r") !== -1) {
    data = data.replace(/\r\n|\r|\n/g, "\ndata: ");
  }
  return event === undefined ? `data: ${data}\n\n` : `event: ${event}\ndata: ${data}\n\n`;
}
