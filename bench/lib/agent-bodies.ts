// Agent-sized request bodies (issue 17): one coding-agent turn as Claude Code or Codex sends it: a long
// system prompt, 25 tools with JSON schemas, 60 history messages of tool calls and their results.
// Deterministic (a seeded generator, no clock, no randomness from outside), so every run and every
// target sends the same bytes. The same turn in three dialects: Messages, Chat and Responses.
import { rng } from "../../tests/fault/support/books.ts";

const TOOLS = 25;
/** History messages after the first user turn: assistant tool calls and user tool results, alternating. */
const HISTORY = 60;

const WORDS = (
  "the file function return value test error config request response stream token model tool call result " +
  "import export const let type interface async await promise buffer string number object array index path " +
  "read write open close line column branch commit diff patch build run check lint format module package"
).split(" ");

function prose(next: () => number, chars: number): string {
  let out = "";
  while (out.length < chars) {
    out += WORDS[Math.floor(next() * WORDS.length)]!;
    // Some code-like lines, quotes and newlines, as real tool output has (they are escaped in JSON).
    const r = next();
    out += r < 0.08 ? '.\n' : r < 0.11 ? ' "quoted" ' : r < 0.13 ? "\t" : " ";
  }
  return out.slice(0, chars);
}

interface Tool {
  name: string;
  description: string;
  schema: Record<string, unknown>;
}

function tools(next: () => number): Tool[] {
  return Array.from({ length: TOOLS }, (_, i) => {
    const props: Record<string, unknown> = {};
    for (let p = 0; p < 5; p++) {
      props[`param_${p}`] =
        p % 3 === 0
          ? { type: "string", description: prose(next, 80) }
          : p % 3 === 1
            ? { type: "integer", minimum: 0, description: prose(next, 40) }
            : { type: "array", items: { type: "string", enum: ["a", "b", "c"] }, description: prose(next, 40) };
    }
    return {
      name: `tool_${i}`,
      description: prose(next, 420),
      schema: { type: "object", properties: props, required: ["param_0"], additionalProperties: false },
    };
  });
}

/** One turn, dialect-neutral: the calls and results the three shapes below are written from. */
interface Turn {
  system: string;
  tools: Tool[];
  first: string;
  steps: { id: string; tool: string; args: Record<string, unknown>; thought: string; result: string }[];
}

function turn(resultChars: number): Turn {
  const next = rng(17);
  const ts = tools(next);
  return {
    system: prose(next, 16_000),
    tools: ts,
    first: prose(next, 600),
    steps: Array.from({ length: HISTORY / 2 }, (_, i) => ({
      id: `toolu_${String(i).padStart(4, "0")}`,
      tool: ts[i % TOOLS]!.name,
      args: { param_0: prose(next, 60), param_1: i },
      thought: prose(next, 120),
      result: prose(next, resultChars),
    })),
  };
}

export type AgentDialect = "messages" | "chat" | "responses";

function shape(dialect: AgentDialect, t: Turn, model: string, stream: boolean): Record<string, unknown> {
  if (dialect === "messages") {
    const messages: unknown[] = [{ role: "user", content: [{ type: "text", text: t.first }] }];
    for (const s of t.steps) {
      messages.push({ role: "assistant", content: [{ type: "text", text: s.thought }, { type: "tool_use", id: s.id, name: s.tool, input: s.args }] });
      messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: s.id, content: s.result }] });
    }
    return {
      model, max_tokens: 1024, system: [{ type: "text", text: t.system }],
      tools: t.tools.map((x) => ({ name: x.name, description: x.description, input_schema: x.schema })),
      messages, ...(stream ? { stream: true } : {}),
    };
  }
  if (dialect === "chat") {
    const messages: unknown[] = [{ role: "system", content: t.system }, { role: "user", content: t.first }];
    for (const s of t.steps) {
      messages.push({ role: "assistant", content: s.thought, tool_calls: [{ id: s.id, type: "function", function: { name: s.tool, arguments: JSON.stringify(s.args) } }] });
      messages.push({ role: "tool", tool_call_id: s.id, content: s.result });
    }
    return {
      model, max_tokens: 1024, messages,
      tools: t.tools.map((x) => ({ type: "function", function: { name: x.name, description: x.description, parameters: x.schema } })),
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    };
  }
  const input: unknown[] = [{ type: "message", role: "user", content: [{ type: "input_text", text: t.first }] }];
  for (const s of t.steps) {
    input.push({ type: "message", role: "assistant", content: [{ type: "output_text", text: s.thought }] });
    input.push({ type: "function_call", call_id: s.id, name: s.tool, arguments: JSON.stringify(s.args) });
    input.push({ type: "function_call_output", call_id: s.id, output: s.result });
  }
  return {
    model, max_output_tokens: 1024, instructions: t.system, input,
    tools: t.tools.map((x) => ({ type: "function", name: x.name, description: x.description, parameters: x.schema })),
    ...(stream ? { stream: true } : {}),
  };
}

const cache = new Map<number, Turn>();

/** The turn's body in `dialect`, about `kb` KiB of JSON (the tool results grow to reach it). */
export function agentBody(dialect: AgentDialect, kb: number, model: string, stream: boolean): string {
  let t = cache.get(kb);
  if (!t) {
    // The size is linear in the results' length: two probes, then the length that lands on kb.
    const size = (chars: number) => JSON.stringify(shape("messages", turn(chars), "bench-claude", false)).length;
    const a = size(500);
    const b = size(1500);
    const chars = Math.max(50, Math.round(500 + ((kb * 1024 - a) * 1000) / (b - a)));
    t = turn(chars);
    cache.set(kb, t);
  }
  return JSON.stringify(shape(dialect, t, model, stream));
}
