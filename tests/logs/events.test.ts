import { describe, expect, it } from "bun:test";
import { DrizzleQueryError } from "drizzle-orm/errors";
import { EventLog } from "../../src/core/events.ts";

// The operator's event log: one JSON line per event, repeats of a kind rate-limited, stacks once.

function capture(opts: { windowMs?: number; perWindow?: number; now?: () => number } = {}) {
  const lines: Record<string, unknown>[] = [];
  const log = new EventLog((line) => lines.push(JSON.parse(line) as Record<string, unknown>), opts);
  return { log, lines };
}

const failure = (i = 0) => ({ requestId: `gw_${i}`, route: "anthropic/claude-x", provider: "anthropic", upstreamStatus: 503, reason: "HTTP 503 overloaded_error" });

describe("EventLog", () => {
  it("writes one JSON line per upstream failure with request id, route, provider, upstream status and reason", () => {
    const { log, lines } = capture();
    log.upstreamFailed(failure(1));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: "warn",
      event: "upstream_failed",
      request_id: "gw_1",
      route: "anthropic/claude-x",
      provider: "anthropic",
      upstream_status: 503,
      reason: "HTTP 503 overloaded_error",
    });
    expect(typeof lines[0]!.time).toBe("string");
  });

  it("writes at most perWindow lines of one kind per window, then one line counting the rest", () => {
    let t = 0;
    const { log, lines } = capture({ windowMs: 10_000, perWindow: 5, now: () => t });
    for (let i = 0; i < 500; i++) log.upstreamFailed(failure(i));
    expect(lines).toHaveLength(5);
    t = 10_000;
    log.upstreamFailed(failure(500));
    expect(lines).toHaveLength(7);
    expect(lines[5]).toMatchObject({ event: "events_suppressed", kind: "upstream_failed:anthropic/claude-x", suppressed: 495 });
    expect(lines[5]!.msg).toContain("495 more like this suppressed");
    expect(lines[6]).toMatchObject({ event: "upstream_failed", request_id: "gw_500" });
  });

  it("writes the count of suppressed lines when the window closes, even if the kind never comes back", async () => {
    const { log, lines } = capture({ windowMs: 40, perWindow: 1 });
    log.upstreamFailed(failure(1));
    log.upstreamFailed(failure(2));
    log.upstreamFailed(failure(3));
    expect(lines).toHaveLength(1);
    await Bun.sleep(80);
    expect(lines.map((l) => [l.event, l.suppressed])).toEqual([["upstream_failed", undefined], ["events_suppressed", 2]]);
  });

  it("limits each kind on its own: one flooding route does not hide another", () => {
    const { log, lines } = capture({ perWindow: 2 });
    for (let i = 0; i < 10; i++) log.upstreamFailed(failure(i));
    log.upstreamFailed({ ...failure(99), route: "openai/gpt-x", provider: "openai" });
    expect(lines.filter((l) => l.route === "openai/gpt-x")).toHaveLength(1);
  });

  it("writes the stack of an unexpected error once per distinct message, not once per request", () => {
    const { log, lines } = capture({ perWindow: 100 });
    for (let i = 0; i < 10; i++) log.gatewayError({ requestId: `gw_${i}`, status: 500, code: "internal_error", cause: new TypeError("x is not a function") });
    log.gatewayError({ requestId: "gw_other", status: 500, code: "internal_error", cause: new RangeError("bad cost -1") });
    expect(lines).toHaveLength(11);
    expect(lines.filter((l) => l.stack)).toHaveLength(2);
    expect(lines[0]).toMatchObject({ level: "error", event: "gateway_error", status: 500, code: "internal_error", reason: "x is not a function" });
    expect(String(lines[0]!.stack)).toContain("TypeError: x is not a function");
    expect(lines[1]!.stack).toBeUndefined();
  });

  it("gives a SQLite failure its code as the reason, on one line", () => {
    const { log, lines } = capture();
    const full = Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });
    log.gatewayError({ requestId: "gw_1", status: 503, code: "database_unavailable", cause: full });
    expect(lines[0]).toMatchObject({ level: "warn", code: "database_unavailable", reason: "SQLITE_FULL: database or disk is full" });
    expect(lines[0]!.stack).toBeUndefined();
  });

  it("writes a failed query's statement and its database's reason, never the query's parameters", () => {
    const { log, lines } = capture();
    const refused = Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code: "22021" });
    const params = ["ada\u0000@example.com", "$argon2id$v=19$m=65536,t=2,p=1$c2FsdA$aGFzaA", "gk_sk_0123456789abcdef"];
    const failed = new DrizzleQueryError('select "id" from "accounts" where "accounts"."email" = $1', params, refused);
    log.gatewayError({ requestId: "gw_1", status: 500, code: "internal_error", cause: failed });
    expect(lines[0]).toMatchObject({ code: "internal_error", reason: 'Failed query (22021: invalid byte sequence for encoding "UTF8": 0x00): select "id" from "accounts" where "accounts"."email" = $1' });
    const line = JSON.stringify(lines[0]);
    expect(String(lines[0]!.stack)).toContain("Failed query");
    for (const p of [...params, "ada", "argon2id", "gk_sk_", "params"]) expect(line).not.toContain(p);
  });

  it("names the provider's config entry when the provider rejects the gateway's key", () => {
    const { log, lines } = capture();
    log.providerKeyRejected({ ...failure(1), upstreamStatus: 401, reason: "HTTP 401 authentication_error", providerIndex: 2 });
    expect(lines[0]).toMatchObject({ level: "error", event: "provider_key_rejected", provider: "anthropic", upstream_status: 401 });
    expect(lines[0]!.msg).toBe("the provider rejected the gateway's key for provider anthropic: check providers[2].api_key");
  });
});
