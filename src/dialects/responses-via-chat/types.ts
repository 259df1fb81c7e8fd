// Loose wire shapes of the Responses dialect (protocols/responses.md). Like wire.ts, these name only
// what the adapter reads or writes; every other field the client sent stays on the object.

import type { JsonObject } from "../../wire/shapes.ts";

export interface ResponsesRequest extends JsonObject {
  model?: string;
  input?: string | JsonObject[];
  instructions?: string | null;
  tools?: JsonObject[] | null;
  tool_choice?: string | JsonObject | null;
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  parallel_tool_calls?: boolean | null;
  text?: JsonObject | null;
  reasoning?: JsonObject | null;
  metadata?: Record<string, string> | null;
  store?: boolean | null;
  stream?: boolean | null;
  include?: string[] | null;
  top_logprobs?: number | null;
}

/** One SSE event of a Responses stream; `event` always equals `data.type`. */
export interface ResponsesEvent {
  event: string;
  data: JsonObject;
}

/** What a chat tool name stands for on the Responses side. */
export interface ToolTarget {
  name: string;
  /** Set for tools that came inside a `namespace` tool; Codex routes calls by (namespace, name). */
  namespace?: string;
  /** `custom` tools travel as a function with one string argument `input` (see tools.ts). */
  kind: "function" | "custom";
}

/** Chat function name → the Responses tool it stands for. Built by the request translator. */
export type ToolNameMap = ReadonlyMap<string, ToolTarget>;
