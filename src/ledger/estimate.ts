import { asciiBody } from "../wire/body-scan.ts";

// The byte estimator (docs/database.md#the-plain-rule): it answers count_tokens, sizes reservations and counts the output of an
// answer without usage (or a cancelled stream, before its model is calibrated, ledger/calibration.ts).
// It is not a tokenizer, and the real usage settles the bill.
//
// The rule reads a text's UTF-8 bytes and its characters (UTF-16 code units, which JavaScript
// counts for free): tokens = ⌈(3·bytes − chars) / 8⌉. Why not bytes / 4 alone: tokenizers give
// English about 4 bytes a token, but CJK text about one token a character, which is 3 bytes; bytes / 4
// counted a Chinese answer at a quarter of what the provider bills. The rule per character:
// - ASCII (1 byte, 1 char): 2/8 = one token per 4 bytes, as before, so English is not counted higher;
// - CJK and other 3-byte characters (most of the BMP past U+0800): 8/8 = one token each;
// - 2-byte scripts (accents, Cyrillic, Greek, Hebrew, Arabic): 5/8 token each (tokenizers give
//   them 2 to 3 characters a token, worse on older ones);
// - 4-byte characters (emoji: 2 chars): 10/8 token each.
// It is never below bytes / 4, and it costs no loop over the text: bytes and chars come from native
// code (Buffer.byteLength, a string's length, isAscii, TextDecoder).

export const BYTES_PER_TOKEN = 4;

/** A text as the estimator reads it: UTF-8 bytes and characters (UTF-16 code units). */
export interface TextSize {
  readonly bytes: number;
  readonly chars: number;
}

/** The plain estimate of a text of `bytes` UTF-8 bytes and `chars` characters (`chars` = `bytes`: ASCII, bytes / 4). */
export function estimateTokens(bytes: number, chars: number = bytes): number {
  return Math.ceil(Math.max(3 * bytes - chars, 2 * bytes) / 8);
}

/** The plain input estimate of a request body (its JSON as sent: an escaped `\uXXXX` counts its six ASCII bytes). */
export function estimateInputTokens(bodyBytes: number, bodyChars: number = bodyBytes): number {
  return estimateTokens(bodyBytes, bodyChars);
}

const decoder = new TextDecoder();

/**
 * A body's size: an ASCII body (most English traffic) is checked natively and decoded not at all;
 * any other is decoded once more to count its characters (measured: under 1 µs per KB, below what
 * the body's JSON.parse costs; bench in docs/reliability.md, "Cancelled streams and CJK estimates").
 */
export function bodySize(body: Uint8Array): TextSize {
  const bytes = body.byteLength;
  return { bytes, chars: bytes === 0 || asciiBody(body) ? bytes : decoder.decode(body).length };
}

/** Output text counted as it goes out (the estimate of an answer without usage, or of a cancelled stream). */
export class TextCount implements TextSize {
  bytes = 0;
  chars = 0;

  add(text: string): void {
    if (!text) return;
    this.chars += text.length;
    this.bytes += Buffer.byteLength(text, "utf8");
  }

  static of(text: string): TextCount {
    const c = new TextCount();
    c.add(text);
    return c;
  }
}
