import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import type { MockUpstream } from "./mock-upstream.ts";
import { startGatewayOnMock, type TestGateway } from "./gateway.ts";
import { PRICES } from "./prices.ts";

// Four models, one per (client dialect, upstream dialect) pair once a client picks its endpoint:
// "claude-native" routes to the Anthropic mock, "gpt-native" to the OpenAI mock; each is sold on
// both endpoints, so calling the other endpoint exercises translation.

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
  const acct = await gw.account(100);
  return {
    gw,
    up,
    acct,
    openai: (key = acct.key) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 }),
    anthropic: (key = acct.key) => new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0 }),
    stop,
  };
}
