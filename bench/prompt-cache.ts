// `bun bench/prompt-cache.ts`: what a Chat client pays over a 20-turn agent conversation on a
// Messages route with prompt_cache "off" and "auto" (docs/pricing.md, "Automatic prompt caching").
// The gateway runs for real on the mock Messages vendor, whose usage is Anthropic's prompt cache
// computed from the breakpoints it receives (tests/support/prompt-cache.ts); the client is the
// openai SDK replaying tests/support/agent-replay.ts. Prints a markdown table of the bills.
import OpenAI from "openai";
import { startGatewayOnMock } from "../tests/support/gateway.ts";
import { PRICES } from "../tests/support/prices.ts";
import { replayAgent, type TurnBill } from "../tests/support/agent-replay.ts";

const model = (id: string, prompt_cache: "off" | "auto") => ({
  id,
  modalities: ["text"],
  endpoints: ["chat.completions"],
  pricing: PRICES,
  routes: [{ provider: "anthropic", model: "claude-sonnet-4-5", capabilities: { prompt_cache } }],
});

const { gw, up, stop } = await startGatewayOnMock({ models: [model("sonnet-off", "off"), model("sonnet-auto", "auto")], limits: { default_rpm: 100_000 } });
try {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: (await gw.account(100)).key, maxRetries: 0 });
  const off = await replayAgent(client, up, "sonnet-off");
  const auto = await replayAgent(client, up, "sonnet-auto");
  const usd = (n: number) => `$${n.toFixed(4)}`;
  const sum = (b: TurnBill[]) => b.reduce((n, t) => n + t.costUsd, 0);
  console.log("| turn | prompt tokens | off: cost | auto: read / written | auto: cost | off ÷ auto |");
  console.log("|---:|---:|---:|---:|---:|---:|");
  off.forEach((o, i) => {
    const a = auto[i]!;
    console.log(`| ${o.turn} | ${o.promptTokens} | ${usd(o.costUsd)} | ${a.cachedTokens} / ${a.cacheWriteTokens} | ${usd(a.costUsd)} | ${(o.costUsd / a.costUsd).toFixed(1)}× |`);
  });
  console.log(`| **20 turns** | ${off.reduce((n, t) => n + t.promptTokens, 0)} | **${usd(sum(off))}** | | **${usd(sum(auto))}** | **${(sum(off) / sum(auto)).toFixed(1)}×** |`);
  const warm = (b: TurnBill[]) => sum(b.slice(1)) / (b.length - 1);
  console.log(`\nwarm turns (2–20), mean: off ${usd(warm(off))}, auto ${usd(warm(auto))}, ${(warm(off) / warm(auto)).toFixed(1)}×`);
} finally {
  await stop();
}
