import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { ErrorEnvelope, Pricing } from "../../src/http/api-schemas.ts";
import { ENDPOINTS, type Endpoint } from "../../src/http/endpoints.ts";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import { postWithApiKey } from "../support/keyed.ts";
import { startStripeMock, type StripeMock } from "../support/stripe-mock.ts";
import { fragmentTokenIn, linkIn, mailTo, noticeGateway, type NoticeRig } from "../notices/support.ts";
import { codeAt } from "../support/two-factor.ts";
import { body } from "./support.ts";

// The /api/ answers against their schemas (src/http/api-schemas.ts): the OpenAPI document shows each
// one, and the real answers of a flow that calls every /api/ endpoint once validate against them.

// Registrations hash a password with Argon2id: seconds each on a loaded machine.
setDefaultTimeout(60_000);

const API = ENDPOINTS.filter((e) => e.path.startsWith("/api/"));
const name = (e: Pick<Endpoint, "method" | "path">) => `${e.method} ${e.path}`;

let gw: TestGateway;
let rig: NoticeRig;
let stripe: StripeMock;
/** Each endpoint's answer in the flow, by its row's method and path. */
const answers = new Map<string, { status: number; type: string; text: string }>();
let openapi: { paths: Record<string, Record<string, { responses: Record<string, { content: Record<string, { schema: Record<string, unknown> }> }> }>> };

/** Calls `path` (the row's, or it with the id filled in) as `b` and keeps the answer under the row's name. */
async function hit(b: ReturnType<NoticeRig["browser"]>, method: string, row: string, path = row, json?: unknown): Promise<Record<string, any>> {
  const res = await b.call(method, path, json);
  const text = await res.text();
  answers.set(`${method} ${row}`, { status: res.status, type: res.headers.get("content-type") ?? "", text });
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return res.headers.get("content-type")?.startsWith("application/json") ? JSON.parse(text) : {};
}

beforeAll(async () => {
  stripe = startStripeMock();
  // Under [email], so that the address verification's routes answer too.
  rig = await noticeGateway({ config: stripe.config() });
  gw = rig.gw;
  openapi = (await (await fetch(`${gw.url}/openapi.json`)).json()) as typeof openapi;

  const visitor = rig.browser();
  await hit(visitor, "GET", "/api/pricing");
  // Logged out first (the shape a visitor's first page gets); the logged-in answer below replaces it.
  await hit(visitor, "GET", "/api/session");
  const email = `schemas${process.pid}@test.local`;
  const registered = await hit(visitor, "POST", "/api/register", undefined, { email, password: "correct horse" });
  await rig.smtp.waitFor(1);
  // A resend waits a minute after the registration's link: the link is made a minute older.
  gw.services.db!.$client.run("UPDATE email_verifications SET sent_at = sent_at - 61000 WHERE account_id = ?", [registered.id]);
  await hit(visitor, "POST", "/api/verify/resend");
  const { token } = linkIn((await rig.smtp.waitFor(2))[1]!.text);
  await hit(visitor, "POST", "/api/verify", undefined, { token });
  await hit(visitor, "POST", "/api/logout");
  await hit(visitor, "POST", "/api/login", undefined, { email, password: "correct horse" });
  const me = await hit(visitor, "GET", "/api/me");
  await hit(visitor, "GET", "/api/session");
  await hit(visitor, "PUT", "/api/me/low-balance", undefined, { threshold_usd: 0.5 });
  const key = await hit(visitor, "POST", "/api/keys", undefined, { name: "ci", models: ["demo"], rpm: 10, budget_usd: 5, budget_period: "week" });
  await hit(visitor, "PATCH", "/api/keys/{id}", `/api/keys/${key.id}`, { name: "ci-2" });
  await hit(visitor, "GET", "/api/keys");
  // One request on the key, so the figures have a charge, a log row and a day of spend.
  const chat = await postWithApiKey(gw, "/v1/chat/completions", { model: "demo", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }, key.key);
  expect(chat.status).toBe(200);
  await chat.arrayBuffer();
  await hit(visitor, "GET", "/api/ledger");
  await hit(visitor, "GET", "/api/requests");
  await hit(visitor, "GET", "/api/requests.csv");
  await hit(visitor, "GET", "/api/ledger.csv");
  await hit(visitor, "GET", "/api/usage/daily");
  await hit(visitor, "GET", "/api/usage/summary");
  await hit(visitor, "DELETE", "/api/keys/{id}", `/api/keys/${key.id}`);
  const topUp = await hit(visitor, "POST", "/api/topups", undefined, { amount_usd: 5 });
  const delivered = await stripe.deliver(gw.url, stripe.event(topUp.id).payload);
  answers.set("POST /api/stripe/webhook", { status: delivered.status, type: delivered.headers.get("content-type") ?? "", text: await delivered.text() });
  await hit(visitor, "GET", "/api/topups");
  await hit(visitor, "GET", "/api/topups/{id}/receipt", `/api/topups/${topUp.id}/receipt`);
  await hit(visitor, "POST", "/api/password", undefined, { current_password: "correct horse", new_password: "correct horse battery" });
  // Two-factor login on, a login through both steps (its token and a recovery code), then off.
  const setup = await hit(visitor, "POST", "/api/me/2fa/setup");
  const on = await hit(visitor, "POST", "/api/me/2fa/enable", undefined, { password: "correct horse battery", code: await codeAt(setup.secret, 0) });
  await hit(visitor, "POST", "/api/logout");
  const step = await hit(visitor, "POST", "/api/login", undefined, { email, password: "correct horse battery" });
  await hit(visitor, "POST", "/api/login/second-factor", undefined, { token: step.token, code: on.recovery_codes[0] });
  await hit(visitor, "POST", "/api/me/2fa/disable", undefined, { password: "correct horse battery", code: await codeAt(setup.secret, 30) });
  // A change of address and back through its emailed links, then a reset: the session the reset ends is logged in again.
  const moved = `moved${process.pid}@test.local`;
  await hit(visitor, "POST", "/api/me/email", undefined, { new_email: moved, password: "correct horse battery" });
  await hit(rig.browser(), "POST", "/api/me/email/confirm", undefined, { token: fragmentTokenIn((await mailTo(rig, moved)).text, "confirm-email") });
  const mailed = rig.smtp.mails.length;
  await hit(rig.browser(), "POST", "/api/password/forgot", undefined, { email: moved });
  const reset = fragmentTokenIn((await mailTo(rig, moved, mailed)).text, "reset");
  await hit(rig.browser(), "POST", "/api/password/reset", undefined, { token: reset, password: "correct horse battery" });
  await hit(visitor, "POST", "/api/login", undefined, { email: moved, password: "correct horse battery" });

  await gw.services.accounts.setAdmin(me.id, true);
  const other = rig.browser();
  const target = (await body(await other.call("POST", "/api/register", { email: `target${process.pid}@test.local`, password: "correct horse" }))).id;
  const at = (op: string) => `/api/admin/accounts/${target}/${op}`;
  await hit(visitor, "GET", "/api/admin/accounts", "/api/admin/accounts?q=target&limit=5");
  const made = await hit(visitor, "POST", "/api/admin/accounts", undefined, { email: `made${process.pid}@test.local`, balance_usd: 1 });
  const madeKey = await hit(visitor, "POST", "/api/admin/accounts/{id}/keys", `/api/admin/accounts/${made.id}/keys`, { name: "given" });
  await hit(visitor, "PUT", "/api/admin/accounts/{id}/note", `/api/admin/accounts/${made.id}/note`, { note: "made for a colleague" });
  await hit(visitor, "PUT", "/api/admin/accounts/{id}/password", `/api/admin/accounts/${made.id}/password`, { password: "a colleague's pick" });
  await hit(visitor, "GET", "/api/admin/accounts/{id}", `/api/admin/accounts/${made.id}`);
  await hit(visitor, "DELETE", "/api/admin/accounts/{id}/keys/{key_id}", `/api/admin/accounts/${made.id}/keys/${madeKey.id}`);
  await hit(visitor, "GET", "/api/admin/totals");
  await hit(visitor, "POST", "/api/admin/accounts/{id}/credit", at("credit"), { op: "credit", usd: 2, note: "thanks" });
  await hit(visitor, "POST", "/api/admin/accounts/{id}/debit", at("debit"), { op: "debit", usd: 1, note: "refund" });
  await hit(visitor, "POST", "/api/admin/accounts/{id}/disable", at("disable"));
  await hit(visitor, "POST", "/api/admin/accounts/{id}/enable", at("enable"));
  await hit(visitor, "POST", "/api/admin/pause");
  await hit(visitor, "POST", "/api/admin/resume");
  await hit(visitor, "GET", "/api/admin/status");
  await hit(visitor, "GET", "/api/admin/audit");
  const batch = await hit(visitor, "POST", "/api/admin/codes", undefined, { usd: 1, count: 1, note: "flow" });
  await hit(visitor, "GET", "/api/admin/codes");
  await hit(visitor, "POST", "/api/redeem", undefined, { code: batch.codes[0] });
  await hit(visitor, "POST", "/api/logout-all");
  // The target's sessions ended at its enable: logged in again, it closes its account, forfeiting the 1 USD left.
  const targetEmail = `target${process.pid}@test.local`;
  await hit(other, "POST", "/api/login", undefined, { email: targetEmail, password: "correct horse" });
  const left = (await hit(other, "GET", "/api/me")).balance_usd;
  await hit(other, "POST", "/api/me/close", undefined, { password: "correct horse", confirm: targetEmail, forfeit_usd: left });
});

afterAll(async () => {
  await rig.stop();
  stripe.stop();
});

describe("the OpenAPI document", () => {
  it.each(API.map((e) => [name(e), e] as const))("describes the answer of %s with its schema", (_, e) => {
    const op = openapi.paths[e.path]?.[e.method.toLowerCase()];
    const success = op?.responses[String(e.response?.status)]?.content[e.response?.type ?? ""]?.schema;
    // Not the bare {"type": "object"} it showed before: fields and what is required of them, or the CSV's text.
    const fields = success && (success.properties ?? success.anyOf ?? (success.type === "string" ? success : undefined));
    expect({ endpoint: name(e), described: fields !== undefined }).toEqual({ endpoint: name(e), described: true });
    expect(op!.responses["4XX"]!.content["application/json"]!.schema).toMatchObject({ required: ["error"] });
  });
});

describe("the answers of a flow that calls each /api/ endpoint once", () => {
  it.each(API.map((e) => [name(e), e] as const))("validate against the row's schema: %s", (_, e) => {
    const a = answers.get(name(e));
    expect({ endpoint: name(e), called: a !== undefined }).toEqual({ endpoint: name(e), called: true });
    expect({ endpoint: name(e), status: a!.status, type: a!.type.split(";")[0] }).toEqual({ endpoint: name(e), status: e.response!.status, type: e.response!.type });
    const value = e.response!.type === "application/json" ? JSON.parse(a!.text) : a!.text;
    const errors = [...Value.Errors(e.response!.schema, value)].map((x) => `${x.path}: ${x.message}`);
    expect({ endpoint: name(e), errors }).toEqual({ endpoint: name(e), errors: [] });
  });

  it("answers a refusal in the shared error envelope", async () => {
    const res = await fetch(`${gw.url}/api/me`);
    expect(res.status).toBe(401);
    expect(Value.Check(ErrorEnvelope, await res.json())).toBe(true);
  });
});

describe("GET /api/pricing of a catalog with every kind of price", () => {
  it("validates against its schema: long-context and service tiers, per-image and token-priced images", async () => {
    const text = (id: string, provider: string, prices: object) => ({ id, modalities: ["text"], endpoints: ["chat.completions"], ...prices, routes: [{ provider, model: id }] });
    const image = (id: string, pricing: object) => ({ id, modalities: ["image"], endpoints: ["images.generations"], pricing, routes: [{ provider: "openai", model: "gpt-image-1" }] });
    const mock = await startGatewayOnMock({
      openai: true,
      models: [
        text("tiered", "anthropic", { pricing: { input: 3, output: 15 }, pricing_tiers: [{ above_input_tokens: 200000, input: 6, output: 22.5 }] }),
        text("served", "openai", { pricing: { input: 1.25, output: 10 }, service_tiers: { flex: { input: 0.625, output: 5 } } }),
        text("both", "openai", { pricing: { input: 2.5, output: 15 }, pricing_tiers: [{ above_input_tokens: 272000, input: 5, output: 22.5 }], service_tiers: { flex: { input: 1.25, output: 7.5 } } }),
        image("by-tokens", { input: 5, image_input: 10, image_output: 40, per_image: 0.167 }),
        image("flat", { per_image: 0.04 }),
      ],
    });
    try {
      const prices = (await (await fetch(`${mock.gw.url}/api/pricing`)).json()) as Pricing;
      expect([...Value.Errors(Pricing, prices)].map((x) => `${x.path}: ${x.message}`)).toEqual([]);
      // GPT-5.4's flex above 272k (docs/pricing.md#service-and-long-context-tiers): 2x input, 1.5x output of flex.
      expect(prices.models[2]!.service_tiers!.flex!.pricing_tiers).toEqual([expect.objectContaining({ above_input_tokens: 272000, input: 2.5, output: 11.25 })]);
      expect(prices.models.map((m) => Object.keys(m).filter((k) => /tiers|image/.test(k)))).toEqual([
        ["pricing_tiers"],
        ["service_tiers"],
        ["pricing_tiers", "service_tiers"],
        ["per_image", "image_input", "image_output"],
        ["per_image"],
      ]);
    } finally {
      await mock.stop();
    }
  });
});
