import { afterAll, describe, expect, it } from "bun:test";
import { serve, tempInstallation } from "../support/cli.ts";

// DESIGN, Commands: on a first start with no accounts, serve creates a demo account with the
// starting 1 USD and prints one key, once, with a snippet to try it.

const install = tempInstallation();
afterAll(() => install.remove());

const start = () => serve(["--config", install.config, "--port", "0", "--db", install.db]);
const urlOf = (listeningLine: string) => `http://127.0.0.1:${/listening on http:\/\/[^:]+:(\d+)/.exec(listeningLine)![1]}`;
const balanceOf = async (url: string, key: string) =>
  ((await (await fetch(`${url}/v1/me`, { headers: { "x-api-key": key } })).json()) as { balance: { balance_usd: number } }).balance.balance_usd;

describe("gateway serve", () => {
  let firstKey = "";

  it("on an empty database creates the demo account with 1 USD and prints one gk_sk_ key with a curl snippet", async () => {
    const server = await start();
    let printed = "";
    try {
      // The banner ends with the SDK lines; every gk_sk_ in it is the same, one key.
      printed = await server.until(/@anthropic-ai\/sdk.*\n/);
      const keys = new Set(printed.match(/gk_sk_[A-Za-z0-9]+/g));
      expect(keys.size).toBe(1);
      firstKey = [...keys][0]!;
      expect(await balanceOf(urlOf(server.firstLine), firstKey)).toBe(1);
    } finally {
      await server.stop();
    }
    expect(printed).toContain("created the account demo@gateway.local with 1 USD");
    expect(printed).toContain(`curl http://127.0.0.1:`); // the config binds 127.0.0.1: links name the address it listens on
    expect(printed).toContain(`-H "Authorization: Bearer ${firstKey}"`);
  });

  it("prints no key on the second start, while the first key keeps its balance", async () => {
    const server = await start();
    let printed = "";
    try {
      expect(await balanceOf(urlOf(server.firstLine), firstKey)).toBe(1);
    } finally {
      printed = await server.stop();
    }
    expect(printed).toContain("listening on");
    expect(printed).not.toMatch(/gk_sk_[A-Za-z0-9]{40}/); // the access log names the key prefix only
  });
});
