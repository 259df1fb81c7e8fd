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
    expect(res.headers.get("content-security-policy")).toBe("frame-ancestors 'none'");
    expect(res.headers.get("content-type")).toStartWith("text/html");
  });

  it("sends the same framing headers with its script and stylesheet", async () => {
    for (const ref of page.assets.keys()) {
      const res = await fetch(new URL(ref, gw.url));
      expect({ ref, xfo: res.headers.get("x-frame-options"), csp: res.headers.get("content-security-policy") }).toEqual({ ref, xfo: "DENY", csp: "frame-ancestors 'none'" });
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
