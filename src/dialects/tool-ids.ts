// Tool-call ids and tool names as they cross between the dialects.
import { refuse } from "./fields.ts";

// Anthropic accepts tool_use ids matching only this; Chat upstreams send others (Kimi: `functions.Bash:0`).
const MESSAGES_ID = /^[A-Za-z0-9_-]+$/;
// base64url uses only [A-Za-z0-9_-], so an encoded id is always valid toward Anthropic.
const ENCODED = "gwb64_";

/**
 * Id toward anything speaking Messages. Valid ids pass unchanged; any other id (and, so decoding
 * stays exact, any id that already starts with the prefix) becomes `gwb64_` + base64url(UTF-8 id).
 */
export function toolIdToMessages(id: string): string {
  if (MESSAGES_ID.test(id) && !id.startsWith(ENCODED)) return id;
  return ENCODED + Buffer.from(id, "utf8").toString("base64url");
}

/** Inverse of toolIdToMessages; ids that were never encoded come back unchanged. */
export function toolIdFromMessages(id: string): string {
  if (!id.startsWith(ENCODED)) return id;
  return Buffer.from(id.slice(ENCODED.length), "base64url").toString("utf8");
}

// OpenAI allows function names of ≤64 chars from [a-zA-Z0-9_-] (chat-completions.md §2); Anthropic
// ≤128 (translation.md §1, reports). A longer name is refused, not hash-truncated: mapping a
// truncated name back would need the request's tool list in the response translators.
const NAME_RULES = {
  chat: { max: 64, upstream: "Chat Completions" },
  messages: { max: 128, upstream: "Messages" },
} as const;
const NAME_CHARS = /^[A-Za-z0-9_-]+$/;

/** The name, if the target dialect accepts it; otherwise a 400 naming `path`. */
export function toolNameFor(target: keyof typeof NAME_RULES, name: unknown, path: string): string {
  const rule = NAME_RULES[target];
  if (typeof name !== "string" || name === "") return refuse(path, "must be a non-empty string");
  if (name.length > rule.max || !NAME_CHARS.test(name)) {
    return refuse(path, `tool name "${name}" cannot be sent to a ${rule.upstream} upstream (at most ${rule.max} characters from [A-Za-z0-9_-])`);
  }
  return name;
}
