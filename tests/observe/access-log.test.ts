import { afterAll, describe, expect, it, setSystemTime } from "bun:test";
import { join } from "node:path";
import { gatewayJson, startServe, tempInstallation } from "../support/cli.ts";
import { AccessLog } from "../../src/observe/access-log.ts";
import { nanoToUsd } from "../../src/core/money.ts";
import type { LogRow } from "../../src/store/request-log/contract.ts";

// Issue 13: an access log, one JSON line per request on stdout, never content, never a key;
// off with [server] access_log = false.

const folders: { remove(): void }[] = [];
afterAll(() => folders.forEach((f) => f.remove()));

async function served(config: string) {
  const f = tempInstallation(config);
  folders.push(f);
  const s = startServe(["--config", f.config, "--port", "0", "--db", join(f.dir, "gateway.db")]);
  const url = await s.url();
  const key = (await s.until(/gk_sk_[A-Za-z0-9]+/))[0];
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "demo", max_tokens: 20, messages: [{ role: "user", content: "a secret prompt" }] }),
  });
  const requestId = res.headers.get("x-gateway-request-id")!;
  const body = await res.text();
  return { s, key, requestId, body };
}

describe("the access log", () => {
  it("writes one JSON line per request on stdout with id, route, key prefix, status, tokens, cost and latency", async () => {
    const { s, key, requestId, body } = await served('[server]\nhost = "127.0.0.1"\n');
    const line = (await s.until(new RegExp(`\\{[^\\n]*"request_id":"${requestId}"[^\\n]*\\}`)))[0];
    s.kill();
    await s.exited();
    const entry = JSON.parse(line);
    expect(entry).toMatchObject({ request_id: requestId, method: "POST", path: "/v1/chat/completions", status: 200, model: "demo-text-1", provider: "demo", route: "demo/demo-text", key_prefix: key.slice(0, 12) });
    expect(entry.latency_ms).toBeGreaterThanOrEqual(0);
    expect(entry.output_tokens).toBeGreaterThan(0);
    expect(entry.cost_usd).toBeGreaterThan(0);
    expect(typeof entry.time).toBe("string");
    // Never content, never the key.
    const answer = (JSON.parse(body) as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
    const accessLines = s.out.split("\n").filter((l) => l.startsWith("{")).join("\n");
    expect(accessLines).not.toContain(key);
    expect(accessLines).not.toContain("a secret prompt");
    expect(accessLines).not.toContain(answer);
  });

  it("writes nothing with [server] access_log = false", async () => {
    const { s, requestId } = await served('[server]\nhost = "127.0.0.1"\naccess_log = false\n');
    await Bun.sleep(200);
    s.kill();
    await s.exited();
    expect(s.out).not.toContain(requestId);
  });
});

describe("the access log at stop", () => {
  it("writes the lines still buffered before the process exits on SIGTERM", async () => {
    const f = tempInstallation('[server]\nhost = "127.0.0.1"\n');
    folders.push(f);
    const s = startServe(["--config", f.config, "--port", "0", "--db", join(f.dir, "gateway.db")]);
    const url = await s.url();
    const key = (await s.until(/gk_sk_[A-Za-z0-9]+/))[0];
    const res = await fetch(`${url}/v1/me`, { headers: { "x-api-key": key } });
    const requestId = res.headers.get("x-gateway-request-id")!;
    await res.text();
    // At once, well inside the half second the buffer may wait.
    s.kill();
    expect(await s.exited()).toBe(0);
    expect(s.out).toContain(`"request_id":"${requestId}"`);
  });
});

describe("the client address", () => {
  const PROXIED = '[server]\nhost = "127.0.0.1"\ntrust_proxy = ["127.0.0.1"]\n';

  it("is in the access log line and the request_logs row of a /v1 request, trust_proxy applied", async () => {
    const f = tempInstallation(PROXIED);
    folders.push(f);
    const db = join(f.dir, "gateway.db");
    const s = startServe(["--config", f.config, "--port", "0", "--db", db]);
    const url = await s.url();
    const key = (await s.until(/gk_sk_[A-Za-z0-9]+/))[0];
    const res = await fetch(`${url}/v1/me`, { headers: { "x-api-key": key, "x-forwarded-for": "203.0.113.7" } });
    const requestId = res.headers.get("x-gateway-request-id")!;
    await res.text();
    const line = (await s.until(new RegExp(`\\{[^\\n]*"request_id":"${requestId}"[^\\n]*\\}`)))[0];
    s.kill();
    await s.exited();
    expect(JSON.parse(line).client_ip).toBe("203.0.113.7");
    const shown = await gatewayJson<{ client_ip: string }>(["logs", "show", requestId, "--db", db]);
    expect(shown.client_ip).toBe("203.0.113.7");
  }, 60_000);

  it("a dashboard call under /api/ writes one access log line with its client, never its cookie or body", async () => {
    const f = tempInstallation(PROXIED);
    folders.push(f);
    const s = startServe(["--config", f.config, "--port", "0", "--db", join(f.dir, "gateway.db")]);
    const url = await s.url();
    const res = await fetch(`${url}/api/login`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie: "gw_session=cookie-secret-123", "x-forwarded-for": "198.51.100.9" },
      body: JSON.stringify({ email: "nobody@example.com", password: "password-secret-456" }),
    });
    await res.text();
    const line = (await s.until(/\{[^\n]*"path":"\/api\/login"[^\n]*\}/))[0];
    s.kill();
    await s.exited();
    expect(JSON.parse(line)).toMatchObject({ method: "POST", path: "/api/login", status: res.status, client_ip: "198.51.100.9" });
    expect(s.out).not.toContain("cookie-secret-123");
    expect(s.out).not.toContain("password-secret-456");
  }, 60_000);
});

describe("the access log's time", () => {
  it("is the time each line is written, to the millisecond, lines of the same millisecond sharing it", () => {
    const written: string[] = [];
    const log = new AccessLog((text) => written.push(text));
    const row = { requestId: "r", method: "POST", path: "/v1/chat/completions", status: 200, latencyMs: 1 };
    const at = ["2026-11-27T02:40:00.000Z", "2026-11-27T02:40:00.000Z", "2026-11-27T02:40:00.001Z", "2026-11-27T03:00:00.001Z"];
    try {
      for (const t of at) {
        setSystemTime(new Date(t));
        log.line(row);
      }
      setSystemTime(new Date("2026-11-27T03:00:00.002Z"));
      log.call({ ...row, path: "/api/me", clientIp: null });
    } finally {
      setSystemTime();
      log.flush();
      log.close();
    }
    const times = written.join("").trim().split("\n").map((l) => (JSON.parse(l) as { time: string }).time);
    expect(times).toEqual([...at, "2026-11-27T03:00:00.002Z"]);
  });
});

describe("the access log's lines", () => {
  it("write each row's fields only, as JSON.stringify writes them, none carried over from the row before", () => {
    const written: string[] = [];
    const log = new AccessLog((text) => written.push(text));
    const base = { requestId: "gw_1", method: "POST", path: "/v1/chat/completions", status: 200, latencyMs: 1.5 };
    const rows: LogRow[] = [
      { ...base, errorCode: "rate_limit", model: "m", provider: "p", upstreamModel: "u", keyPrefix: "gk_sk_abcdef", stream: true, inputTokens: 0, outputTokens: 7, costNano: 1_234, clientIp: "10.0.0.1" },
      { ...base, requestId: "gw_2", latencyMs: 2.4999 },
      { ...base, requestId: "gw_3", path: '/v1/"odd"\\path\u0001é', model: "mødel \ud83d\ude00 \"q\"", provider: "p", upstreamModel: null, costNano: 0, stream: false, errorCode: null, inputTokens: null, clientIp: null },
      { ...base, requestId: "gw_4", provider: "p", upstreamModel: "u2", outputTokens: 3, costNano: 999_999_999_999 },
    ];
    const at = new Date("2026-11-27T04:00:00.123Z");
    try {
      setSystemTime(at);
      for (const r of rows) log.line(r);
    } finally {
      setSystemTime();
      log.flush();
      log.close();
    }
    const expected = rows.map((r) =>
      JSON.stringify({
        level: "info",
        time: at.toISOString(),
        request_id: r.requestId,
        method: r.method,
        path: r.path,
        status: r.status,
        error_code: r.errorCode ?? undefined,
        model: r.model ?? undefined,
        route: r.provider && r.upstreamModel ? `${r.provider}/${r.upstreamModel}` : undefined,
        provider: r.provider ?? undefined,
        key_prefix: r.keyPrefix ?? undefined,
        stream: r.stream || undefined,
        latency_ms: Math.round(r.latencyMs),
        input_tokens: r.inputTokens ?? undefined,
        output_tokens: r.outputTokens ?? undefined,
        cost_usd: r.costNano ? nanoToUsd(r.costNano) : undefined,
        client_ip: r.clientIp ?? undefined,
      }) + "\n",
    );
    expect(written.join("")).toBe(expected.join(""));
  });
});
