import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import type { TestGateway } from "../support/gateway.ts";
import { postWithApiKey } from "../support/keyed.ts";
import { body, dashboardGateway, refusedWith, registeredBrowser } from "./support.ts";

// GET /status is public with CORS `*`: it names the public model ids and their state. The routes
// behind them (upstream model names) and the texts of their failures (internal host names) are
// the operator's, on /api/admin/status.

// Registration hashes a password with Argon2id: seconds on a loaded machine.
setDefaultTimeout(30_000);

const SECRET_MODEL = "internal/llama-70b-secret-finetune";
const SECRET_HOST = "vllm-internal.corp.example";
let gw: TestGateway;

beforeAll(async () => {
  gw = await dashboardGateway({
    providers: [{ id: "corp", kind: "openai", base_url: `http://${SECRET_HOST}/v1`, api_key: "sk-corp", timeout_ms: 5_000 }],
    models: [{ id: "chat-1", modalities: ["text"], endpoints: ["chat.completions"], pricing: { input: 1, output: 2 }, routes: [{ provider: "corp", model: SECRET_MODEL }] }],
  });
  // One failed call: the route's last error now names the internal host.
  const a = await gw.account(1);
  const res = await postWithApiKey(gw, "/v1/chat/completions", { model: "chat-1", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }, a.key);
  expect(res.status).toBe(502);
});
afterAll(() => gw.stop());

describe("GET /status", () => {
  it("names each public model and its state, without upstream model names or error texts", async () => {
    const text = await (await fetch(`${gw.url}/status`)).text();
    expect(text).not.toContain(SECRET_MODEL);
    expect(text).not.toContain(SECRET_HOST);
    expect(text).not.toContain("corp/");
    expect(JSON.parse(text)).toMatchObject({ status: "degraded", models: [{ id: "chat-1", state: "degraded" }] });
  });
});

describe("GET /api/admin/status", () => {
  it("shows an admin each route, its upstream model and its last error", async () => {
    const b = await registeredBrowser(gw);
    await gw.services.accounts.setAdmin((await body(await b.call("GET", "/api/me"))).id, true);
    const s = await body(await b.call("GET", "/api/admin/status"));
    expect(s.routes).toEqual([{ id: "chat-1", routes: [expect.objectContaining({ route: `corp/${SECRET_MODEL}`, state: "failing" })] }]);
    expect(s.routes[0].routes[0].last_error).toContain(SECRET_HOST);
  });

  it("refuses a session that is not an admin's with 403 admin, and no session with 401", async () => {
    const b = await registeredBrowser(gw);
    await refusedWith(await b.call("GET", "/api/admin/status"), 403, "admin");
    await refusedWith(await fetch(`${gw.url}/api/admin/status`), 401, "no-session");
  });
});
