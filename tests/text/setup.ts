import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import type { MockUpstream } from "../support/mock-upstream.ts";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";

// Four models, one per (client dialect, upstream dialect) pair once a client picks its endpoint:
// "claude-native" routes to the Anthropic mock, "gpt-native" to the OpenAI mock; each is sold on
// both endpoints, so calling the other endpoint exercises translation.
export const PRICES = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 };

export interface TextRig {
  gw: TestGateway;
  up: MockUpstream;
  openai(key?: string): OpenAI;
  anthropic(key?: string): Anthropic;
  acct: { key: string; accountId: number; keyId: number };
  stop(): Promise<void>;
}

export async function startTextRig(extraModels: Record<string, unknown>[] = []): Promise<TextRig> {
  const { up, gw, stop } = await startGatewayOnMock({
    openai: true,
    limits: { default_rpm: 10_000 },
    models: [
      {
        id: "claude-native",
        aliases: ["claude-alias"],
        modalities: ["text"],
        endpoints: ["messages", "chat.completions"],
        pricing: PRICES,
        routes: [{ provider: "anthropic", model: "claude-upstream-1" }],
      },
      {
        id: "gpt-native",
        modalities: ["text"],
        endpoints: ["messages", "chat.completions"],
        pricing: PRICES,
        routes: [{ provider: "openai", model: "gpt-upstream-1" }],
      },
      ...extraModels,
    ],
  });
  const acct = gw.account(100);
  return {
    gw,
    up,
    acct,
    openai: (key = acct.key) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 }),
    anthropic: (key = acct.key) => new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0 }),
    stop,
  };
}

/** Hand-computed cost in nano-dollars: prices are USD per 1M tokens, so nano per token = price × 1000. */
export function expectedNano(u: { input: number; output: number; cacheRead?: number; cacheWrite?: number }): number {
  const micro = u.input * PRICES.input * 1e9 + u.output * PRICES.output * 1e9 + (u.cacheRead ?? 0) * PRICES.cache_read * 1e9 + (u.cacheWrite ?? 0) * PRICES.cache_write * 1e9;
  return Math.ceil(Math.round(micro) / 1e6);
}
