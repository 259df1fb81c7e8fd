// A Responses stream as SSE text. The response object echoes the request's instructions and tools,
// tens of KB on an agent turn, and a stream carries it in three events (created, in_progress and the
// terminal one): their JSON is written once per stream and reused, the rest as JSON.stringify does.

import type { JsonObject } from "../../wire/shapes.ts";
import { objectJson } from "../../wire/member-text.ts";
import type { ResponsesEvent, ResponsesRequest } from "./types.ts";

export class ResponsesEventEncoder {
  private instructionsJson: string | undefined;
  private toolsJson: string | undefined;

  constructor(private readonly request: ResponsesRequest) {}

  readonly encode = (events: readonly ResponsesEvent[]): string => {
    let out = "";
    // encodeSse's scan for line breaks (46 KB per echoing event) finds none in JSON.stringify's text.
    for (const e of events) out += `event: ${e.event}\ndata: ${this.eventJson(e.data)}\n\n`;
    return out;
  };

  /** Exactly JSON.stringify(data). */
  eventJson(data: JsonObject): string {
    const response = data.response;
    if (!isPlainObject(response)) return JSON.stringify(data);
    return objectJson(data, (key, value) => (key === "response" ? objectJson(response, this.echoed) : JSON.stringify(value)));
  }

  /** A response field's JSON, from the stream's copy when it is the request's instructions or tools. */
  private readonly echoed = (key: string, value: unknown): string | undefined => {
    const req = this.request;
    if (key === "instructions" && typeof value === "string" && value === req.instructions) return (this.instructionsJson ??= JSON.stringify(value));
    if (key === "tools" && value === req.tools && value != null) return (this.toolsJson ??= JSON.stringify(value));
    return JSON.stringify(value);
  };
}

function isPlainObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v) && typeof (v as { toJSON?: unknown }).toJSON !== "function";
}
