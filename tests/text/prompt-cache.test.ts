// Prompt caching for Chat and Responses clients on a Messages upstream (docs/translation.md,
// "Prompt caching"; docs/pricing.md, "Automatic prompt caching"): the client's own cache_control
// carried, ttl included; on a route with prompt_cache = "auto", breakpoints placed for clients that
// send none; the hold sized for the cache writes that follow; the cache read shown back.
import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import OpenAI from "openai";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import type { MockUpstream } from "../support/mock-upstream.ts";
import { expectError } from "../support/errors.ts";
import { PRICES } from "../support/prices.ts";
import { sseFrames } from "../support/sse.ts";
import { postJson } from "../support/http.ts";
import { replayAgent } from "../support/agent-replay.ts";
import type { JsonObject } from "../../src/wire/shapes.ts";

const model = (id: string, promptCache?: "auto" | "off") => ({
  id,
  modalities: ["text"],
  endpoints: ["messages", "chat.completions"],
  pricing: PRICES,
  routes: [{ provider: "anthropic", model: `${id}-up`, ...(promptCache ? { capabilities: { prompt_cache: promptCache } } : {}) }],
});
// A model per hold test: no test's calibration samples size another's hold.
const MODELS = ["claude-off", "claude-auto", "hold-off", "hold-auto", "agent-off", "agent-auto"];

let gw: TestGateway;
let up: MockUpstream;
let stop: () => Promise<void>;
let client: OpenAI;
let key: string;
beforeAll(async () => {
  ({ gw, up, stop } = await startGatewayOnMock({ models: MODELS.map((id) => model(id, id.endsWith("auto") ? "auto" : undefined)), limits: { default_rpm: 100_000 } }));
  key = (await gw.account(100)).key;
  client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
});
afterAll(() => stop());

type Params = OpenAI.ChatCompletionCreateParamsNonStreaming;
const sent = () => up.requests.at(-1)!.body as JsonObject & { tools?: JsonObject[]; system?: JsonObject[]; messages: { role: string; content: JsonObject[] }[] };
const EPH = { type: "ephemeral" };
const EPH_1H = { type: "ephemeral", ttl: "1h" };
const tool = (name: string, extra: object = {}) => ({ type: "function", function: { name, parameters: { type: "object", properties: {} } }, ...extra });

/** A chat completion as the openai SDK sends it; cache_control rides in fields its types do not name. */
function chat(modelId: string, body: object): Promise<OpenAI.ChatCompletion> {
  return client.chat.completions.create({ model: modelId, max_completion_tokens: 100, ...body } as unknown as Params);
}

/** Every path in the body sent upstream that carries cache_control, with its value. */
function pathsOf(body: unknown, path = ""): [string, unknown][] {
  if (body === null || typeof body !== "object") return [];
  return Object.entries(body).flatMap(([k, v]) => {
    const p = Array.isArray(body) ? `${path}[${k}]` : path ? `${path}.${k}` : k;
    return k === "cache_control" ? [[path, v] as [string, unknown]] : pathsOf(v, p);
  });
}
/** The breakpoints of the body sent upstream: path → cache_control. */
const breakpoints = (body: unknown): Record<string, unknown> => Object.fromEntries(pathsOf(body));

describe("a Chat client's cache_control reaches a Messages upstream", () => {
  it("on content parts, ttl included", async () => {
    await chat("claude-off", {
      messages: [
        { role: "system", content: [{ type: "text", text: "You are terse.", cache_control: EPH_1H }] },
        { role: "user", content: [{ type: "text", text: "Long document" , cache_control: EPH }, { type: "text", text: "Question?" }] },
      ],
    });
    expect(breakpoints(sent())).toEqual({ "system[0]": EPH_1H, "messages[0].content[0]": EPH });
  });

  it("on a tool, and inside a tool's function", async () => {
    await chat("claude-off", { messages: [{ role: "user", content: "hi" }], tools: [tool("a", { cache_control: EPH_1H }), { type: "function", function: { name: "b", cache_control: EPH } }] });
    expect(breakpoints(sent())).toEqual({ "tools[0]": EPH_1H, "tools[1]": EPH });
  });

  it("on a message with string content: its one text block", async () => {
    await chat("claude-off", { messages: [{ role: "system", content: "Rules.", cache_control: EPH }, { role: "user", content: "hi" }] });
    expect(breakpoints(sent())).toEqual({ "system[0]": EPH });
    expect(sent().system).toEqual([{ type: "text", text: "Rules.", cache_control: EPH }]);
  });

  it("on a blank part (never sent): a loss named in x-gateway-dropped", async () => {
    const res = await postJson(gw, "/v1/chat/completions", key, {
      model: "claude-off", max_completion_tokens: 10, messages: [{ role: "user", content: [{ type: "text", text: "hi" }, { type: "text", text: " ", cache_control: EPH }] }],
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-gateway-dropped")).toBe("messages[0].content[1].cache_control");
    expect(breakpoints(sent())).toEqual({});
  });

  it("more than 4 breakpoints are refused 400, naming the fifth, before any upstream call and free", async () => {
    const a = await gw.account(1);
    const before = up.requests.length;
    const parts = Array.from({ length: 5 }, (_, i) => ({ type: "text", text: `part ${i}`, cache_control: EPH }));
    const res = await postJson(gw, "/v1/chat/completions", a.key, { model: "claude-off", max_completion_tokens: 10, messages: [{ role: "user", content: parts }] });
    const err = await expectError(res, 400, "invalid_request");
    expect(err.message).toStartWith("messages[0].content[4].cache_control: a maximum of 4 blocks with cache_control");
    expect(up.requests.length).toBe(before);
    expect(gw.money(a.accountId).balance).toBe(1e9);
  });
});

describe("prompt_cache on a route", () => {
  const conversation = {
    messages: [
      { role: "system", content: "You are a coding agent." },
      { role: "user", content: "Fix the test." },
      { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "read", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "call_1", content: "file text" },
      { role: "user", content: "Go on." },
    ],
    tools: [tool("read"), tool("write")],
  };

  it("off (the default): no breakpoint is added", async () => {
    await chat("claude-off", conversation);
    expect(breakpoints(sent())).toEqual({});
  });

  it("auto: the last tool, the system prompt and the last two user turns, 5-minute (no ttl)", async () => {
    await chat("claude-auto", conversation);
    // messages: user, assistant (tool_use), user (tool_result + "Go on." merged into one turn).
    expect(breakpoints(sent())).toEqual({ "tools[1]": EPH, "system[0]": EPH, "messages[2].content[1]": EPH, "messages[0].content[0]": EPH });
  });

  it("auto: never more than 4, and none on a blank system prompt", async () => {
    await chat("claude-auto", { ...conversation, messages: [{ role: "system", content: "  " }, ...conversation.messages.slice(1)] });
    expect(breakpoints(sent())).toEqual({ "tools[1]": EPH, "messages[2].content[1]": EPH, "messages[0].content[0]": EPH });
  });

  it("auto: a client's own cache_control is the only one sent", async () => {
    await chat("claude-auto", { ...conversation, tools: [tool("read"), tool("write", { cache_control: EPH })] });
    expect(breakpoints(sent())).toEqual({ "tools[1]": EPH });
  });

  it("auto: a Responses client on the Messages route gets the breakpoints too", async () => {
    await client.responses.create({
      model: "claude-auto",
      instructions: "You are a coding agent.",
      input: "Fix the test.",
      tools: [{ type: "function", name: "read", parameters: { type: "object", properties: {} }, strict: false }],
    });
    expect(breakpoints(sent())).toEqual({ "tools[0]": EPH, "system[0]": EPH, "messages[0].content[0]": EPH });
  });
});

describe("the hold covers the cache writes the gateway asks for", () => {
  // 100 k tokens held (4 bytes each): 0.30 USD at the input price, 0.375 at the 5-minute write price.
  const big = { max_completion_tokens: 1, messages: [{ role: "user", content: "x".repeat(400_000) }] };
  async function statusOn(usd: number, modelId: string): Promise<number> {
    const a = await gw.account(usd);
    const res = await postJson(gw, "/v1/chat/completions", a.key, { model: modelId, ...big });
    if (res.status === 402) {
      await expectError(res, 402, "insufficient_balance");
      expect(gw.money(a.accountId).balance).toBe(usd * 1e9);
    } else await res.text();
    return res.status;
  }
  it("off: 0.35 USD covers the hold at the input price", async () => {
    expect(await statusOn(0.35, "hold-off")).toBe(200);
  });
  it("auto: the same 0.35 USD is refused 402 (held at the cache-write price)", async () => {
    expect(await statusOn(0.35, "hold-auto")).toBe(402);
  });
});

describe("the cache read is shown to a Chat client", () => {
  const usage = { input: 100, output: 10, cacheRead: 3000, cacheWrite: 200 };
  it("in a JSON answer: prompt_tokens_details.cached_tokens, prompt_tokens including it", async () => {
    up.script({ kind: "text", text: "ok", usage });
    const res = await chat("claude-auto", { messages: [{ role: "user", content: "hi" }] });
    expect(res.usage).toMatchObject({ prompt_tokens: 3300, prompt_tokens_details: { cached_tokens: 3000, cache_write_tokens: 200 } });
  });
  it("in a stream's usage chunk", async () => {
    up.script({ kind: "text", text: "ok", usage });
    const res = await postJson(gw, "/v1/chat/completions", key, {
      model: "claude-auto", max_completion_tokens: 100, stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "hi" }],
    });
    const last = sseFrames(await res.text()).findLast((f) => (f.data as JsonObject).usage);
    expect((last!.data as JsonObject).usage).toMatchObject({ prompt_tokens: 3300, prompt_tokens_details: { cached_tokens: 3000 } });
  });
});

describe("a 20-turn agent conversation on the cache-accounting mock", () => {
  // Measured (bench/prompt-cache.ts): $0.579 off, $0.116 auto; the last turn $0.046 and $0.008.
  it("costs less than a third with prompt_cache auto, and the last turn under a quarter", async () => {
    const off = await replayAgent(client, up, "agent-off");
    const auto = await replayAgent(client, up, "agent-auto");
    const sum = (b: { costUsd: number }[]) => b.reduce((n, t) => n + t.costUsd, 0);
    expect(off.every((t) => t.cachedTokens === 0)).toBe(true);
    expect(auto.slice(1).every((t) => t.cachedTokens > 0)).toBe(true);
    expect(sum(auto)).toBeLessThan(sum(off) / 3);
    expect(auto.at(-1)!.costUsd).toBeLessThan(off.at(-1)!.costUsd / 4);
  });
});
