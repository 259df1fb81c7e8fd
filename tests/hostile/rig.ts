import { expect } from "bun:test";
import { events } from "../../src/core/events.ts";
import { Health } from "../../src/relay/health.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { startMockUpstream, type MockUpstream } from "../support/mock-upstream.ts";
import { startRawUpstream, type RawUpstream } from "../support/raw-upstream.ts";

// Issue 14's hostile upstreams: providers "raw-a" (Anthropic kind) and "raw-o" (OpenAI kind) point
// at a byte-level test server with short timeouts; "mock" is a well-behaved fallback.

export const SECRET_A = "sk-ant-api03-Zq8RkT2vLw9XyB4nMp6sDf1GhJ3kL5a7";
export const SECRET_O = "sk-proj-Hu7Yt6Rd5Es4Wa3Qz2Xc1Vb0Nm9LkJhGfDsA8p";
export const HEADER_SECRET = "tok-extra-Pw4Nc8Vx2Bz6Lq1";
export const IDLE_MS = 300;
export const TOTAL_MS = 2_000;
export const FIRST_BYTE_MS = 1_000;

const PRICES = { input: 3, output: 15 };
const timeouts = { timeout_ms: FIRST_BYTE_MS, idle_timeout_ms: IDLE_MS, total_timeout_ms: TOTAL_MS };
const text = (id: string, providers: string[]) => ({
  id,
  modalities: ["text"],
  endpoints: ["messages", "chat.completions"],
  pricing: PRICES,
  routes: providers.map((provider) => ({ provider, model: `${id}-up` })),
});

export interface HostileRig {
  raw: RawUpstream;
  mock: MockUpstream;
  gw: TestGateway;
  acct: { key: string; accountId: number };
  /** Operator event lines, newest last. */
  lines: Record<string, unknown>[];
  /** The events of one request, by its id header. */
  eventsOf(res: Response): Record<string, unknown>[];
  post(path: string, body: unknown, init?: RequestInit): Promise<Response>;
  /** Before each test: fresh breakers, no scripts, no records. */
  reset(): void;
  /** The account's money is as before the request: nothing charged, no hold left. */
  expectUncharged(balanceBefore: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startHostileRig(): Promise<HostileRig> {
  const raw = await startRawUpstream();
  const mock = await startMockUpstream();
  const gw = await startTestGateway({
    limits: { default_rpm: 100_000 },
    providers: [
      { id: "raw-a", kind: "anthropic", base_url: raw.url, api_key: SECRET_A, headers: { "x-extra-token": HEADER_SECRET }, ...timeouts },
      { id: "raw-o", kind: "openai", base_url: `${raw.url}/v1`, api_key: SECRET_O, ...timeouts },
      { id: "mock", kind: "anthropic", base_url: mock.url, api_key: "sk-ant-mock-0000000000" },
    ],
    models: [text("raw", ["raw-a"]), text("raw-openai", ["raw-o"]), text("raw-then-mock", ["raw-a", "mock"])],
  });
  const acct = await gw.account(100);
  const lines: Record<string, unknown>[] = [];
  const restore = events.redirect((line) => lines.push(JSON.parse(line) as Record<string, unknown>));
  return {
    raw,
    mock,
    gw,
    acct,
    lines,
    eventsOf: (res) => lines.filter((l) => l.request_id === res.headers.get("x-gateway-request-id")),
    post: (path, body, init = {}) =>
      fetch(`${gw.url}${path}`, {
        method: "POST",
        headers: { "x-api-key": acct.key, "content-type": "application/json" },
        body: JSON.stringify(body),
        ...init,
      }),
    reset() {
      Object.assign(gw.services, { health: new Health() });
      mock.reset();
      raw.requests.length = 0;
      lines.length = 0;
    },
    async expectUncharged(balanceBefore) {
      // A stream's settlement commits as its body ends; give the group commit a moment.
      for (let i = 0; i < 50 && gw.money(acct.accountId).openHolds > 0; i++) await Bun.sleep(20);
      const m = gw.money(acct.accountId);
      expect(m).toMatchObject({ balance: balanceBefore, openHolds: 0, reserved: 0 });
    },
    async stop() {
      restore();
      await gw.stop();
      await mock.stop();
      await raw.stop();
    },
  };
}

export const ask = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  max_tokens: 50,
  messages: [{ role: "user", content: "hi" }],
  ...extra,
});
