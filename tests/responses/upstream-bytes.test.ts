import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { agentBody } from "../../bench/lib/agent-bodies.ts";
import { startGatewayOnMock } from "../support/gateway.ts";
import { postWithApiKey } from "../support/keyed.ts";
import { PRICES } from "../support/prices.ts";

// A Responses turn is translated to Chat and serialised once; each Chat route sends that text with
// its own model and cap name. A route whose provider names its cap field (max_tokens_field) used to
// serialise the whole turn a second time.

describe("a Responses agent turn on Chat routes", () => {
  let rig: Awaited<ReturnType<typeof startGatewayOnMock>>;
  let key: string;
  const model = (id: string, provider: string) => ({ id, modalities: ["text"], endpoints: ["chat.completions"], pricing: PRICES, routes: [{ provider, model: "gpt-upstream-é" }] });
  // Non-ASCII, an astral character and U+2028 in the instructions, as a client may send them.
  const turn = (name: string) => {
    const body = JSON.parse(agentBody("responses", 20, name, false));
    body.instructions = `sé ✓ 😀 \u2028 ${body.instructions}`;
    return JSON.stringify(body);
  };

  beforeAll(async () => {
    rig = await startGatewayOnMock({
      models: [model("gpt-named-cap", "named-cap"), model("gpt-plain", "plain")],
      providers: (up) => [
        { id: "named-cap", kind: "openai", base_url: up.openaiURL, api_key: "sk-x", max_tokens_field: "max_tokens" },
        { id: "plain", kind: "openai", base_url: up.openaiURL, api_key: "sk-x" },
      ],
    });
    key = (await rig.gw.account(100)).key;
  });
  afterAll(() => rig.stop());

  /** The upstream's bytes for `body`, and how many characters JSON.stringify wrote while the gateway served it. */
  async function serve(body: string): Promise<{ raw: string; written: number }> {
    const stringify = JSON.stringify;
    let written = 0;
    JSON.stringify = ((...args: Parameters<typeof stringify>) => {
      const text = stringify(...args);
      written += text?.length ?? 0;
      return text;
    }) as typeof stringify;
    try {
      const res = await postWithApiKey(rig.gw, "/v1/responses", body, key);
      expect(res.status).toBe(200);
      await res.text();
    } finally {
      JSON.stringify = stringify;
    }
    return { raw: rig.up.requests.at(-1)!.rawBody, written };
  }

  it("sends the translation's JSON with the route's model, the cap under the provider's name at its end", async () => {
    const { raw } = await serve(turn("gpt-named-cap"));
    const sent = JSON.parse(raw);
    expect(sent.model).toBe("gpt-upstream-é");
    expect(Object.keys(sent).at(-1)).toBe("max_tokens");
    expect(sent.max_completion_tokens).toBeUndefined();
    expect(sent.messages[0].content.startsWith("sé ✓ 😀 \u2028 ")).toBe(true);
    expect(raw).toBe(JSON.stringify(sent));
  });

  it("serialises the turn once, on a route that renames the cap as on one that does not", async () => {
    for (const name of ["gpt-named-cap", "gpt-plain"]) {
      const { raw, written } = await serve(turn(name));
      // Once is the upstream body's length and the small JSON around it (the answer, the log row).
      expect(written).toBeLessThan(raw.length * 1.5);
    }
  });
});
