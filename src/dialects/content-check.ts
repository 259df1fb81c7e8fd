// Text-only gate (docs/api.md#rules, rule 7): find the first non-text block of a request before any translation,
// so the refusal names the block's position in the client's own request.
import { GatewayError } from "../core/errors.ts";
import { isObject } from "./fields.ts";

export interface ContentHit {
  /** JSON path in the client's request, e.g. `messages[2].content[0].content[1]`. */
  path: string;
  /** What was found: image, audio, video, document, file, or the unknown block type itself. */
  kind: string;
}

// Messages block types that carry only text or tool plumbing (messages.md §5). search_result is
// text with a source; whether a translator can carry it is that translator's business.
const MESSAGES_TOP: ReadonlySet<string> = new Set(["text", "tool_use", "tool_result", "thinking", "redacted_thinking", "search_result"]);
// Blocks allowed inside tool_result.content.
const MESSAGES_NESTED: ReadonlySet<string> = new Set(["text", "search_result", "tool_reference"]);
// system accepts only text blocks.
const MESSAGES_SYSTEM: ReadonlySet<string> = new Set(["text"]);

// Chat part types and what they carry; anything not text/refusal is refused.
const CHAT_TEXT: ReadonlySet<string> = new Set(["text", "refusal"]);
const CHAT_KIND: ReadonlyMap<string, string> = new Map([
  ["image_url", "image"],
  ["input_audio", "audio"],
  ["audio_url", "audio"], // vLLM
  ["video_url", "video"], // vLLM, Qwen-compatible servers
  ["file", "file"],
]);

const MESSAGES_KIND: ReadonlyMap<string, string> = new Map([
  ["image", "image"],
  ["document", "document"],
]);

function kindOf(type: unknown, kinds: ReadonlyMap<string, string>): string {
  if (typeof type !== "string") return "untyped";
  return kinds.get(type) ?? type;
}

const KINDS = { messages: MESSAGES_KIND, chat: CHAT_KIND } as const;

/** What a block or part type carries, in the words of the refusal ("image_url" → "image"). */
export function contentKind(dialect: keyof typeof KINDS, type: unknown): string {
  return kindOf(type, KINDS[dialect]);
}

// The scanners walk every block of an agent's turn (hundreds of them) on every request: a path is
// written only for the block that is refused, not for each one passed.

/** The first block of `blocks` outside `allowed` (nested tool_result blocks included); its path relative to `blocks`. */
function scanBlocks(blocks: unknown, allowed: ReadonlySet<string>): ContentHit | null {
  if (!Array.isArray(blocks)) return null;
  for (let j = 0; j < blocks.length; j++) {
    const block: unknown = blocks[j];
    const type = isObject(block) ? block.type : undefined;
    if (typeof type !== "string" || !allowed.has(type)) return { path: `[${j}]`, kind: kindOf(type, MESSAGES_KIND) };
    if (type === "tool_result") {
      const nested = scanBlocks((block as Record<string, unknown>).content, MESSAGES_NESTED);
      if (nested) return { path: `[${j}].content${nested.path}`, kind: nested.kind };
    }
  }
  return null;
}

const under = (prefix: string, hit: ContentHit | null): ContentHit | null => hit && { path: prefix + hit.path, kind: hit.kind };

function scanMessages(body: Record<string, unknown>): ContentHit | null {
  const system = under("system", scanBlocks(body.system, MESSAGES_SYSTEM));
  if (system) return system;
  const messages = body.messages;
  if (!Array.isArray(messages)) return null;
  for (let i = 0; i < messages.length; i++) {
    const m: unknown = messages[i];
    const hit = isObject(m) ? scanBlocks(m.content, MESSAGES_TOP) : null;
    if (hit) return under(`messages[${i}].content`, hit);
  }
  return null;
}

/**
 * Audio asked as output (`modalities: ["text", "audio"]`, `audio: {voice, format}`): OpenAI bills audio
 * tokens at several times the text rates inside the same completion_tokens, so a native route would
 * sell them at the text price; translated routes refuse them too (chat-via-messages.ts).
 */
function scanChatOutput(body: Record<string, unknown>): ContentHit | null {
  const modalities = body.modalities;
  if (Array.isArray(modalities)) {
    for (let i = 0; i < modalities.length; i++) if (modalities[i] !== "text") return { path: `modalities[${i}]`, kind: String(modalities[i]) };
  }
  return body.audio !== undefined && body.audio !== null ? { path: "audio", kind: "audio" } : null;
}

function scanChat(body: Record<string, unknown>): ContentHit | null {
  const output = scanChatOutput(body);
  if (output) return output;
  const messages = body.messages;
  if (!Array.isArray(messages)) return null;
  for (let i = 0; i < messages.length; i++) {
    const m: unknown = messages[i];
    if (!isObject(m)) continue;
    // An assistant turn that references an earlier audio answer (`audio: {id}`).
    if (isObject(m.audio)) return { path: `messages[${i}].audio`, kind: "audio" };
    const content = m.content;
    if (!Array.isArray(content)) continue;
    for (let j = 0; j < content.length; j++) {
      const part: unknown = content[j];
      const type = isObject(part) ? part.type : undefined;
      if (typeof type !== "string" || !CHAT_TEXT.has(type)) return { path: `messages[${i}].content[${j}]`, kind: kindOf(type, CHAT_KIND) };
    }
  }
  return null;
}

const SCANNERS = { messages: scanMessages, chat: scanChat } as const;

/** The first non-text block of a request in the given dialect, or null if it is text only. */
export function findNonTextContent(dialect: keyof typeof SCANNERS, body: unknown): ContentHit | null {
  return isObject(body) ? SCANNERS[dialect](body) : null;
}

/** The 400 for a hit; the message starts with the block's path, as Anthropic's own 400s do. */
export function unsupportedContent(hit: ContentHit): GatewayError {
  return new GatewayError("unsupported_content_type", `${hit.path}: ${hit.kind} content is not supported; this gateway accepts text only`);
}
