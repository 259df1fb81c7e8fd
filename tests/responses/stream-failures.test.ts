import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { APIError } from "openai";
import type { JsonObject } from "../../src/wire/shapes.ts";
import type { TextRig } from "../support/text-rig.ts";
import { sseFrames } from "../support/sse.ts";
import { postResponses, startResponsesRig } from "./support.ts";

// After the first byte the status line is sent: a broken upstream can only end the stream with
// the dialect's own failure (an `error` event, then response.failed), and the request is free.

let rig: TextRig;
beforeAll(async () => {
  rig = await startResponsesRig();
});
afterAll(() => rig.stop());

const ONE_USD = 1_000_000_000;
const brokenAfter = (afterEvents: number, mode: "drop" | "error_event") =>
  ({ kind: "fail_mid_stream", afterEvents, mode, content: { kind: "text", text: "a b c d e f", delayMs: 5 } }) as const;

for (const [model, label] of [["gpt-native", "an OpenAI"], ["claude-native", "an Anthropic"]] as const) {
  describe(`${label} upstream breaking mid-stream`, () => {
    for (const mode of ["drop", "error_event"] as const) {
      const how = mode === "drop" ? "drops the connection" : "sends its error event";
      it(`ends with an error event then response.failed, and no response.completed, when the upstream ${how}`, async () => {
        rig.up.script(brokenAfter(4, mode));
        const res = await postResponses(rig, { model, input: "hi", stream: true });
        expect(res.status).toBe(200);
        const frames = sseFrames(await res.text());
        const types = frames.map((f) => f.event);
        expect(types[0]).toBe("response.created");
        expect(types).toContain("response.output_text.delta");
        expect(types.slice(-2)).toEqual(["error", "response.failed"]);
        expect(types).not.toContain("response.completed");
        const failed = frames.at(-1)!.data.response as JsonObject;
        expect(failed.status).toBe("failed");
        expect(failed.error).toEqual({ code: expect.any(String), message: expect.any(String) });
      });

      it(`charges nothing and holds nothing when the upstream ${how}`, async () => {
        const a = await rig.gw.account(1);
        rig.up.script(brokenAfter(4, mode));
        const res = await postResponses(rig, { model, input: "hi", stream: true }, a.key);
        await res.text();
        const m = rig.gw.money(a.accountId);
        expect(m.balance).toBe(ONE_USD);
        expect(m.reserved).toBe(0);
        expect(m.openHolds).toBe(0);
      });
    }
  });
}

describe("the SDK on a broken stream", () => {
  it("makes responses.stream().finalResponse() reject with an APIError", async () => {
    rig.up.script(brokenAfter(4, "drop"));
    const attempt = rig.openai().responses.stream({ model: "gpt-native", input: "hi" }).finalResponse();
    await expect(attempt).rejects.toBeInstanceOf(APIError);
  });
});
