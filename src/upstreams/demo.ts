import type { ProviderConfig } from "../config/schema.ts";
import type { JsonObject } from "../wire/shapes.ts";
import { GatewayError } from "../core/errors.ts";
import { encodePng } from "./png.ts";
import type { ImageCall, Provider, TextCall } from "./types.ts";
import { OUTPUT_TOKENS, worstOutputTokens } from "../catalog/image-prices.ts";

// The in-process provider of the built-in catalog: deterministic, no network, and it answers in the
// vendors' own wire formats so the gateway's real proxy path (parsing, cost, streaming) is exercised.

interface Reply {
  text: string;
  tool: { name: string; input: JsonObject } | null;
  inputTokens: number;
  outputTokens: number;
  truncated: boolean;
}

const tokensOf = (s: string) => Math.max(1, Math.ceil(new TextEncoder().encode(s).length / 4));

function lastUserText(messages: unknown): string {
  if (!Array.isArray(messages)) return "";
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: string; content?: unknown };
    if (m?.role !== "user") continue;
    if (typeof m.content === "string") return m.content;
    if (Array.isArray(m.content)) {
      return m.content
        .filter((b: { type?: string }) => b?.type === "text")
        .map((b: { text?: string }) => b.text ?? "")
        .join(" ");
    }
  }
  return "";
}

function forcedTool(dialect: TextCall["dialect"], body: JsonObject): { name: string; schema: JsonObject } | null {
  const tools = (body.tools as JsonObject[] | undefined) ?? [];
  if (!tools.length) return null;
  const choice = body.tool_choice as string | JsonObject | undefined;
  const nameOf = (t: JsonObject) => (dialect === "chat" ? ((t.function as JsonObject)?.name as string) : (t.name as string));
  const schemaOf = (t: JsonObject) =>
    ((dialect === "chat" ? (t.function as JsonObject)?.parameters : t.input_schema) as JsonObject | undefined) ?? {};
  let want: string | undefined;
  if (dialect === "chat") {
    if (choice === "required") want = nameOf(tools[0]!);
    else if (choice && typeof choice === "object") want = ((choice.function as JsonObject)?.name as string) ?? undefined;
  } else if (choice && typeof choice === "object") {
    if (choice.type === "any") want = nameOf(tools[0]!);
    else if (choice.type === "tool") want = choice.name as string;
  }
  const tool = want ? tools.find((t) => nameOf(t) === want) : undefined;
  return tool ? { name: want!, schema: schemaOf(tool) } : null;
}

// Fills required string/number/boolean properties so the arguments validate against simple schemas.
function sampleArgs(schema: JsonObject): JsonObject {
  const props = (schema.properties as Record<string, JsonObject> | undefined) ?? {};
  const out: JsonObject = {};
  for (const name of (schema.required as string[] | undefined) ?? []) {
    const t = props[name]?.type;
    out[name] = t === "number" || t === "integer" ? 1 : t === "boolean" ? true : t === "array" ? [] : t === "object" ? {} : "demo";
  }
  return out;
}

function compose(call: TextCall): Reply {
  const b = call.body;
  const prompt = JSON.stringify([b.system ?? null, b.messages, b.tools ?? null]);
  const inputTokens = tokensOf(prompt);
  const cap = Number(b.max_tokens ?? b.max_completion_tokens ?? 4096);
  const tool = forcedTool(call.dialect, b);
  const said = lastUserText(b.messages).replace(/\s+/g, " ").trim();
  let text = tool
    ? ""
    : `Hello from the demo model of this gateway. Your last message had ${said.length} characters` +
      (said ? ` and began with "${said.slice(0, 40)}"` : "") +
      ". Configure a real provider to get real answers; this reply is deterministic.";
  let truncated = false;
  if (text && tokensOf(text) > cap) {
    text = text.slice(0, Math.max(0, cap * 4));
    truncated = true;
  }
  const toolInput = tool ? sampleArgs(tool.schema) : null;
  const outputTokens = text ? tokensOf(text) : tokensOf(JSON.stringify(toolInput));
  return { text, tool: tool ? { name: tool.name, input: toolInput! } : null, inputTokens, outputTokens: Math.min(outputTokens, Math.max(cap, 1)), truncated };
}

const words = (s: string) => s.match(/\S+\s*/g) ?? [];
const sse = (event: string | null, data: unknown) => `${event ? `event: ${event}\n` : ""}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;

function streamOf(parts: string[]): Response {
  const enc = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      const next = parts.shift();
      if (next === undefined) c.close();
      else c.enqueue(enc.encode(next));
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
}

const json = (data: unknown) => Response.json(data);

function messagesAnswer(call: TextCall, r: Reply, id: string): Response {
  const model = call.body.model as string;
  const stop = r.tool ? "tool_use" : r.truncated ? "max_tokens" : "end_turn";
  const usage = { input_tokens: r.inputTokens, output_tokens: r.outputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const toolBlock = r.tool && { type: "tool_use", id: `toolu_demo_${id}`, name: r.tool.name, input: r.tool.input };
  if (!call.body.stream) {
    const content = toolBlock ? [toolBlock] : [{ type: "text", text: r.text }];
    return json({ id: `msg_demo_${id}`, type: "message", role: "assistant", model, content, stop_reason: stop, stop_sequence: null, usage });
  }
  const parts = [
    sse("message_start", {
      type: "message_start",
      message: { id: `msg_demo_${id}`, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } },
    }),
  ];
  if (toolBlock) {
    parts.push(sse("content_block_start", { type: "content_block_start", index: 0, content_block: { ...toolBlock, input: {} } }));
    parts.push(sse("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: JSON.stringify(r.tool!.input) } }));
  } else {
    parts.push(sse("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }));
    parts.push(sse("ping", { type: "ping" }));
    for (const w of words(r.text)) parts.push(sse("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: w } }));
  }
  parts.push(sse("content_block_stop", { type: "content_block_stop", index: 0 }));
  parts.push(sse("message_delta", { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage }));
  parts.push(sse("message_stop", { type: "message_stop" }));
  return streamOf(parts);
}

function chatAnswer(call: TextCall, r: Reply, id: string): Response {
  const model = call.body.model as string;
  const created = Math.floor(Date.now() / 1000);
  const finish = r.tool ? "tool_calls" : r.truncated ? "length" : "stop";
  const usage = {
    prompt_tokens: r.inputTokens,
    completion_tokens: r.outputTokens,
    total_tokens: r.inputTokens + r.outputTokens,
    prompt_tokens_details: { cached_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
  const toolCall = r.tool && { id: `call_demo_${id}`, type: "function", function: { name: r.tool.name, arguments: JSON.stringify(r.tool.input) } };
  const base = { id: `chatcmpl-demo${id}`, created, model };
  if (!call.body.stream) {
    const message = { role: "assistant", content: toolCall ? null : r.text, refusal: null, ...(toolCall ? { tool_calls: [toolCall] } : {}) };
    return json({ ...base, object: "chat.completion", choices: [{ index: 0, message, logprobs: null, finish_reason: finish }], usage });
  }
  const chunk = (delta: JsonObject, finish_reason: string | null = null) =>
    sse(null, { ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta, logprobs: null, finish_reason }] });
  const parts = [chunk({ role: "assistant", content: "", refusal: null })];
  if (toolCall) parts.push(chunk({ tool_calls: [{ index: 0, ...toolCall }] }));
  else for (const w of words(r.text)) parts.push(chunk({ content: w }));
  parts.push(chunk({}, finish));
  if ((call.body.stream_options as JsonObject | undefined)?.include_usage) {
    parts.push(sse(null, { ...base, object: "chat.completion.chunk", choices: [], usage }));
  }
  parts.push("data: [DONE]\n\n");
  return streamOf(parts);
}

let seq = 0;

function parseSize(size: unknown): [number, number] {
  if (size === undefined || size === null || size === "auto") return [1024, 1024];
  const m = typeof size === "string" ? /^(\d{2,4})x(\d{2,4})$/.exec(size) : null;
  const w = Number(m?.[1]);
  const h = Number(m?.[2]);
  if (!m || w < 16 || h < 16 || w > 4096 || h > 4096) {
    throw new GatewayError("invalid_request", `size: '${String(size)}' is not supported; use WIDTHxHEIGHT between 16 and 4096, or auto.`);
  }
  return [w, h];
}

/** Image input tokens the demo reports per edit source (a 1024² source at low input fidelity is in this range). */
const DEMO_SOURCE_TOKENS = 323;

const sourcesOf = (body: JsonObject | FormData): number =>
  body instanceof FormData ? [...body.keys()].filter((k) => k === "image" || k.startsWith("image[")).length : 0;

function field(body: JsonObject | FormData, name: string): unknown {
  return body instanceof FormData ? (body.get(name) ?? undefined) : body[name];
}

export function demoProvider(config: ProviderConfig): Provider {
  return {
    config,
    dialects: ["messages", "chat"],
    async text(call) {
      const id = `${Date.now().toString(36)}${(seq++).toString(36)}`;
      const reply = compose(call);
      return call.dialect === "messages" ? messagesAnswer(call, reply, id) : chatAnswer(call, reply, id);
    },
    async images(call) {
      const prompt = String(field(call.body, "prompt") ?? "");
      const n = Number(field(call.body, "n") ?? 1);
      const [w, h] = parseSize(field(call.body, "size"));
      let hash = 2166136261;
      for (const ch of prompt) hash = Math.imul(hash ^ ch.charCodeAt(0), 16777619) >>> 0;
      const data = Array.from({ length: n }, (_, i) => {
        const base = (hash >>> (i % 24)) & 0xffffff;
        const png = encodePng(w, h, (x, y) => [(base >> 16) & 0xff, ((base >> 8) + (x * 255) / w) & 0xff, ((base & 0xff) + (y * 255) / h) & 0xff]);
        return { b64_json: Buffer.from(png).toString("base64") };
      });
      // Usage as gpt-image-1 reports it: OpenAI's output tokens for the quality and size, the sources' tokens as image input.
      const asked = field(call.body, "quality");
      const quality = typeof asked === "string" && Object.hasOwn(OUTPUT_TOKENS, asked) ? asked : "medium";
      const textTokens = tokensOf(prompt);
      const imageTokens = sourcesOf(call.body) * DEMO_SOURCE_TOKENS;
      const outputTokens = n * worstOutputTokens(quality, `${w}x${h}`);
      return json({
        created: Math.floor(Date.now() / 1000),
        data,
        output_format: "png",
        size: `${w}x${h}`,
        quality,
        usage: {
          input_tokens: textTokens + imageTokens,
          output_tokens: outputTokens,
          total_tokens: textTokens + imageTokens + outputTokens,
          input_tokens_details: { text_tokens: textTokens, image_tokens: imageTokens },
          output_tokens_details: { image_tokens: outputTokens, text_tokens: 0 },
        },
      });
    },
  };
}
