import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { rawRequest } from "../support/raw-http.ts";
import { startTextRig, type TextRig } from "../support/text-rig.ts";

// What a plain JSON answer's head says, line by line: the relay builds the answer and the pipeline
// adds the request id's and the rate limit's headers to it; neither may add, repeat or reorder one.

let rig: TextRig;
beforeAll(async () => {
  rig = await startTextRig();
});
afterAll(() => rig.stop());

async function head(target: string, body: unknown) {
  const port = Number(new URL(rig.gw.url).port);
  const res = await rawRequest(port, {
    method: "POST",
    target,
    headers: [["authorization", `Bearer ${rig.acct.key}`], ["content-type", "application/json"]],
    body: new TextEncoder().encode(JSON.stringify(body)),
  });
  return { res, names: res.names.filter((n) => n.toLowerCase() !== "date") };
}

const ANSWER_HEADERS = [
  "Content-Type",
  "x-gateway-request-id",
  "request-id",
  "x-request-id",
  "x-ratelimit-limit-requests",
  "x-ratelimit-remaining-requests",
  "x-ratelimit-reset-requests",
  "Content-Length",
];

describe("a plain JSON answer's header lines", () => {
  for (const [dialect, target, model] of [["chat", "/v1/chat/completions", "gpt-native"], ["messages", "/v1/messages", "claude-native"]] as const) {
    it(`are the content type, the request id's three and the rate limit's three, once each and in that order (${dialect})`, async () => {
      const { res, names } = await head(target, { model, max_tokens: 10, messages: [{ role: "user", content: "hi" }] });
      expect(res.status).toBe(200);
      expect(names).toEqual(ANSWER_HEADERS);
      expect(res.headers["content-type"]).toBe("application/json");
      const id = res.headers["x-gateway-request-id"]!;
      expect(id).toMatch(/^gw_/);
      expect([res.headers["request-id"], res.headers["x-request-id"]]).toEqual([id, id]);
    });

    it(`are each answer's own: a later answer repeats none of an earlier one's (${dialect})`, async () => {
      const body = { model, max_tokens: 10, messages: [{ role: "user", content: "hi" }] };
      const first = await head(target, body);
      const second = await head(target, body);
      expect(second.names).toEqual(ANSWER_HEADERS);
      const [a, b] = [first.res.headers["x-request-id"], second.res.headers["x-request-id"]];
      expect(b).not.toBe(a);
      expect([second.res.headers["x-gateway-request-id"], second.res.headers["request-id"]]).toEqual([b, b]);
    });
  }
});
