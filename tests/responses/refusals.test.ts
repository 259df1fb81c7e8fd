import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import type { TextRig } from "../support/text-rig.ts";
import { MESSAGES_ONLY, lastUpstream, postResponses, request, startResponsesRig } from "./support.ts";
import { errorOf, type WireError } from "../support/errors.ts";

// What /v1/responses refuses before any upstream call (400, the spec's four-field error object,
// nothing reserved or charged), what it serves with a hosted tool left out, and its unknown paths.

let rig: TextRig;
beforeAll(async () => {
  rig = await startResponsesRig();
});
afterAll(() => rig.stop());

const ONE_USD = 1_000_000_000;
const ask = (extra: Record<string, unknown> = {}) => ({ model: "gpt-native", input: "hi", ...extra });

/** Sends `body` from a fresh 1 USD account; the refusal must leave the balance and the upstream alone. */
async function refused(body: unknown): Promise<{ res: Response; error: WireError }> {
  const a = await rig.gw.account(1);
  const before = rig.up.requests.length;
  const res = await postResponses(rig, body, a.key);
  const error = await errorOf(res);
  expect(res.status).toBe(400);
  expect(Object.keys(error).sort()).toEqual(["code", "message", "request_id", "type"]);
  expect(error.request_id).toBe(res.headers.get("x-gateway-request-id")!);
  expect(error.request_id).toMatch(/^gw_/);
  expect(rig.up.requests.length).toBe(before);
  const m = rig.gw.money(a.accountId);
  expect(m.balance).toBe(ONE_USD);
  expect(m.reserved).toBe(0);
  expect(m.openHolds).toBe(0);
  return { res, error };
}

describe("state this gateway does not keep", () => {
  it("refuses previous_response_id with 400 invalid_request naming the field", async () => {
    const { error } = await refused(ask({ previous_response_id: "resp_123" }));
    expect(error.code).toBe("invalid_request");
    expect(error.message).toStartWith("previous_response_id:");
  });

  it("refuses an explicit store: true with 400 invalid_request naming the field", async () => {
    const { error } = await refused(ask({ store: true }));
    expect(error.code).toBe("invalid_request");
    expect(error.message).toStartWith("store:");
  });

  it("refuses a streamed request with a JSON 400 before any event is sent", async () => {
    const { res } = await refused(ask({ stream: true, previous_response_id: "resp_123" }));
    expect(res.headers.get("content-type")).toStartWith("application/json");
  });

  it("serves store: false and echoes store false", async () => {
    const res = await rig.openai().responses.create({ model: "gpt-native", input: "hi", store: false });
    expect(res.status).toBe("completed");
    expect((res as unknown as { store: boolean }).store).toBe(false);
  });

  it("serves a request without store and echoes store false, since nothing is kept", async () => {
    const res = await postResponses(rig, ask());
    expect(res.status).toBe(200);
    expect(((await res.json()) as { store: boolean }).store).toBe(false);
  });
});

describe("text only", () => {
  it("refuses an input_image part with 400 unsupported_content_type naming input[0].content[1]", async () => {
    const { error } = await refused(
      ask({
        input: [{ role: "user", content: [{ type: "input_text", text: "look" }, { type: "input_image", image_url: "data:image/png;base64,AAAA", detail: "auto" }] }],
      }),
    );
    expect(error.code).toBe("unsupported_content_type");
    expect(error.message).toContain("input[0].content[1]");
  });

  it("refuses an input_file part further down with its own position", async () => {
    const { error } = await refused(
      ask({
        input: [
          { role: "user", content: "hi" },
          { role: "assistant", content: [{ type: "output_text", text: "hello" }] },
          { role: "user", content: [{ type: "input_file", file_data: "data:application/pdf;base64,JVBERi0=", filename: "a.pdf" }] },
        ],
      }),
    );
    expect(error.code).toBe("unsupported_content_type");
    expect(error.message).toContain("input[2].content[0]");
  });

  it("refuses an image in a function_call_output with unsupported_content_type naming input[1].output[0]", async () => {
    const { error } = await refused(
      ask({
        input: [
          { type: "function_call", call_id: "call_1", name: "screenshot", arguments: "{}" },
          { type: "function_call_output", call_id: "call_1", output: [{ type: "input_image", image_url: "data:image/png;base64,AAAA" }] },
        ],
      }),
    );
    expect(error.code).toBe("unsupported_content_type");
    expect(error.message).toContain("input[1].output[0]");
  });
});

describe("hosted tools", () => {
  const weather = { type: "function", name: "get_weather", parameters: { type: "object", properties: {} }, strict: false };

  it("refuses a tool_choice that forces the hosted web_search tool", async () => {
    const { error } = await refused(ask({ tools: [weather, { type: "web_search" }], tool_choice: { type: "web_search" } }));
    expect(error.code).toBe("invalid_request");
    expect(error.message).toStartWith("tool_choice:");
    expect(error.message).toContain("web_search");
  });

  it("refuses an allowed_tools tool_choice that requires a hosted tool only", async () => {
    const { error } = await refused(
      ask({ tools: [weather, { type: "web_search" }], tool_choice: { type: "allowed_tools", mode: "required", tools: [{ type: "web_search" }] } }),
    );
    expect(error.code).toBe("invalid_request");
    expect(error.message).toStartWith("tool_choice:");
  });

  it("refuses tool_choice required when the only tool offered is hosted", async () => {
    const { error } = await refused(ask({ tools: [{ type: "web_search" }], tool_choice: "required" }));
    expect(error.code).toBe("invalid_request");
    expect(error.message).toStartWith("tool_choice:");
  });

  for (const choice of ["auto", undefined]) {
    it(`leaves an offered web_search out of the upstream call and names it in x-gateway-dropped-tools (tool_choice ${choice ?? "absent"})`, async () => {
      const body = ask({ tools: [weather, { type: "web_search", external_web_access: false }], ...(choice ? { tool_choice: choice } : {}) });
      const { data, response } = await rig.openai().responses.create(body as never).withResponse();
      expect(data.status).toBe("completed");
      expect(response.headers.get("x-gateway-dropped-tools")).toBe("web_search");
      expect((lastUpstream(rig).tools as { function: { name: string } }[]).map((t) => t.function.name)).toEqual(["get_weather"]);
      expect(JSON.stringify(lastUpstream(rig))).not.toContain("web_search");
    });
  }

  it("sends no tool_choice upstream when web_search was the only tool offered", async () => {
    const res = await postResponses(rig, ask({ tools: [{ type: "web_search" }], tool_choice: "auto" }));
    expect(res.status).toBe(200);
    expect(res.headers.get("x-gateway-dropped-tools")).toBe("web_search");
    expect(lastUpstream(rig)).not.toHaveProperty("tools");
    expect(lastUpstream(rig)).not.toHaveProperty("tool_choice");
  });

  it("sends no x-gateway-dropped-tools header when nothing was dropped", async () => {
    const res = await postResponses(rig, ask({ tools: [weather] }));
    expect(res.status).toBe(200);
    expect(res.headers.get("x-gateway-dropped-tools")).toBeNull();
  });
});

describe("models", () => {
  it("refuses a model not sold on chat.completions with 400 model_protocol_mismatch", async () => {
    const { error } = await refused(ask({ model: MESSAGES_ONLY }));
    expect(error.code).toBe("model_protocol_mismatch");
    expect(error.message).toContain(MESSAGES_ONLY);
  });

  it("serves a model sold on chat.completions under its alias and answers with the canonical id", async () => {
    const res = await rig.openai().responses.create({ model: "claude-alias", input: "hi" });
    expect(res.model).toBe("claude-native");
  });
});

describe("paths and methods", () => {
  it("answers GET /v1/responses with 405 method_not_allowed and allow: POST", async () => {
    const res = await request(rig, "GET", "/v1/responses");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
    const error = await errorOf(res);
    expect(error.code).toBe("method_not_allowed");
    expect(error.request_id).toBe(res.headers.get("x-gateway-request-id")!);
  });

  for (const method of ["GET", "DELETE"]) {
    it(`answers ${method} /v1/responses/resp_123 with 404 endpoint_not_found, since no response is stored`, async () => {
      const res = await request(rig, method, "/v1/responses/resp_123");
      expect(res.status).toBe(404);
      const error = await errorOf(res);
      expect(Object.keys(error).sort()).toEqual(["code", "message", "request_id", "type"]);
      expect(error).toMatchObject({ type: "endpoint_not_found", code: "endpoint_not_found" });
      expect(error.message).toContain("POST /v1/responses");
      expect(error.request_id).toBe(res.headers.get("x-gateway-request-id")!);
    });
  }
});
