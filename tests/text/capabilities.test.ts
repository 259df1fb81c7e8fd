// Provider and route `capabilities` (docs/translation.md, Capabilities): what a translated request
// may carry to an upstream beyond its plain dialect. Off (the default), the field is a named loss as
// before; on, it is sent. A route's capabilities override its provider's, field by field.
import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import type { MockUpstream } from "../support/mock-upstream.ts";
import type { JsonObject } from "../../src/wire/shapes.ts";
import { postJson } from "../support/http.ts";

const PRICES = { input: 3, output: 15 };
const model = (id: string, provider: string, capabilities?: Record<string, unknown>) => ({
  id,
  modalities: ["text"],
  endpoints: ["messages", "chat.completions"],
  pricing: PRICES,
  routes: [{ provider, model: `${id}-upstream`, ...(capabilities ? { capabilities } : {}) }],
});

let gw: TestGateway;
let up: MockUpstream;
let stop: () => Promise<void>;
let key: string;
beforeAll(async () => {
  ({ gw, up, stop } = await startGatewayOnMock({
    providers: (up) => [
      { id: "plain-openai", kind: "openai", base_url: up.openaiURL, api_key: "sk-a" },
      { id: "reasoning-openai", kind: "openai", base_url: up.openaiURL, api_key: "sk-b", capabilities: { reasoning: true, reasoning_content: true, top_k: true } },
      { id: "plain-anthropic", kind: "anthropic", base_url: up.url, api_key: "sk-c" },
      { id: "adaptive-anthropic", kind: "anthropic", base_url: up.url, api_key: "sk-d", capabilities: { thinking: "adaptive" } },
    ],
    models: [
      model("gpt-plain", "plain-openai"),
      model("gpt-reasoning", "reasoning-openai"),
      model("gpt-overridden", "reasoning-openai", { reasoning: false, top_k: false }),
      model("claude-plain", "plain-anthropic"),
      model("claude-adaptive", "adaptive-anthropic"),
      model("claude-limited", "plain-anthropic", { thinking: "none", structured_outputs: false, fixed_sampling: true }),
    ],
    limits: { default_rpm: 10_000 },
  }));
  key = (await gw.account(100)).key;
});
afterAll(() => stop());

const post = (path: string, body: JsonObject) => postJson(gw, path, key, body);
const sent = () => up.requests.at(-1)!.body as JsonObject;
const dropped = (res: Response) => (res.headers.get("x-gateway-dropped") ?? "").split(", ").filter(Boolean);

/** A Messages request to `model` with `extra` fields; answers 200 through the mock's default text. */
async function messages(model: string, extra: JsonObject = {}): Promise<Response> {
  const res = await post("/v1/messages", { model, max_tokens: 8000, messages: [{ role: "user", content: "hi" }], ...extra });
  expect(res.status).toBe(200);
  return res;
}

async function chat(model: string, extra: JsonObject = {}): Promise<Response> {
  const res = await post("/v1/chat/completions", { model, max_completion_tokens: 8000, messages: [{ role: "user", content: "hi" }], ...extra });
  expect(res.status).toBe(200);
  return res;
}

describe("a Messages client on a Chat upstream", () => {
  const thinking = { thinking: { type: "enabled", budget_tokens: 3000 } };

  it("sends thinking as reasoning_effort when the provider has reasoning", async () => {
    const res = await messages("gpt-reasoning", thinking);
    expect(sent().reasoning_effort).toBe("medium");
    expect(sent()).not.toHaveProperty("thinking");
    expect(dropped(res)).not.toContain("thinking");
  });

  it("drops thinking, and names it, when the provider has no reasoning", async () => {
    const res = await messages("gpt-plain", thinking);
    expect(sent()).not.toHaveProperty("reasoning_effort");
    expect(dropped(res)).toContain("thinking");
  });

  it("lets the route turn off what its provider has", async () => {
    const res = await messages("gpt-overridden", { ...thinking, top_k: 40 });
    expect(sent()).not.toHaveProperty("reasoning_effort");
    expect(sent()).not.toHaveProperty("top_k");
    expect(dropped(res)).toEqual(["top_k", "thinking"]);
  });

  it("sends top_k when the upstream takes it, and drops it otherwise", async () => {
    await messages("gpt-reasoning", { top_k: 40 });
    expect(sent().top_k).toBe(40);
    const res = await messages("gpt-plain", { top_k: 40 });
    expect(sent()).not.toHaveProperty("top_k");
    expect(dropped(res)).toEqual(["top_k"]);
  });

  it("replays earlier thinking as reasoning_content when the upstream takes it", async () => {
    const history = {
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: [{ type: "thinking", thinking: "Greet back.", signature: "" }, { type: "text", text: "Hello." }] },
        { role: "user", content: "again" },
      ],
    };
    await messages("gpt-reasoning", history);
    expect((sent().messages as JsonObject[])[1]).toEqual({ role: "assistant", content: "Hello.", reasoning_content: "Greet back." });
    const res = await messages("gpt-plain", history);
    expect((sent().messages as JsonObject[])[1]).toEqual({ role: "assistant", content: "Hello." });
    expect(dropped(res)).toEqual(["messages[1].content[0]"]);
  });
});

describe("a Chat client on a Messages upstream", () => {
  it("sends reasoning_effort as a thinking budget by default", async () => {
    await chat("claude-plain", { reasoning_effort: "high" });
    expect(sent().thinking).toEqual({ type: "enabled", budget_tokens: 4096 });
  });

  it("sends adaptive thinking and the effort when the provider says thinking = adaptive", async () => {
    await chat("claude-adaptive", { reasoning_effort: "high" });
    expect(sent().thinking).toEqual({ type: "adaptive" });
    expect(sent().output_config).toEqual({ effort: "high" });
  });

  it("drops reasoning_effort on a route with thinking = none", async () => {
    const res = await chat("claude-limited", { reasoning_effort: "high" });
    expect(sent()).not.toHaveProperty("thinking");
    expect(dropped(res)).toEqual(["reasoning_effort"]);
  });

  it("drops temperature and top_p on a route with fixed_sampling", async () => {
    const res = await chat("claude-limited", { temperature: 0.5, top_p: 0.9 });
    expect(sent()).not.toHaveProperty("temperature");
    expect(sent()).not.toHaveProperty("top_p");
    expect(dropped(res)).toEqual(["temperature", "top_p"]);
    await chat("claude-plain", { temperature: 0.5 });
    expect(sent().temperature).toBe(0.5);
  });

  it("refuses a json_schema response_format on a route without structured_outputs, before any upstream call", async () => {
    const before = up.requests.length;
    const format = { response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object" } } } };
    const res = await post("/v1/chat/completions", { model: "claude-limited", max_completion_tokens: 100, messages: [{ role: "user", content: "hi" }], ...format });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { type: string; message: string } };
    expect(body.error.message).toStartWith("response_format: ");
    expect(up.requests.length).toBe(before);
    await chat("claude-plain", format);
    expect(sent().output_config).toEqual({ format: { type: "json_schema", schema: { type: "object" } } });
  });

  it("reads the capabilities for a Responses client too (it rides on Chat)", async () => {
    const res = await post("/v1/responses", { model: "claude-adaptive", input: "hi", max_output_tokens: 8000, reasoning: { effort: "low" } });
    expect(res.status).toBe(200);
    expect(sent().thinking).toEqual({ type: "adaptive" });
    expect(sent().output_config).toEqual({ effort: "low" });
  });
});

describe("the x-gateway-dropped list", () => {
  it("is cut at 2,048 characters with how many it left out, so that an official SDK still reads the answer", async () => {
    const OpenAI = (await import("openai")).default;
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    // A thousand named user turns to a Messages upstream: each name is a documented loss.
    const messages = Array.from({ length: 1000 }, (_, i) => ({ role: "user" as const, content: `turn ${i}`, name: `speaker_${i}` }));
    const { data, response } = await client.chat.completions.create({ model: "claude-plain", max_completion_tokens: 100, messages }).withResponse();
    expect(data.choices[0]!.message.content).toBeString();
    const header = response.headers.get("x-gateway-dropped")!;
    expect(header.length).toBeLessThanOrEqual(2048);
    expect(header.startsWith("messages[0].name, messages[1].name")).toBe(true);
    const listed = header.split(", ").filter((p) => p.endsWith(".name")).length;
    expect(header.endsWith(`, and ${1000 - listed} more`)).toBe(true);
  });

  it("is written whole when it is short", async () => {
    const res = await chat("claude-plain", { messages: [{ role: "user", content: "hi", name: "ann" }] });
    expect(dropped(res)).toEqual(["messages[0].name"]);
  });
});
