// Prompt-cache breakpoints on the way to a Messages upstream (docs/translation.md, "Prompt
// caching"): the client's own, carried from where OpenAI-compatible clients put them, or, on a route
// with prompt_cache = "auto", placed by the gateway where a growing conversation reuses its prefix.
import { isSet, objectAt, refuse } from "./fields.ts";
import type { JsonObject, MessagesBlock, MessagesRequest } from "../wire/shapes.ts";

/** Anthropic refuses a request with more blocks carrying cache_control than this. */
export const MAX_BREAKPOINTS = 4;

/** The breakpoints a translation carried: the client's JSON path of each, in order. */
export type Breakpoints = string[];

/**
 * The client's `cache_control` at `path` onto `target`, carried as sent (`ttl` included: Anthropic
 * checks its type and ttl). Absent (or null): nothing.
 */
export function carryCacheControl(v: unknown, path: string, target: JsonObject, seen: Breakpoints): void {
  if (!isSet(v)) return;
  target.cache_control = objectAt(v, path);
  seen.push(path);
}

/** More than Anthropic takes is refused here, as it would be upstream, naming the first one too many. */
export function checkBreakpointCount(seen: Breakpoints): void {
  if (seen.length > MAX_BREAKPOINTS) {
    refuse(seen[MAX_BREAKPOINTS]!, `a maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be sent to a Messages upstream (found ${seen.length})`);
  }
}

const EPHEMERAL = (): JsonObject => ({ type: "ephemeral" });

/** A block that can carry a breakpoint: thinking blocks cannot, and a blank text block is never sent. */
function canCarry(b: MessagesBlock | JsonObject | undefined): b is JsonObject {
  if (!b) return false;
  if (b.type === "thinking" || b.type === "redacted_thinking") return false;
  return b.type !== "text" || (typeof b.text === "string" && b.text.trim() !== "");
}

/**
 * The gateway's own breakpoints, 5-minute ones, for a request that sent none: the last tool (the
 * tool list is the prefix's start), the last system block, the last user turn's last block (the
 * conversation so far, read back by the next turn) and the user turn before it (what the previous
 * turn wrote: read at once, without relying on the upstream's look-back of 20 blocks). Anthropic
 * reads the longest cached prefix and writes the rest up to the last breakpoint.
 */
export function placeBreakpoints(out: MessagesRequest): number {
  const targets: JsonObject[] = [];
  const lastTool = out.tools?.at(-1);
  if (canCarry(lastTool)) targets.push(lastTool);
  if (Array.isArray(out.system)) {
    const s = out.system.at(-1);
    if (canCarry(s)) targets.push(s);
  } else if (typeof out.system === "string" && out.system.trim() !== "") {
    const block: MessagesBlock = { type: "text", text: out.system };
    out.system = [block];
    targets.push(block);
  }
  let users = 0;
  for (let i = out.messages.length - 1; i >= 0 && users < 2 && targets.length < MAX_BREAKPOINTS; i--) {
    const m = out.messages[i]!;
    if (m.role !== "user" || !Array.isArray(m.content)) continue;
    const last = m.content.at(-1);
    if (canCarry(last)) targets.push(last);
    users++;
  }
  for (const t of targets.slice(0, MAX_BREAKPOINTS)) t.cache_control = EPHEMERAL();
  return Math.min(targets.length, MAX_BREAKPOINTS);
}
