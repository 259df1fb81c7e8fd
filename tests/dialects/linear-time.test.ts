import { describe, expect, it } from "bun:test";
import { chatRequestToMessages } from "../../src/dialects/chat-via-messages.ts";
import { responsesRequestToChat } from "../../src/dialects/responses-via-chat/request.ts";
import type { ResponsesRequest } from "../../src/dialects/responses-via-chat/types.ts";
import type { ChatRequest } from "../../src/wire/shapes.ts";

// A translation runs on the event loop: its cost must grow with its input, never with its square.
// The two sizes are timed in turns, five times each, at their best (a loaded machine only ever adds
// time, and a burst of load then hits both sizes), and twice the items must cost well under the 4x a
// per-item copy gave (100,000 function_call items: 13 s).

function timeMs(run: () => unknown): number {
  const t = performance.now();
  run();
  return performance.now() - t;
}

/** The time of `n` items over that of `n / 2`. */
function doublingRatio(n: number, translate: (items: number) => () => unknown): number {
  const half = translate(n / 2);
  const full = translate(n);
  half(); // the JIT's warm-up, counted against neither size
  let halfMs = Infinity;
  let fullMs = Infinity;
  for (let i = 0; i < 5; i++) {
    halfMs = Math.min(halfMs, timeMs(half));
    fullMs = Math.min(fullMs, timeMs(full));
    // Seconds a run: the square is plain already, no need to wait for more.
    if (fullMs > 4000) break;
  }
  return fullMs / halfMs;
}

const calls = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ type: "function_call", call_id: `c${i}`, name: "f", arguments: "{}" }));

describe("translations run in time linear in their input", () => {
  it("translates 100,000 function_call items in linear time (Responses to Chat)", () => {
    const ratio = doublingRatio(100_000, (n) => {
      const req = { model: "m", input: calls(n) } as unknown as ResponsesRequest;
      return () => responsesRequestToChat(req, { upstreamModel: "u", defaultMaxOutputTokens: 16 });
    });
    expect(ratio).toBeLessThan(3);
  }, 60_000);

  it("translates 100,000 consecutive tool results in linear time (Chat to Messages)", () => {
    const ratio = doublingRatio(100_000, (n) => {
      const toolCalls = Array.from({ length: n }, (_, i) => ({ id: `c${i}`, type: "function", function: { name: "f", arguments: "{}" } }));
      const results = toolCalls.map((c) => ({ role: "tool", tool_call_id: c.id, content: "ok" }));
      const req = { model: "m", max_tokens: 16, messages: [{ role: "user", content: "go" }, { role: "assistant", content: null, tool_calls: toolCalls }, ...results] };
      return () => chatRequestToMessages(req as unknown as ChatRequest, { upstreamModel: "u" });
    });
    expect(ratio).toBeLessThan(3);
  }, 60_000);
});
