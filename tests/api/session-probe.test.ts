import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import type { TestGateway } from "../support/gateway.ts";
import { body, Browser, dashboardGateway } from "./support.ts";

// GET /api/session (docs/dashboard.md#routes): the page's first question, answered 200 whether or
// not the cookie opens a session, so a visitor's first page shows no refused request in the console.

setDefaultTimeout(30_000);

let gw: TestGateway;
beforeAll(async () => {
  gw = await dashboardGateway();
});
afterAll(() => gw.stop());

describe("GET /api/session", () => {
  it("answers a visitor without a cookie 200 logged_in false", async () => {
    const res = await new Browser(gw.url).call("GET", "/api/session");
    expect(res.status).toBe(200);
    expect(await body(res)).toEqual({ logged_in: false, password_reset: false });
  });

  it("answers a stale cookie 200 logged_in false", async () => {
    const b = new Browser(gw.url);
    b.cookie = "not-a-session";
    const res = await b.call("GET", "/api/session");
    expect([res.status, await body(res)]).toEqual([200, { logged_in: false, password_reset: false }]);
  });

  it("answers a logged-in browser with its account, as GET /api/me has it", async () => {
    const b = new Browser(gw.url);
    const { email } = await b.register();
    const res = await b.call("GET", "/api/session");
    const me = await body(await b.call("GET", "/api/me"));
    expect(await body(res)).toEqual({ logged_in: true, account: me });
    expect(me.email).toBe(email);
  });
});
