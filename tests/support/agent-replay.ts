import type OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import type { MockUpstream } from "./mock-upstream.ts";
import { PromptCacheModel } from "./prompt-cache.ts";

// A coding agent's conversation as a Chat client drives it (Codex, Cline): a ~3,000-token system
// prompt, 10 tools, and a history that grows each turn by the model's tool call and the tool's
// result (every fifth turn a text answer and a new user instruction instead). The upstream is the
// mock Messages vendor with Anthropic's prompt cache (prompt-cache.ts) deciding each turn's usage.

export const AGENT_TURNS = 20;

/** Deterministic filler prose of about `tokens` tokens (4 characters each). */
function prose(seed: string, tokens: number): string {
  const words = ["the", "module", "returns", "a", "value", "when", "called", "with", "its", "input", "and", "logs", "each", "step"];
  const out: string[] = [];
  for (let i = 0, n = 0; n < tokens * 4; i++) {
    const w = `${words[(i * 7 + seed.length) % words.length]}${i % 11 === 0 ? `-${seed}${i}` : ""}`;
    out.push(w);
    n += w.length + 1;
  }
  return out.join(" ");
}

export const AGENT_SYSTEM = `You are a coding agent working in a repository. ${prose("rules", 3000)}`;

const TOOL_NAMES = ["read_file", "write_file", "list_dir", "search", "run_tests", "run_command", "git_diff", "git_commit", "open_url", "ask_user"];

export const AGENT_TOOLS: ChatCompletionTool[] = TOOL_NAMES.map(
  (name) => ({
    type: "function",
    function: {
      name,
      description: `${name.replace("_", " ")}: ${prose(name, 60)}`,
      parameters: { type: "object", properties: { path: { type: "string", description: "a path in the repository" }, text: { type: "string" } }, required: ["path"] },
    },
  }),
);

export interface TurnBill {
  turn: number;
  costUsd: number;
  promptTokens: number;
  cachedTokens: number;
  cacheWriteTokens: number;
}

/**
 * Replays the conversation on `model` through the gateway with `client`, the mock answering each
 * turn; returns each turn's bill as the client saw it (usage.cost_usd and the token counts).
 */
export async function replayAgent(client: OpenAI, up: MockUpstream, model: string, turns = AGENT_TURNS): Promise<TurnBill[]> {
  const cache = new PromptCacheModel();
  const usage = (body: Record<string, unknown>) => cache.usageOf(body);
  const messages: ChatCompletionMessageParam[] = [
    { role: "system", content: AGENT_SYSTEM },
    { role: "user", content: "Fix the failing test in src/ledger and commit the fix." },
  ];
  const bills: TurnBill[] = [];
  for (let turn = 1; turn <= turns; turn++) {
    const answersInText = turn % 5 === 0;
    up.script(
      answersInText
        ? { kind: "text", text: `Done with step ${turn}. ${prose(`a${turn}`, 80)}`, usage }
        : { kind: "tool_calls", calls: [{ id: `toolu_${turn}`, name: TOOL_NAMES[turn % 10]!, arguments: { path: `src/file${turn}.ts` } }], usage },
    );
    const res = await client.chat.completions.create({ model, max_completion_tokens: 2000, messages, tools: AGENT_TOOLS });
    const u = res.usage as OpenAI.CompletionUsage & { cost_usd: number; prompt_tokens_details: { cached_tokens: number; cache_write_tokens?: number } };
    bills.push({ turn, costUsd: u.cost_usd, promptTokens: u.prompt_tokens, cachedTokens: u.prompt_tokens_details.cached_tokens, cacheWriteTokens: u.prompt_tokens_details.cache_write_tokens ?? 0 });
    const msg = res.choices[0]!.message;
    messages.push({ role: "assistant", content: msg.content, ...(msg.tool_calls ? { tool_calls: msg.tool_calls } : {}) });
    if (answersInText) messages.push({ role: "user", content: `Good. Now step ${turn + 1}: ${prose(`u${turn}`, 40)}` });
    else for (const call of msg.tool_calls ?? []) messages.push({ role: "tool", tool_call_id: call.id, content: prose(`r${turn}`, 600) });
  }
  return bills;
}
