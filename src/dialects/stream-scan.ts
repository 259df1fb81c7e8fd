// Text scans that spare a stream event its JSON.parse. A long answer is hundreds of small text
// events that the relay parses only to count their characters (the estimate a cut stream is billed
// on); parsing one costs more than relaying it. Each scan accepts only the compact form the vendors
// send, with no escape in the text (its characters are then the string's), and answers null for
// anything else, which is parsed as before. A needle with quotes cannot match inside a string value:
// a quote in a value is always escaped.

const TEXT_DELTA = '"delta":{"type":"text_delta","text":"';
const CONTENT_DELTA = '"delta":{"content":"';

/** The end of an unescaped string value starting at `start`, or -1. */
function plainStringEnd(data: string, start: number): number {
  const end = data.indexOf('"', start);
  if (end === -1) return -1;
  const slash = data.indexOf("\\", start);
  return slash !== -1 && slash < end ? -1 : end;
}

/** Messages: a content_block_delta `{…"delta":{"type":"text_delta","text":"…"}}`: its text. */
export function plainText(data: string): string | null {
  const at = data.indexOf(TEXT_DELTA);
  if (at === -1) return null;
  const start = at + TEXT_DELTA.length;
  const end = plainStringEnd(data, start);
  return end !== -1 && data.length === end + 3 && data.endsWith('"}}') ? data.slice(start, end) : null;
}

/**
 * Chat: a chunk whose one delta is text alone, not finished (`"finish_reason":null`), without usage
 * (absent or `"usage":null`) and without error: its text. Such a chunk changes nothing but
 * the text count, so the relay can forward it as it came (model renamed in the text).
 */
export function plainChatText(data: string): string | null {
  const at = data.indexOf(CONTENT_DELTA);
  if (at === -1 || data.indexOf('"delta"', at + 1) !== -1) return null;
  const start = at + CONTENT_DELTA.length;
  const end = plainStringEnd(data, start);
  if (end === -1 || data.charCodeAt(end + 1) !== 125 /* } */) return null;
  const finish = data.indexOf('"finish_reason"');
  if (finish === -1 || !data.startsWith('"finish_reason":null', finish) || data.indexOf('"finish_reason"', finish + 1) !== -1) return null;
  const usage = data.indexOf('"usage"');
  if (usage !== -1 && (!data.startsWith('"usage":null', usage) || data.indexOf('"usage"', usage + 1) !== -1)) return null;
  return data.includes('"error"') ? null : data.slice(start, end);
}
