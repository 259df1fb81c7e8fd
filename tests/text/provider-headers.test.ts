import { afterEach, describe, expect, it } from "bun:test";
import type { ProviderConfig } from "../../src/config/schema.ts";
import { anthropicProvider, openaiProvider } from "../../src/upstreams/http-providers.ts";
import type { Provider } from "../../src/upstreams/types.ts";

// The headers a text call sends are built once per provider key and reused: each call must still
// send exactly its own set, in the same order, whatever calls came before it.

const realFetch = globalThis.fetch;
afterEach(() => {
  globalThis.fetch = realFetch;
});

/** The URL and header entries (in order) each text call handed to fetch. */
function sent(provider: Provider, calls: { apiKey?: string; stream?: boolean; client?: Record<string, string>; search?: string }[]) {
  const seen: { url: string; headers: string[][] }[] = [];
  globalThis.fetch = (async (url: string, init: RequestInit) => {
    seen.push({ url, headers: Object.entries(init.headers as Record<string, string>) });
    return new Response("{}");
  }) as typeof fetch;
  for (const c of calls) {
    void provider.text({
      dialect: provider.dialects[0]!,
      body: { model: "m", stream: c.stream },
      clientHeaders: new Headers(c.client),
      search: c.search ?? "",
      signal: new AbortController().signal,
      apiKey: c.apiKey,
    });
  }
  return seen;
}

describe("a text call's upstream headers", () => {
  it("are, on an OpenAI-kind provider, its configured headers, the key's bearer, the JSON type and the accept of a JSON or a stream call", () => {
    const config = { id: "o", kind: "openai", base_url: "http://up/v1/", api_keys: ["k1", "k2"], headers: { "x-org": "o", accept: "x/y" } } as unknown as ProviderConfig;
    const seen = sent(openaiProvider(config), [{ apiKey: "k2" }, { apiKey: "k2", stream: true }, { apiKey: "k1" }, { apiKey: "k2" }]);
    const set = (key: string, accept: string) => [["x-org", "o"], ["accept", accept], ["authorization", `Bearer ${key}`], ["content-type", "application/json"]];
    expect(seen.map((s) => s.url)).toEqual(Array(4).fill("http://up/v1/chat/completions"));
    expect(seen.map((s) => s.headers)).toEqual([set("k2", "application/json"), set("k2", "text/event-stream"), set("k1", "application/json"), set("k2", "application/json")]);
  });

  it("are, on an Anthropic provider, the client's version and beta when it sends them and the defaults when it does not", () => {
    const config = { id: "a", kind: "anthropic", base_url: "http://up", api_key: "ka", headers: { "x-team": "t" } } as unknown as ProviderConfig;
    const seen = sent(anthropicProvider(config), [
      {},
      { client: { "anthropic-version": "2024-01-01", "anthropic-beta": "b1" }, search: "?beta=true", stream: true },
      { client: { "anthropic-version": "2023-06-01" } },
      { client: { "anthropic-beta": "b2" } },
    ]);
    const set = (accept: string, version: string, beta?: string) => [
      ["x-team", "t"], ["content-type", "application/json"], ["accept", accept], ["anthropic-version", version], ["x-api-key", "ka"], ...(beta ? [["anthropic-beta", beta]] : []),
    ];
    expect(seen.map((s) => s.url)).toEqual(["http://up/v1/messages", "http://up/v1/messages?beta=true", "http://up/v1/messages", "http://up/v1/messages"]);
    expect(seen.map((s) => s.headers)).toEqual([
      set("application/json", "2023-06-01"),
      set("text/event-stream", "2024-01-01", "b1"),
      set("application/json", "2023-06-01"),
      set("application/json", "2023-06-01", "b2"),
    ]);
  });
});
