// Responses tools and tool_choice → Chat, plus the naming scheme that flattens Codex namespace tools.
//
// Naming: a chat function name must match [a-zA-Z0-9_-]{1,64}. A namespaced tool becomes
// `<namespace>__<name>` (Codex's own Messages adapter uses the same join, and models already know
// `multi_agent_v1__spawn_agent` from Codex's prompts). Codex's default namespace `functions` is
// dropped, as Codex treats `functions.x` and a top-level `x` alike. A name that breaks the rule,
// is too long or is already taken becomes `<sanitized prefix>_<8 hex of sha256(namespace, name)>`.
// Reversal never parses the name (MCP namespaces like `mcp__github` contain `__` themselves): the
// returned ToolNameMap records what every chat name stands for.

import { createHash } from "node:crypto";
import { isObject, refuse } from "../fields.ts";
import type { JsonObject } from "../../wire/shapes.ts";
import type { ToolNameMap, ToolTarget } from "./types.ts";

const CHAT_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** Codex's DEFAULT_FUNCTION_NAMESPACE (codex-rs protocol/src/tool_name.rs). */
const DEFAULT_NAMESPACE = "functions";

/**
 * Tool types that only OpenAI's servers (or Responses-only client items) can run. Merely offered,
 * they are left out and reported; forced by tool_choice, they are refused. Codex sends
 * `{type:"web_search"}` by default, so refusing offered ones would break it out of the box.
 */
const HOSTED_TYPES = new Set([
  "file_search",
  "web_search",
  "web_search_2025_08_26",
  "web_search_preview",
  "web_search_preview_2025_03_11",
  "computer",
  "computer_use",
  "computer_use_preview",
  "code_interpreter",
  "image_generation",
  "mcp",
  "local_shell",
  "shell",
  "apply_patch",
  "tool_search",
  "programmatic_tool_calling",
]);

const identity = (namespace: string | undefined, name: string) => `${namespace ?? ""}\u0000${name}`;

function plainName(namespace: string | undefined, name: string): string {
  return namespace && namespace !== DEFAULT_NAMESPACE ? `${namespace}__${name}` : name;
}

function hashedName(namespace: string | undefined, name: string, salt = ""): string {
  const hash = createHash("sha256").update(identity(namespace, name) + salt).digest("hex").slice(0, 8);
  const prefix = plainName(namespace, name).replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 55);
  return `${prefix}_${hash}`;
}

/** Assigns chat names to declared tools and answers lookups from history and tool_choice. */
export class ToolNamer {
  readonly map = new Map<string, ToolTarget>();
  private readonly byIdentity = new Map<string, string>();

  declare(target: ToolTarget, path: string): string {
    const key = identity(target.namespace, target.name);
    if (this.byIdentity.has(key)) refuse(path, `duplicate tool '${plainName(target.namespace, target.name)}'`);
    let chat = plainName(target.namespace, target.name);
    for (let salt = 0; !CHAT_NAME.test(chat) || this.map.has(chat); salt++) {
      chat = hashedName(target.namespace, target.name, salt ? String(salt) : "");
    }
    this.map.set(chat, target);
    this.byIdentity.set(key, chat);
    return chat;
  }

  /** The chat name of a declared tool, if any. */
  find(namespace: string | undefined, name: string): string | undefined {
    const exact = this.byIdentity.get(identity(namespace, name));
    if (exact || (namespace !== undefined && namespace !== DEFAULT_NAMESPACE)) return exact;
    // Codex treats no namespace and `functions` as one (ToolName::with_default_namespace).
    const other = namespace === undefined ? DEFAULT_NAMESPACE : undefined;
    return this.byIdentity.get(identity(other, name));
  }

  /** The chat name for a call in the history; tools no longer offered get the same deterministic name. */
  nameFor(namespace: string | undefined, name: string): string {
    const found = this.find(namespace, name);
    if (found) return found;
    const plain = plainName(namespace, name);
    return CHAT_NAME.test(plain) ? plain : hashedName(namespace, name);
  }

  get names(): ToolNameMap {
    return this.map;
  }
}

export interface MappedTools {
  tools: JsonObject[];
  /** Types of hosted tools left out of the upstream call, deduplicated, in request order. */
  dropped: string[];
}

/** One tool as it appeared in the request, with its JSON path for error messages. */
export interface SourcedTool {
  tool: unknown;
  path: string;
}

export function mapTools(sources: SourcedTool[], namer: ToolNamer): MappedTools {
  const tools: JsonObject[] = [];
  const dropped: string[] = [];
  for (const { tool, path } of sources) {
    if (!isObject(tool) || typeof tool.type !== "string") refuse(path, "each tool must be an object with a type");
    if (tool.type === "function" || tool.type === "custom") {
      tools.push(mapOne(tool, undefined, undefined, path, namer));
    } else if (tool.type === "namespace") {
      const namespace = requireName(tool, path);
      if (!Array.isArray(tool.tools)) refuse(`${path}.tools`, "must be an array");
      const nsDescription = typeof tool.description === "string" ? tool.description : undefined;
      tool.tools.forEach((child, j) => {
        const childPath = `${path}.tools[${j}]`;
        if (!isObject(child) || (child.type !== "function" && child.type !== "custom")) {
          refuse(`${childPath}.type`, "a namespace may hold only function and custom tools");
        }
        // Once, on the first child: copied into each, a 1 MB description with 2,000 children made a
        // 2 GB upstream body that holds and estimates sized on the client's 1 MB knew nothing of.
        tools.push(mapOne(child, namespace, j === 0 ? nsDescription : undefined, childPath, namer));
      });
    } else if (HOSTED_TYPES.has(tool.type)) {
      if (!dropped.includes(tool.type)) dropped.push(tool.type);
    } else {
      refuse(`${path}.type`, `unknown tool type '${tool.type}'`);
    }
  }
  return { tools, dropped };
}

function requireName(tool: JsonObject, path: string): string {
  if (typeof tool.name !== "string" || tool.name === "") refuse(`${path}.name`, "required");
  return tool.name;
}

function joinText(...parts: (string | undefined)[]): string | undefined {
  const text = parts.filter((p) => p && p.trim() !== "").join("\n\n");
  return text === "" ? undefined : text;
}

function mapOne(tool: JsonObject, namespace: string | undefined, nsDescription: string | undefined, path: string, namer: ToolNamer): JsonObject {
  const name = requireName(tool, path);
  const kind = tool.type === "custom" ? "custom" : "function";
  const chatName = namer.declare(namespace === undefined ? { name, kind } : { name, namespace, kind }, `${path}.name`);
  const own = typeof tool.description === "string" ? tool.description : undefined;
  // A flat chat tool has no field for its namespace, so the namespace's description opens the
  // description of its first tool (docs/translation.md#responses).
  const fn: JsonObject = { name: chatName };
  if (kind === "function") {
    const description = joinText(nsDescription, own);
    if (description) fn.description = description;
    if (tool.parameters != null) fn.parameters = tool.parameters;
    // Responses is said to treat an omitted `strict` as strict, Chat does not (responses.md §3,
    // unverified). We forward only an explicit value: forcing strict would make OpenAI reject any
    // schema that is not strict-compliant, for a reason the client cannot see.
    if (typeof tool.strict === "boolean") fn.strict = tool.strict;
  } else {
    fn.description = joinText(nsDescription, own, grammarNote(tool.format)) ?? "";
    fn.parameters = CUSTOM_PARAMETERS;
  }
  return { type: "function", function: fn };
}

// Chat has no freeform tools on most upstreams, so a `custom` tool travels as a function taking its
// raw text in `input` (Codex's own Messages adapter does the same); the answer unwraps it.
const CUSTOM_PARAMETERS = {
  type: "object",
  properties: { input: { type: "string", description: "The tool's raw input text, exactly as the tool description asks for." } },
  required: ["input"],
  additionalProperties: false,
};

function grammarNote(format: unknown): string | undefined {
  if (!isObject(format) || format.type !== "grammar" || typeof format.definition !== "string") return undefined;
  const syntax = typeof format.syntax === "string" ? format.syntax : "given";
  return `The input must follow this ${syntax} grammar:\n${format.definition}`;
}

/** Chat arguments of a `custom` tool call → the raw input the Responses client expects. */
export function unwrapCustomInput(args: string): string {
  try {
    const parsed: unknown = JSON.parse(args);
    if (isObject(parsed) && typeof parsed.input === "string") return parsed.input;
  } catch {
    // A model that ignored the wrapper and wrote raw text: that text is the input.
  }
  return args;
}

export function isHostedType(type: unknown): boolean {
  return typeof type === "string" && HOSTED_TYPES.has(type);
}

/**
 * tool_choice → Chat. `hasTools` says whether any function tool survived; without one, Chat must
 * get no tool_choice at all (OpenAI refuses a tool_choice without tools).
 */
export function mapToolChoice(choice: unknown, namer: ToolNamer, hasTools: boolean): string | JsonObject | undefined {
  if (choice == null) return undefined;
  if (typeof choice === "string") {
    if (choice !== "none" && choice !== "auto" && choice !== "required") refuse("tool_choice", `unknown value '${choice}'`);
    if (hasTools) return choice;
    if (choice === "required") refuse("tool_choice", "'required' needs at least one function tool this gateway can run");
    return undefined;
  }
  if (!isObject(choice) || typeof choice.type !== "string") refuse("tool_choice", "must be a string or an object with a type");
  if (isHostedType(choice.type)) {
    refuse("tool_choice", `forces the hosted tool '${choice.type}', which this gateway cannot run`);
  }
  if (choice.type === "function" || choice.type === "custom") {
    return { type: "function", function: { name: declaredName(choice, "tool_choice", namer) } };
  }
  if (choice.type === "allowed_tools") return mapAllowedTools(choice, namer);
  refuse("tool_choice.type", `unknown value '${choice.type}'`);
}

function declaredName(ref: JsonObject, path: string, namer: ToolNamer): string {
  if (typeof ref.name !== "string" || ref.name === "") refuse(`${path}.name`, "required");
  // No namespace field exists on OpenAI's ToolChoiceFunction; accept one anyway for namespace tools.
  const namespace = typeof ref.namespace === "string" ? ref.namespace : undefined;
  const chat = namer.find(namespace, ref.name);
  if (!chat) refuse(`${path}.name`, `no ${String(ref.type)} tool named '${ref.name}' in tools`);
  return chat;
}

function mapAllowedTools(choice: JsonObject, namer: ToolNamer): string | JsonObject {
  const mode = choice.mode;
  if (mode !== "auto" && mode !== "required") refuse("tool_choice.mode", "must be 'auto' or 'required'");
  if (!Array.isArray(choice.tools)) refuse("tool_choice.tools", "must be an array");
  const allowed: JsonObject[] = [];
  choice.tools.forEach((ref, i) => {
    const path = `tool_choice.tools[${i}]`;
    if (!isObject(ref)) refuse(path, "must be an object");
    if (isHostedType(ref.type)) return; // allowed, not forced: it was left out with the tools
    if (ref.type !== "function" && ref.type !== "custom") refuse(`${path}.type`, `unknown value '${String(ref.type)}'`);
    allowed.push({ type: "function", function: { name: declaredName(ref, path, namer) } });
  });
  if (allowed.length === 0) {
    if (mode === "required") refuse("tool_choice", "requires a hosted tool, which this gateway cannot run");
    return "none";
  }
  return { type: "allowed_tools", allowed_tools: { mode, tools: allowed } };
}
