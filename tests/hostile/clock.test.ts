import { describe, expect, it } from "bun:test";
import {
  AttemptClock,
  DEFAULT_FIRST_BYTE_MS,
  DEFAULT_IDLE_MS,
  DEFAULT_STREAM_FIRST_BYTE_MS,
  DEFAULT_TOTAL_MS,
  bodyReader,
  limitsOf,
  timedResponse,
} from "../../src/relay/timeouts.ts";
import { SseSizeGuard } from "../../src/wire/sse.ts";
import { parseConfig } from "../../src/config/load.ts";

// The clock of one upstream attempt (issue 14 item 4), on its own.

const limits = { firstByteMs: 100, idleMs: 60, totalMs: 400 };
const bodyOf = (parts: string[], then: "close" | "hang" = "close") => {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      if (i < parts.length) return c.enqueue(new TextEncoder().encode(parts[i++]!));
      if (then === "close") return c.close();
      await new Promise(() => {});
    },
  });
};

describe("the defaults", () => {
  it("wait 60 s for a stream's headers, 10 min for a non-streamed answer's, 2 min of silence, 15 min in all", () => {
    const p = { id: "p", kind: "openai" as const, base_url: "http://x" };
    expect(limitsOf(p, true)).toEqual({ firstByteMs: DEFAULT_STREAM_FIRST_BYTE_MS, idleMs: DEFAULT_IDLE_MS, totalMs: DEFAULT_TOTAL_MS });
    expect(limitsOf(p, false).firstByteMs).toBe(DEFAULT_FIRST_BYTE_MS);
    expect([DEFAULT_STREAM_FIRST_BYTE_MS, DEFAULT_FIRST_BYTE_MS, DEFAULT_IDLE_MS, DEFAULT_TOTAL_MS]).toEqual([60_000, 600_000, 120_000, 900_000]);
  });

  it("give way to the provider's timeout_ms, idle_timeout_ms and total_timeout_ms", () => {
    const cfg = parseConfig(
      {
        providers: [{ id: "p", kind: "openai", base_url: "http://x", timeout_ms: 5, idle_timeout_ms: 6, total_timeout_ms: 7 }],
        models: [{ id: "m", modalities: ["text"], endpoints: ["chat.completions"], pricing: { input: 1, output: 1 }, routes: [{ provider: "p", model: "m" }] }],
      },
      "test",
    );
    expect(limitsOf(cfg.providers[0]!, true)).toEqual({ firstByteMs: 5, idleMs: 6, totalMs: 7 });
  });

  it("are refused in the config when not a positive integer, naming the field", () => {
    expect(() =>
      parseConfig({ providers: [{ id: "p", kind: "openai", base_url: "http://x", idle_timeout_ms: 0 }] }, "test"),
    ).toThrow("providers[0].idle_timeout_ms");
  });
});

describe("AttemptClock", () => {
  it("aborts with the first-byte reason when no headers come", async () => {
    const abort = new AbortController();
    new AttemptClock(abort, limits);
    await Bun.sleep(150);
    expect(String(abort.signal.reason)).toContain("no answer within 100 ms");
  });

  it("does not count a pause in which nobody reads as silence (a slow client), only the total", async () => {
    const abort = new AbortController();
    const clock = new AttemptClock(abort, limits);
    clock.gotHeaders();
    await Bun.sleep(200);
    expect(abort.signal.aborted).toBe(false);
    await Bun.sleep(300);
    expect(String(abort.signal.reason)).toContain("exceeded its total time of 400 ms");
  });

  it("aborts a read that waits longer than the idle limit", async () => {
    const abort = new AbortController();
    const clock = new AttemptClock(abort, limits);
    clock.gotHeaders();
    await Bun.sleep(100);
    clock.readStarted();
    await Bun.sleep(150);
    expect(String(abort.signal.reason)).toContain("no byte from the upstream for 60 ms");
  });

  it("times a read that starts with headers arriving after the first look, to the idle limit", async () => {
    const abort = new AbortController();
    const clock = new AttemptClock(abort, { firstByteMs: 1_000, idleMs: 60, totalMs: 5_000 });
    await Bun.sleep(100);
    clock.wholeRead(new Response("{}"));
    await Bun.sleep(40);
    expect(abort.signal.aborted).toBe(false);
    await Bun.sleep(300);
    expect(String(abort.signal.reason)).toContain("no byte from the upstream for 60 ms");
  });

  it("arms one timer for a plain answer, none more when its headers arrive", () => {
    const real = globalThis.setTimeout;
    let armed = 0;
    globalThis.setTimeout = ((...a: Parameters<typeof setTimeout>) => (armed++, real(...a))) as typeof setTimeout;
    try {
      const clock = new AttemptClock(new AbortController(), limitsOf({} as never, false));
      clock.wholeRead(new Response("{}"));
      clock.stop();
    } finally {
      globalThis.setTimeout = real;
    }
    expect(armed).toBe(1);
  });

  it("never fires once stopped", async () => {
    const abort = new AbortController();
    const clock = new AttemptClock(abort, limits);
    clock.stop();
    await Bun.sleep(450);
    expect(abort.signal.aborted).toBe(false);
  });
});

describe("timedResponse", () => {
  it("stops the clock when the body has been read to its end", async () => {
    const abort = new AbortController();
    const res = timedResponse(new Response(bodyOf(["a", "b"])), new AttemptClock(abort, limits), null);
    expect(await res.text()).toBe("ab");
    await Bun.sleep(450);
    expect(abort.signal.aborted).toBe(false);
  });

  it("stops the clock when the reader cancels the body", async () => {
    const abort = new AbortController();
    const res = timedResponse(new Response(bodyOf(["a"], "hang")), new AttemptClock(abort, limits), null);
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel();
    await Bun.sleep(450);
    expect(abort.signal.aborted).toBe(false);
  });

  it("keeps the status and headers of the upstream's answer", () => {
    const res = timedResponse(
      new Response("x", { status: 201, headers: { "x-request-id": "r1" } }),
      new AttemptClock(new AbortController(), limits),
      null,
    );
    expect([res.status, res.headers.get("x-request-id")]).toEqual([201, "r1"]);
  });
});

describe("bodyReader (how the relay reads a timed answer, without the wrapping stream)", () => {
  const text = async (r: ReturnType<typeof bodyReader>) => {
    let out = "";
    for (let c = await r.read(); !c.done; c = await r.read()) out += new TextDecoder().decode(c.value);
    return out;
  };

  it("reads the upstream's bytes as they came", async () => {
    const res = timedResponse(new Response(bodyOf(["a", "b"])), new AttemptClock(new AbortController(), limits), null);
    expect(await text(bodyReader(res))).toBe("ab");
  });

  it("aborts a read that waits longer than the idle limit", async () => {
    const abort = new AbortController();
    const res = timedResponse(new Response(bodyOf(["a"], "hang")), new AttemptClock(abort, limits), null);
    const reader = bodyReader(res);
    await reader.read();
    void reader.read().catch(() => {});
    await Bun.sleep(150);
    expect(String(abort.signal.reason)).toContain("no byte from the upstream for 60 ms");
  });

  it("stops the clock at the end of the body", async () => {
    const abort = new AbortController();
    const res = timedResponse(new Response(bodyOf(["a"])), new AttemptClock(abort, limits), null);
    await text(bodyReader(res));
    await Bun.sleep(450);
    expect(abort.signal.aborted).toBe(false);
  });

  it("stops the clock when the relay cancels it", async () => {
    const abort = new AbortController();
    const res = timedResponse(new Response(bodyOf(["a"], "hang")), new AttemptClock(abort, limits), null);
    const reader = bodyReader(res);
    await reader.read();
    await reader.cancel();
    await Bun.sleep(450);
    expect(abort.signal.aborted).toBe(false);
  });

  it("fails a read past the SSE size guard's limit", async () => {
    const res = timedResponse(new Response(bodyOf(["data: 0123456789"])), new AttemptClock(new AbortController(), limits), new SseSizeGuard(8));
    await expect(bodyReader(res).read()).rejects.toThrow("without ending it");
  });

  it("is the body's own reader for an answer that was not timed", async () => {
    expect(await text(bodyReader(new Response("plain")))).toBe("plain");
  });
});
