import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { gzipSync } from "node:zlib";
import { loadDashboardPage, type PageAssets } from "../support/dashboard-page.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { expectError } from "../support/errors.ts";

// The dashboard's page at `/`: Bun's HTML bundle served by the gateway's own process, beside the
// endpoint table. The browser tests (tests/browser/) use it; these check what they take for granted.

let gw: TestGateway;
let page: PageAssets;

beforeAll(async () => {
  gw = await startTestGateway();
  page = await loadDashboardPage(gw.url);
});

afterAll(() => gw.stop());

/** The page's Content-Security-Policy, directive → its sources. */
function policyOf(res: Response): Map<string, string> {
  const text = res.headers.get("content-security-policy") ?? "";
  return new Map(text.split(";").map((d) => d.trim()).filter(Boolean).map((d) => [d.split(/\s+/)[0]!, d.split(/\s+/).slice(1).join(" ")]));
}

describe("the dashboard's page", () => {
  it("is served at / with its bundled script and stylesheet from the same server", () => {
    const types = [...page.assets.values()].map((a) => a.type.split(";")[0]);
    expect(types.sort()).toEqual(["text/css", "text/javascript"]);
  });

  it("names no other host: no script, font or style from a CDN", () => {
    expect(page.html).not.toMatch(/(src|href)="(https?:)?\/\//);
    for (const { body, type } of page.assets.values()) if (type.startsWith("text/css")) expect(body).not.toMatch(/url\(\s*["']?(https?:)?\/\//);
  });

  it("stays small: its script under 24 KiB gzipped, no chart library in it", () => {
    const js = [...page.assets.values()].filter((a) => a.type.startsWith("text/javascript"));
    const gz = js.reduce((n, a) => n + gzipSync(a.body).length, 0);
    expect(gz).toBeLessThan(24 * 1024);
  });

  it("keeps TypeBox out of its script: the /api/ answers' types are imported type-only", () => {
    const js = [...page.assets.values()].filter((a) => a.type.startsWith("text/javascript"));
    expect(js.filter((a) => a.body.includes("TypeBox.Kind")).length).toBe(0);
  });

  it("forbids framing by another site: X-Frame-Options DENY and CSP frame-ancestors 'none' on /", async () => {
    const res = await fetch(`${gw.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(policyOf(res).get("frame-ancestors")).toBe("'none'");
    expect(res.headers.get("content-type")).toStartWith("text/html");
  });

  it("runs scripts of its own origin only: no inline script, no eval, no other host, no plugin, no <base>", async () => {
    const policy = policyOf(await fetch(`${gw.url}/`));
    expect(Object.fromEntries(["default-src", "script-src", "object-src", "base-uri", "connect-src", "form-action"].map((d) => [d, policy.get(d)]))).toEqual({
      "default-src": "'self'",
      "script-src": "'self'",
      "object-src": "'none'",
      "base-uri": "'none'",
      "connect-src": "'self'",
      "form-action": "'self'",
    });
  });

  it("takes no inline style either: style-src 'self', so injected markup cannot restyle the page over its buttons", async () => {
    expect(policyOf(await fetch(`${gw.url}/`)).get("style-src")).toBe("'self'");
  });

  it("tells browsers not to sniff its files' types (X-Content-Type-Options: nosniff)", async () => {
    expect((await fetch(`${gw.url}/`)).headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("sends the same headers with its script and stylesheet", async () => {
    const top = await fetch(`${gw.url}/`);
    for (const ref of page.assets.keys()) {
      const res = await fetch(new URL(ref, gw.url));
      const seen = (r: Response) => ["x-frame-options", "content-security-policy", "x-content-type-options"].map((h) => r.headers.get(h));
      expect({ ref, headers: seen(res) }).toEqual({ ref, headers: seen(top) });
      await res.arrayBuffer();
    }
  });

  it("keeps Bun's caching: the page revalidated (no-cache, 304 on its ETag), the hashed files immutable", async () => {
    const res = await fetch(`${gw.url}/`);
    await res.text();
    expect(res.headers.get("cache-control")).toBe("no-cache");
    const again = await fetch(`${gw.url}/`, { headers: { "if-none-match": res.headers.get("etag")! } });
    expect(again.status).toBe(304);
    expect(again.headers.get("x-frame-options")).toBe("DENY");
    const [ref] = page.assets.keys();
    const file = await fetch(new URL(ref!, gw.url));
    await file.arrayBuffer();
    expect(file.headers.get("cache-control")).toContain("immutable");
  });

  it("answers HEAD / with the headers and no body", async () => {
    const res = await fetch(`${gw.url}/`, { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(await res.text()).toBe("");
  });

  it("leaves the model API's unknown paths to the endpoint table (404 endpoint_not_found)", async () => {
    await expectError(await fetch(`${gw.url}/nope`), 404, "endpoint_not_found");
  });
});
