import { afterAll, beforeAll, beforeEach, describe, expect, it } from "bun:test";
import { startRawUpstream, type RawUpstream } from "../support/raw-upstream.ts";
import { ask, SECRET_A, startHostileRig, type HostileRig } from "./rig.ts";
import { errorOf } from "../support/errors.ts";

// Issue 14 items 9, 12 and 13, text side: an answer that is no answer (an odd status, a vendor
// error sent with 200, null, HTML, garbage, the wrong framing) is the route's failure: 502
// upstream_unavailable or the next route, never relayed, never a 500, never charged.

let rig: HostileRig;
let elsewhere: RawUpstream;
beforeAll(async () => {
  rig = await startHostileRig();
  elsewhere = await startRawUpstream();
  elsewhere.handle = () => Response.json({ id: "msg_x", type: "message", role: "assistant", content: [{ type: "text", text: "followed" }], usage: { input_tokens: 1, output_tokens: 1 } });
});
beforeEach(() => {
  rig.reset();
  elsewhere.requests.length = 0;
});
afterAll(async () => {
  await rig.stop();
  await elsewhere.stop();
});

const balance = () => rig.gw.money(rig.acct.accountId).balance;

/** Answers every upstream call with this, asks `path`, and expects a 502 that charged nothing. */
async function expectFailure(answer: () => Response, path = "/v1/messages", body: unknown = ask("raw")): Promise<Response> {
  const before = balance();
  rig.raw.handle = answer;
  const res = await rig.post(path, body);
  expect(res.status).toBe(502);
  expect((await errorOf(res)).code).toBe("upstream_unavailable");
  await rig.expectUncharged(before);
  return res;
}

describe("an odd upstream status", () => {
  it("302 with a Location: 502, and the redirect is not followed with the provider's key", async () => {
    const res = await expectFailure(() => new Response(null, { status: 302, headers: { location: `${elsewhere.url}/v1/messages` } }));
    expect(elsewhere.requests).toHaveLength(0);
    expect(rig.eventsOf(res)[0]).toMatchObject({ event: "upstream_failed", upstream_status: 302 });
  });

  it("302 without a Location: 502", async () => {
    await expectFailure(() => new Response("moved", { status: 302 }));
  });

  it("307 on a chat route: 502, not followed either", async () => {
    await expectFailure(() => new Response(null, { status: 307, headers: { location: elsewhere.url } }), "/v1/chat/completions", ask("raw-openai"));
    expect(elsewhere.requests).toHaveLength(0);
  });

  it("418 with a vendor-shaped error body: 502, not the vendor's 418", async () => {
    await expectFailure(() => Response.json({ type: "error", error: { type: "teapot", message: "I'm a teapot" } }, { status: 418 }));
  });

  it("402 from a compatible server: 502 (the operator's account, not the client's balance)", async () => {
    await expectFailure(() => Response.json({ error: { message: "Insufficient credits", code: 402 } }, { status: 402 }), "/v1/chat/completions", ask("raw-openai"));
  });

  it("counts as the route's failure: the next route serves the request", async () => {
    rig.raw.handle = () => new Response(null, { status: 302, headers: { location: elsewhere.url } });
    rig.mock.script({ kind: "text", text: "from the mock" });
    const res = await rig.post("/v1/messages", ask("raw-then-mock"));
    expect(res.status).toBe(200);
    expect(JSON.stringify(await res.json())).toContain("from the mock");
  });

  it("a vendor's own 4xx is still passed through", async () => {
    rig.raw.handle = () => Response.json({ type: "error", error: { type: "invalid_request_error", message: "max_tokens: too large" } }, { status: 400 });
    const res = await rig.post("/v1/messages", ask("raw"));
    expect(res.status).toBe(400);
  });
});

describe("a 200 whose body is a vendor error", () => {
  it("in Anthropic's shape: 502, not relayed as 200, not charged", async () => {
    const res = await expectFailure(() => Response.json({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }));
    expect(rig.eventsOf(res)[0]).toMatchObject({ reason: "answer is a vendor error (overloaded_error) sent with HTTP 200" });
  });

  it("in OpenAI's shape, no choices: 502, not charged", async () => {
    await expectFailure(() => Response.json({ error: { message: "The server had an error", type: "server_error", code: null } }), "/v1/chat/completions", ask("raw-openai"));
  });

  it("served by the next route instead", async () => {
    rig.raw.handle = () => Response.json({ type: "error", error: { type: "api_error", message: "Internal" } });
    rig.mock.script({ kind: "text", text: "from the mock" });
    const res = await rig.post("/v1/messages", ask("raw-then-mock"));
    expect(res.status).toBe(200);
    expect(JSON.stringify(await res.json())).toContain("from the mock");
  });
});

describe("a non-streamed answer that is not one", () => {
  const cases: [string, () => Response][] = [
    ["null", () => new Response("null", { headers: { "content-type": "application/json" } })],
    ["an HTML page", () => new Response("<html><body>502 Bad Gateway</body></html>", { headers: { "content-type": "text/html" } })],
    ["garbage bytes", () => new Response(new Uint8Array([0xff, 0x00, 0x13, 0x37]))],
    ["a JSON array", () => Response.json([1, 2])],
    ["an empty object", () => Response.json({})],
    ["an empty 204", () => new Response(null, { status: 204 })],
    ["an SSE body", () => new Response('event: message_start\ndata: {"type":"message_start"}\n\n', { headers: { "content-type": "text/event-stream" } })],
  ];
  for (const [name, answer] of cases) {
    it(`${name}: 502 upstream_unavailable, not 500, not charged`, async () => {
      await expectFailure(answer);
    });
  }

  it("a bodiless 204 or 205 is named so in the operator's event, as the route's failure", async () => {
    for (const status of [204, 205]) {
      rig.reset();
      const res = await expectFailure(() => new Response(null, { status }));
      expect(rig.eventsOf(res).map((e) => e.reason)).toContain(`HTTP ${status} answer without a body`);
    }
  });

  it("an empty 200 is read as an answer that is not JSON, not as one without a body", async () => {
    const res = await expectFailure(() => new Response("", { headers: { "content-type": "application/json" } }));
    expect(rig.eventsOf(res).map((e) => e.reason)).toContain("answer is not a JSON object (0 bytes)");
  });

  it("cut mid-body: 502, not charged", async () => {
    rig.raw.handle = () => new Response('{"id":"msg_1","type":"message","content":[{"type":"te', { headers: { "content-type": "application/json", "content-length": "400" } });
    const before = balance();
    const res = await rig.post("/v1/messages", ask("raw"));
    expect(res.status).toBe(502);
    await rig.expectUncharged(before);
  });
});

describe("a streamed request answered without SSE", () => {
  it("with a JSON body: 502 before the first byte, not charged", async () => {
    await expectFailure(
      () => Response.json({ id: "msg_1", type: "message", role: "assistant", content: [{ type: "text", text: "hi" }], usage: { input_tokens: 1, output_tokens: 1 } }),
      "/v1/messages",
      ask("raw", { stream: true }),
    );
  });

  it("with a vendor error as JSON on a chat stream: 502, not charged", async () => {
    await expectFailure(() => Response.json({ error: { message: "bad", type: "server_error" } }), "/v1/chat/completions", ask("raw-openai", { stream: true }));
  });
});

describe("the provider's key", () => {
  it("goes to the configured base URL only", async () => {
    rig.raw.handle = () => new Response(null, { status: 301, headers: { location: elsewhere.url } });
    await rig.post("/v1/messages", ask("raw"));
    expect(rig.raw.requests[0]!.headers["x-api-key"]).toBe(SECRET_A);
    expect(elsewhere.requests).toHaveLength(0);
  });
});
