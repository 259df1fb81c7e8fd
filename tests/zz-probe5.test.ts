import { test } from "bun:test";
import { startTestGateway } from "./support/gateway.ts";

test("probe5", async () => {
  const gw = await startTestGateway({ limits: { default_rpm: 2 } });
  const a = await gw.account(5);
  const u = gw.url;
  const H = { authorization: `Bearer ${a.key}`, "content-type": "application/json" };
  const tail = async (l: string, p: string, b: unknown) => { const r = await fetch(u+p, { method: "POST", headers: H, body: JSON.stringify(b) }); const t = await r.text(); console.log(`### ${l} ${r.status}\n${t.slice(-700)}`); };
  await tail("chat stream no include_usage", "/v1/chat/completions", { model: "demo", max_tokens: 5, stream: true, messages: [{ role: "user", content: "hi" }] });
  await tail("responses stream", "/v1/responses", { model: "demo", max_output_tokens: 16, stream: true, input: "hi" });
  // main bucket exhausted now; count_tokens?
  const r = await fetch(u+"/v1/me", { headers: H }); console.log("me after 2", r.status, r.headers.get("retry-after"), r.headers.get("x-ratelimit-remaining-requests"), r.headers.get("x-ratelimit-reset-requests"));
  const c = await fetch(u+"/v1/messages/count_tokens", { method: "POST", headers: H, body: JSON.stringify({ model: "demo", messages: [{ role: "user", content: "hi" }] }) }); console.log("count after main exhausted", c.status, await c.text());
  for (let i = 0; i < 60; i++) await fetch(u+"/v1/messages/count_tokens", { method: "POST", headers: H, body: JSON.stringify({ model: "demo", messages: [{ role: "user", content: "hi" }] }) });
  const c2 = await fetch(u+"/v1/messages/count_tokens", { method: "POST", headers: H, body: JSON.stringify({ model: "demo", messages: [{ role: "user", content: "hi" }] }) }); console.log("count 62", c2.status, c2.headers.get("retry-after"), await c2.text());
  await gw.stop();
}, 60000);
