import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import type { TestGateway } from "../support/gateway.ts";
import { rawRequest } from "../support/raw-http.ts";
import { body, Browser, dashboardGateway, registeredBrowser, freshEmail, refusedWith } from "./support.ts";

// Every login and registration hashes a password with Argon2id: a few seconds a test on a loaded machine.
setDefaultTimeout(30_000);

// docs/dashboard.md, Security: what /api/ refuses, each with its answer.

let gw: TestGateway;
beforeAll(async () => {
  gw = await dashboardGateway();
});
afterAll(() => gw.stop());

const holder = () => registeredBrowser(gw);

/** A registered account's email, logged out; its password is "correct horse". */
async function registeredEmail(): Promise<string> {
  return (await new Browser(gw.url).register()).email;
}

describe("API keys on /api/", () => {
  it("are refused as Authorization: Bearer with 401 no-session, even beside a live session", async () => {
    const b = await holder();
    const { key } = await body(await b.call("POST", "/api/keys", {}));
    await refusedWith(await b.call("GET", "/api/me", undefined, { authorization: `Bearer ${key}` }), 401, "no-session");
  });

  it("are refused as x-api-key with 401 no-session", async () => {
    const b = await holder();
    const { key } = await body(await b.call("POST", "/api/keys", {}));
    const keyOnly = new Browser(gw.url);
    await refusedWith(await keyOnly.call("GET", "/api/keys", undefined, { "x-api-key": key }), 401, "no-session");
  });
});

describe("the session cookie on /v1", () => {
  it("is no credential: /v1/me with only the cookie is 401 no-key", async () => {
    const b = await holder();
    const res = await fetch(`${gw.url}/v1/me`, { headers: { cookie: `gw_session=${b.cookie}` } });
    await refusedWith(res, 401, "no-key");
  });

  it("is no credential on a model route either", async () => {
    const b = await holder();
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { cookie: `gw_session=${b.cookie}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "demo", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }),
    });
    await refusedWith(res, 401, "no-key");
  });
});

describe("CSRF: Origin on state-changing routes", () => {
  it("refuses a write without Origin with 403 origin, and does nothing", async () => {
    const b = await holder();
    const bare = await fetch(`${gw.url}/api/keys`, { method: "POST", headers: { cookie: `gw_session=${b.cookie}`, "content-type": "application/json" }, body: "{}" });
    await refusedWith(bare, 403, "origin");
    expect((await body(await b.call("GET", "/api/keys"))).data).toEqual([]);
  });

  it("refuses a write from another origin with 403 origin", async () => {
    const b = await holder();
    const message = await refusedWith(await b.call("POST", "/api/logout-all", undefined, { origin: "https://evil.example" }), 403, "origin");
    expect(message).toContain("https://evil.example");
    expect((await b.call("GET", "/api/me")).status).toBe(200);
  });

  it("refuses a login from another origin (login CSRF)", async () => {
    const res = await new Browser(gw.url).call("POST", "/api/login", { email: "a@b.c", password: "whatever1" }, { origin: "http://localhost:1" });
    await refusedWith(res, 403, "origin");
  });

  it("lets reads through without Origin", async () => {
    const b = await holder();
    const res = await fetch(`${gw.url}/api/me`, { headers: { cookie: `gw_session=${b.cookie}` } });
    expect(res.status).toBe(200);
  });

  it("refuses a DNS-rebinding page, whose Host and Origin both name its own site, when public_url is set", async () => {
    const other = await dashboardGateway({ server: { public_url: "https://gateway.example.com" } });
    try {
      const res = await rawRequest(other.port, {
        method: "POST",
        target: "/api/register",
        headers: [["host", "rebind.example"], ["origin", "http://rebind.example"], ["content-type", "application/json"]],
        body: new TextEncoder().encode(JSON.stringify({ email: freshEmail(), password: "correct horse" })),
      });
      expect(res.status).toBe(403);
      expect(JSON.parse(res.text()).error.code).toBe("origin");
    } finally {
      await other.stop();
    }
  });

  it("compares with [server] public_url when it is set", async () => {
    const other = await dashboardGateway({ server: { public_url: "https://gateway.example.com" } });
    try {
      const own = await new Browser(other.url).call("POST", "/api/register", { email: freshEmail(), password: "correct horse" });
      await refusedWith(own, 403, "origin");
      const b = new Browser(other.url);
      const res = await b.call("POST", "/api/register", { email: freshEmail(), password: "correct horse" }, { origin: "https://gateway.example.com" });
      expect(res.status).toBe(201);
      // An https public URL makes the cookie Secure.
      expect(b.setCookie).toEndWith("; Secure");
    } finally {
      await other.stop();
    }
  });
});

describe("sessions", () => {
  it("a login ends the session the browser already had: a token planted before it opens nothing after", async () => {
    const planter = await holder();
    const planted = planter.cookie;
    const email = await registeredEmail();
    const victim = new Browser(gw.url);
    victim.cookie = planted;
    expect((await victim.call("POST", "/api/login", { email, password: "correct horse" })).status).toBe(200);
    expect(victim.cookie).not.toBe(planted);
    await refusedWith(await fetch(`${gw.url}/api/me`, { headers: { cookie: `gw_session=${planted}` } }), 401, "no-session");
    expect((await body(await victim.call("GET", "/api/me"))).email).toBe(email);
  });

  it("every /api/ answer is cache-control: no-store, the account's and the refusals alike", async () => {
    const b = await holder();
    const answers = [await b.call("GET", "/api/me"), await b.call("GET", "/api/requests.csv"), await new Browser(gw.url).call("GET", "/api/me"), await b.call("POST", "/api/keys", {}, { origin: "https://evil.example" })];
    expect(answers.map((r) => [r.status, r.headers.get("cache-control")])).toEqual([[200, "no-store"], [200, "no-store"], [401, "no-store"], [403, "no-store"]]);
  });
});

describe("the session cookie on an HTTPS dashboard", () => {
  const HTTPS = "https://gateway.example.com";
  let tls: TestGateway;
  beforeAll(async () => {
    tls = await dashboardGateway({ server: { public_url: HTTPS } });
  });
  afterAll(() => tls.stop());

  /** A logged-in browser of the HTTPS dashboard (its pages send public_url's origin). */
  async function tlsHolder(): Promise<{ b: Browser; email: string }> {
    const b = new Browser(tls.url);
    const email = freshEmail();
    expect((await b.call("POST", "/api/register", { email, password: "correct horse" }, { origin: HTTPS })).status).toBe(201);
    return { b, email };
  }

  it("is __Host-gw_session, which only this very host can set: Secure, Path=/, no Domain", async () => {
    const { b } = await tlsHolder();
    expect(b.setCookie).toMatch(/^__Host-gw_session=[A-Za-z0-9_-]{43}; Expires=.+; Path=\/; HttpOnly; SameSite=Lax; Secure$/);
    expect(b.setCookie).not.toContain("Domain");
  });

  it("ignores a gw_session cookie planted by a sibling subdomain and sent ahead of the holder's own", async () => {
    const planted = await tlsHolder();
    const victim = await tlsHolder();
    // A domain-wide cookie with a longer Path comes first in the Cookie header the browser sends.
    const res = await fetch(`${tls.url}/api/me`, { headers: { cookie: `gw_session=${planted.b.cookie}; ${victim.b.cookieName}=${victim.b.cookie}` } });
    expect((await body(res)).email).toBe(victim.email);
  });
});

describe("JSON bodies only", () => {
  it("refuses a form body with 415 unsupported_media_type", async () => {
    const res = await new Browser(gw.url).call("POST", "/api/login", "email=a%40b.c&password=whatever1", { "content-type": "application/x-www-form-urlencoded" });
    await refusedWith(res, 415, "unsupported_media_type");
  });

  it("refuses text/plain, the content type a cross-site form can send without a preflight", async () => {
    const b = await holder();
    const res = await b.call("POST", "/api/keys", "{}", { "content-type": "text/plain" });
    await refusedWith(res, 415, "unsupported_media_type");
  });

  it("refuses a body that is not JSON with 400 invalid_request", async () => {
    const res = await new Browser(gw.url).call("POST", "/api/login", "{not json");
    await refusedWith(res, 400, "invalid_request");
  });

  it("refuses a body over 64 KiB with 413 naming its 64 KiB limit, not /v1's 20 MiB", async () => {
    const b = await holder();
    const res = await b.call("POST", "/api/keys", { name: "x".repeat(64 * 1024) });
    expect(await refusedWith(res, 413, "request_too_large")).toBe("Request body is larger than this route's 64 KiB limit.");
  });

  it("takes a write with no body at all (logout)", async () => {
    const b = await holder();
    expect((await b.call("POST", "/api/logout")).status).toBe(200);
  });
});

describe("login", () => {
  it("answers an unknown email and a wrong password with the same 401 and the same text", async () => {
    const email = await registeredEmail();
    const wrong = await new Browser(gw.url).call("POST", "/api/login", { email, password: "wrong password" });
    const unknown = await new Browser(gw.url).call("POST", "/api/login", { email: freshEmail(), password: "wrong password" });
    const a = await refusedWith(wrong, 401, "invalid_credentials");
    const b = await refusedWith(unknown, 401, "invalid_credentials");
    expect(a).toBe(b);
  });

  it("is throttled per address: the 21st attempt in 10 minutes is 429 rate_limit with Retry-After", async () => {
    const b = new Browser(gw.url);
    for (let i = 0; i < 20; i++) {
      expect((await b.call("POST", "/api/login", { email: freshEmail(), password: "wrong password" })).status).toBe(401);
    }
    const res = await b.call("POST", "/api/login", { email: freshEmail(), password: "wrong password" });
    await refusedWith(res, 429, "rate_limit");
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("is throttled per account: after 5 failures even the right password from elsewhere is 429", async () => {
    const email = await registeredEmail();
    for (let i = 0; i < 5; i++) await new Browser(gw.url).call("POST", "/api/login", { email, password: "wrong password" });
    const res = await new Browser(gw.url).call("POST", "/api/login", { email, password: "correct horse" });
    await refusedWith(res, 429, "rate_limit");
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("forgets an account's failures after a login that succeeds", async () => {
    const email = await registeredEmail();
    for (let i = 0; i < 4; i++) await new Browser(gw.url).call("POST", "/api/login", { email, password: "wrong password" });
    expect((await new Browser(gw.url).call("POST", "/api/login", { email, password: "correct horse" })).status).toBe(200);
    for (let i = 0; i < 4; i++) await new Browser(gw.url).call("POST", "/api/login", { email, password: "wrong password" });
    expect((await new Browser(gw.url).call("POST", "/api/login", { email, password: "correct horse" })).status).toBe(200);
  });
});

describe("registration", () => {
  it("is throttled per address: the 11th in an hour is 429 rate_limit with Retry-After, and opens no account", async () => {
    const b = new Browser(gw.url);
    for (let i = 0; i < 10; i++) {
      b.cookie = null;
      expect((await b.register()).res.status).toBe(201);
    }
    const { email, res } = await b.register();
    await refusedWith(res, 429, "rate_limit");
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(3000);
    expect(gw.services.db.$client.query("SELECT 1 FROM accounts WHERE email = ?").get(email)).toBeNull();
  });

  it("is throttled per email: the 6th attempt at one email in an hour is 429, from any address", async () => {
    const email = freshEmail();
    for (let i = 0; i < 5; i++) await new Browser(gw.url).register(email);
    await refusedWith((await new Browser(gw.url).register(email)).res, 429, "rate_limit");
  });
});

describe("CORS", () => {
  it("/api/ answers carry no Access-Control-Allow-Origin, errors included", async () => {
    const b = await holder();
    for (const res of [await b.call("GET", "/api/me"), await b.call("GET", "/api/keys"), await new Browser(gw.url).call("GET", "/api/me")]) {
      expect(res.headers.get("access-control-allow-origin")).toBeNull();
    }
  });

  it("a preflight to /api/ gets no CORS headers", async () => {
    const res = await fetch(`${gw.url}/api/keys`, { method: "OPTIONS", headers: { origin: "https://evil.example", "access-control-request-method": "POST" } });
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
    expect(res.headers.get("access-control-allow-methods")).toBeNull();
  });

  it("/api/pricing keeps its CORS *", async () => {
    expect((await fetch(`${gw.url}/api/pricing`)).headers.get("access-control-allow-origin")).toBe("*");
  });
});
