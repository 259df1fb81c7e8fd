import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startGatewayOnMock, testConfig, type TestGateway } from "../support/gateway.ts";
import { expectError } from "../support/errors.ts";
import { keyHeaders } from "../support/http.ts";
import type { MockUpstream } from "../support/mock-upstream.ts";
import { textModel } from "../support/prices.ts";

// Alias patterns (docs/operations.md#alias-patterns): Claude Code asks for dated ids and a background
// model; a trailing * in an alias takes them all, answered as the canonical model. Exact names win.

const SONNET = { ...textModel("claude-sonnet-4-5", "anthropic"), aliases: ["claude-sonnet-latest", "claude-sonnet-4-5-*"] };
const HAIKU = { ...textModel("claude-haiku-4-5", "anthropic"), aliases: ["claude-haiku-4-5-*"] };
// An exact id under Sonnet's pattern's sibling: claude-sonnet-4-5-* may not match it, so it sits beside it.
const PINNED = textModel("claude-sonnet-4-5@pinned", "anthropic");

let up: MockUpstream;
let gw: TestGateway;
let stop: () => Promise<void>;
let key: string;
beforeAll(async () => {
  ({ up, gw, stop } = await startGatewayOnMock({ models: [SONNET, HAIKU, PINNED] }));
  key = (await gw.account(5)).key;
});
afterAll(() => stop());

const client = () => new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0 });
const ask = (model: string) => client().messages.create({ model, max_tokens: 50, messages: [{ role: "user", content: "hi" }] });
const lastUpstreamModel = () => (up.requests.at(-1)!.body as { model: string }).model;

describe("a requested id matching an alias pattern", () => {
  it("serves a dated id as the canonical model through /v1/messages", async () => {
    const msg = await ask("claude-sonnet-4-5-20250929");
    expect(msg.model).toBe("claude-sonnet-4-5");
    expect(lastUpstreamModel()).toBe("claude-sonnet-4-5-upstream");
  });

  it("serves Claude Code's background model id through its own model's pattern", async () => {
    const msg = await ask("claude-haiku-4-5-20251001");
    expect(msg.model).toBe("claude-haiku-4-5");
    expect(lastUpstreamModel()).toBe("claude-haiku-4-5-upstream");
  });

  it("answers /v1/models/{id} for a matching id with the canonical model", async () => {
    const m = await client().models.retrieve("claude-sonnet-4-5-20250929");
    expect(m.id).toBe("claude-sonnet-4-5");
  });

  it("passes a key whose model allow-list names the canonical model", async () => {
    const { key: limited } = await gw.account(1, { models: ["claude-haiku-4-5"] });
    const msg = await new Anthropic({ baseURL: gw.url, apiKey: limited, maxRetries: 0 }).messages.create({
      model: "claude-haiku-4-5-20251001",
      max_tokens: 20,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(msg.model).toBe("claude-haiku-4-5");
    const refused = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: { ...keyHeaders(limited), "content-type": "application/json" },
      body: JSON.stringify({ model: "claude-sonnet-4-5-20250929", max_tokens: 20, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(refused.status).toBe(403);
  });
});

describe("exact names", () => {
  it("win over a pattern: an exact alias and an exact id are their own model", async () => {
    expect((await ask("claude-sonnet-latest")).model).toBe("claude-sonnet-4-5");
    expect((await ask("claude-sonnet-4-5@pinned")).model).toBe("claude-sonnet-4-5@pinned");
    expect(lastUpstreamModel()).toBe("claude-sonnet-4-5@pinned-upstream");
  });

  it("leave an unknown id a 404 model_not_found naming the requested model", async () => {
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: { ...keyHeaders(key), "content-type": "application/json" },
      body: JSON.stringify({ model: "claude-opus-4-1-20250805", max_tokens: 20, messages: [{ role: "user", content: "hi" }] }),
    });
    const err = await expectError(res, 404, "model_not_found");
    expect(err.message).toContain("claude-opus-4-1-20250805");
  });
});

describe("the config", () => {
  const load = (models: object[]) => () => testConfig({ providers: [{ id: "anthropic", kind: "anthropic", base_url: "http://127.0.0.1:9" }], models });

  it("refuses two models' patterns that overlap, in one line", () => {
    const overlap = { ...textModel("sonnet-fast", "anthropic"), aliases: ["claude-sonnet-4-5-fast-*"] };
    expect(load([SONNET, overlap])).toThrow(/^test config: models\[1\]\.aliases\[0\]: 'claude-sonnet-4-5-fast-\*' overlaps 'claude-sonnet-4-5-\*' of models\[0\]$/);
  });

  it("refuses a * anywhere but at the end of an alias, rather than take it as a literal name", () => {
    const inner = { ...textModel("haiku", "anthropic"), aliases: ["claude-*-latest"] };
    expect(load([SONNET, inner])).toThrow(/^test config: models\[1\]\.aliases\[0\]: a pattern is a prefix followed by one trailing \* \(got 'claude-\*-latest'\)$/);
  });

  it("refuses a pattern that matches another model's exact id", () => {
    const under = textModel("claude-sonnet-4-5-fast", "anthropic");
    expect(load([SONNET, under])).toThrow(/^test config: models\[0\]\.aliases\[1\]: 'claude-sonnet-4-5-\*' matches 'claude-sonnet-4-5-fast' of models\[1\]$/);
  });
});
