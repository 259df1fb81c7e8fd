import fc from "fast-check";
import type { RawRequest } from "../../support/raw-http.ts";

// Arbitraries of hostile requests for the fuzz (tests/fault/fuzz.test.ts): a plausible request of
// each route, then wrong types, huge numbers, deep nesting, bytes that are not UTF-8, odd methods,
// paths, content types and header values. Built on the demo catalog's model names.

/** Bun's HTTP parser refuses a request head (request line + headers) of 16 KiB or more with 431. */
export const HEAD_LIMIT = 16 * 1024;

export const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"] as const;

export const PATHS = [
  "/v1/messages",
  "/v1/messages/count_tokens",
  "/v1/chat/completions",
  "/v1/responses",
  "/v1/images/generations",
  "/v1/images/edits",
  "/v1/me",
  "/v1/models",
  "/v1/models/demo",
  "/v1/models/demo-text-1",
  "/status",
  "/api/pricing",
  "/",
  "/v1",
  "/v1/",
  "/v1/unknown",
];

const hi = [{ role: "user", content: "hi" }];
/** A body each route would serve; the fuzz breaks it. */
const BASES: Record<string, Record<string, unknown>> = {
  messages: { model: "demo", max_tokens: 16, messages: hi },
  chat: { model: "demo", max_tokens: 16, messages: hi },
  responses: { model: "demo", input: "hi", max_output_tokens: 16 },
  images: { model: "demo-image", prompt: "a cat", n: 1 },
};
const baseFor = (path: string): string =>
  path.includes("chat") ? "chat" : path.includes("responses") ? "responses" : path.includes("images") ? "images" : "messages";

/** Field paths worth breaking, across the dialects (a field a route does not know is hostile too). */
const FIELDS: (string | number)[][] = [
  ["model"], ["max_tokens"], ["max_completion_tokens"], ["max_output_tokens"], ["messages"], ["messages", 0],
  ["messages", 0, "role"], ["messages", 0, "content"], ["messages", 0, "content", 0], ["system"], ["tools"],
  ["tool_choice"], ["stream"], ["stream_options"], ["stream_options", "include_usage"], ["temperature"], ["top_p"],
  ["top_k"], ["n"], ["stop"], ["stop_sequences"], ["metadata"], ["input"], ["instructions"], ["prompt"], ["size"],
  ["response_format"], ["thinking"], ["reasoning"], ["previous_response_id"], ["__proto__"], ["constructor"],
];

const deep = (n: number, open: string, close: string) => open.repeat(n) + close.repeat(n);

/** Values of the wrong type, out of range or absurd, for any field. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(
    null, true, false, 0, -1, -16, 1.5, 1e21, 1e308, -1e308, 2 ** 53, 2 ** 53 + 2, 2 ** 31, 2 ** 63, 4294967296,
    "", "16", "demo", "\u0000", "\ud800", "\uffff", "‮evil", [], [null], {}, { type: "text" }, [{ type: "image" }],
    { role: "user" }, [{ role: "system", content: "x" }], [{ role: "tool", content: "x" }], "stream",
  ),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 50, unit: "grapheme" }),
  fc.integer({ min: 1, max: 3000 }).map((n) => JSON.parse(deep(n, "[", "]")) as unknown),
  fc.integer({ min: 1, max: 300 }).map((n) => JSON.parse('{"a":'.repeat(n) + "1" + "}".repeat(n)) as unknown),
);

function setAt(obj: Record<string, unknown>, path: (string | number)[], value: unknown, remove: boolean): void {
  let cur: unknown = obj;
  for (const step of path.slice(0, -1)) {
    if (cur === null || typeof cur !== "object") return;
    const next = (cur as Record<string | number, unknown>)[step];
    if (next === null || typeof next !== "object") return;
    cur = next;
  }
  if (cur === null || typeof cur !== "object") return;
  const last = path.at(-1)!;
  // Own property even for __proto__, as a JSON document would carry it.
  if (remove) delete (cur as Record<string | number, unknown>)[last];
  else Object.defineProperty(cur, last, { value, enumerable: true, writable: true, configurable: true });
}

const mutation = fc.record({ path: fc.constantFrom(...FIELDS), value: hostileValue, remove: fc.boolean() });

const enc = new TextEncoder();
const bytesOf = (s: string) => enc.encode(s);

/** A body for this path: a broken variant of the route's own body, or raw hostile bytes. */
const bodyFor = (path: string): fc.Arbitrary<Uint8Array> =>
  fc.oneof(
    { weight: 6, arbitrary: fc.tuple(fc.array(mutation, { minLength: 0, maxLength: 3 }), fc.boolean()).map(([ms, stream]) => {
      const body = structuredClone(BASES[baseFor(path)]!);
      if (stream) body.stream = true;
      for (const m of ms) setAt(body, m.path, m.value, m.remove);
      return bytesOf(JSON.stringify(body));
    }) },
    // Invalid UTF-8 inside an otherwise valid body, and raw bytes.
    { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 8 }).map((junk) => {
      const [a, b] = JSON.stringify({ ...BASES[baseFor(path)], messages: [{ role: "user", content: "@@" }] }).split("@@");
      return new Uint8Array([...bytesOf(a!), 0xff, 0xc0, ...junk, 0xed, 0xa0, 0x80, ...bytesOf(b!)]);
    }) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => bytesOf(JSON.stringify(v) ?? "")) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 20_000 }).map((n) => bytesOf(deep(n, "[", "]"))) },
    { weight: 1, arbitrary: fc.constantFrom("", "{", "null", "[]", '{"model":"demo"}{"model":"demo"}', '{"model":"demo","model":"demo-image"}', "\ufeff{}").map(bytesOf) },
  );

/** Odd spellings of a path: dot segments, encoded slashes, doubled slashes, queries, very long. */
const pathArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...PATHS) },
  { weight: 4, arbitrary: fc.tuple(fc.constantFrom(...PATHS), fc.constantFrom(
    (p: string) => p + "/",
    (p: string) => p.replace("/v1/", "/v1/../v1/"),
    (p: string) => p.replace("/v1/", "/v1/./"),
    (p: string) => p.replace("/v1/", "/x/../v1/"),
    (p: string) => p.replace("/v1/", "/v1%2F"),
    (p: string) => p.replace("/v1/", "/v1%2f"),
    (p: string) => p.replace(/\/([^/]*)$/, "%2F$1"),
    (p: string) => p.replace("/v1/", "//v1//"),
    (p: string) => p.replace("/v1/", "/V1/"),
    (p: string) => p.replace("/v1/", "/%76%31/"),
    (p: string) => p + "/..",
    (p: string) => p + "/%2e%2e",
    (p: string) => p + "?stream=true&model=demo",
    (p: string) => p + "?%zz=%E0%A4%A",
    (p: string) => p + "%00",
    (p: string) => p + ";jsessionid=1",
    (p: string) => p + "#frag",
  )).map(([p, f]) => f(p)) },
  { weight: 1, arbitrary: fc.constantFrom("/v1/models/", "/v1/models/%E0%A4%A", "/v1/models/%2F..%2F", "/v1/models/..", "/v1/models/demo%00", "*") },
  // Long, either side of the parser's limit (nothing between: see HEAD_LIMIT).
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom("/v1/", "/v1/models/", "/v1/messages?q="), fc.oneof(fc.integer({ min: 200, max: 14_000 }), fc.integer({ min: 17_000, max: 30_000 })))
    .map(([p, n]) => p + "a".repeat(n)) },
  { weight: 1, arbitrary: fc.array(fc.constantFrom("v1", "messages", "..", ".", "%2e", "%2F", "%", "~", "@", ":", "models", "demo", "%20", "%C3%A9"), { maxLength: 6 })
    .map((segs) => "/" + segs.join("/")) },
);

/** Header values: printable latin1 (what a proxy may pass), sometimes a control byte the parser refuses. */
const headerValue: fc.Arbitrary<string> = fc.oneof(
  { weight: 20, arbitrary: fc.string({ maxLength: 40, unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)) }) },
  { weight: 1, arbitrary: fc.tuple(fc.string({ maxLength: 10 }), fc.constantFrom(0, 1, 8, 11, 12, 14, 27, 31)).map(([s, c]) => s.replace(/[\r\n]/g, "") + String.fromCharCode(c)) },
  { weight: 1, arbitrary: fc.oneof(fc.integer({ min: 100, max: 14_000 }), fc.integer({ min: 17_000, max: 20_000 })).map((n) => "v".repeat(n)) },
);

export interface Keys {
  good: string;
}

const authArb = (keys: Keys): fc.Arbitrary<[string, string][]> =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom<[string, string][]>([["authorization", `Bearer ${keys.good}`]], [["x-api-key", keys.good]], [["X-Api-Key", keys.good]]) },
    { weight: 3, arbitrary: fc.constantFrom<[string, string][]>(
      [],
      [["authorization", `Bearer ${keys.good}`], ["x-api-key", keys.good]],
      [["x-api-key", keys.good], ["x-api-key", keys.good]],
      [["x-api-key", keys.good], ["x-api-key", "gk_sk_other"]],
      [["authorization", `bearer ${keys.good}`]],
      [["authorization", `Basic ${keys.good}`]],
      [["authorization", `Bearer ${keys.good} `]],
      [["authorization", `Bearer ${keys.good}x`]],
      [["authorization", `Bearer ${keys.good.slice(0, -1)}`]],
      [["x-api-key", ` ${keys.good}`]],
      [["x-api-key", "gk_sk_"]],
      [["x-api-key", "sk-ant-api03-something"]],
    ) },
    { weight: 1, arbitrary: headerValue.map((v): [string, string][] => [["x-api-key", v]]) },
  );

const contentType = fc.constantFrom<[string, string][]>(
  [["content-type", "application/json"]], [["content-type", "application/json"]], [["content-type", "application/json"]],
  [], [["content-type", "text/plain"]], [["content-type", "application/json; charset=latin1"]],
  [["content-type", "multipart/form-data; boundary=xyz"]], [["content-type", "multipart/form-data"]],
  [["content-type", "application/x-www-form-urlencoded"]], [["content-type", "application/json"], ["content-type", "text/html"]],
  [["content-type", "*/*"]], [["content-type", ""]],
);

/** Extra headers a client or a proxy may add, some with odd values or repeated. */
const extraHeaders: fc.Arbitrary<[string, string][]> = fc.array(
  fc.tuple(
    fc.constantFrom("anthropic-version", "anthropic-beta", "idempotency-key", "x-forwarded-for", "accept", "accept-encoding", "x-stainless-arch", "openai-organization", "user-agent", "origin", "access-control-request-method", "x-odd"),
    headerValue,
  ),
  { maxLength: 2 },
);

/** Half the inputs are POSTs to the paid routes, so most of the fuzz reaches the money path. */
const methodAndPath = fc.oneof(
  fc.tuple(fc.constant("POST"), fc.constantFrom("/v1/messages", "/v1/chat/completions", "/v1/responses", "/v1/images/generations", "/v1/messages/count_tokens")),
  fc.tuple(fc.constantFrom(...METHODS), pathArb),
);

export const hostileRequest = (keys: Keys): fc.Arbitrary<RawRequest> =>
  methodAndPath.chain(([method, target]) =>
    fc.record({
      method: fc.constant(method),
      target: fc.constant(target),
      auth: authArb(keys),
      type: contentType,
      extra: extraHeaders,
      body: method === "GET" || method === "HEAD" ? fc.constant(new Uint8Array(0)) : bodyFor(target),
    }).map(({ auth, type, extra, body, ...rest }) => ({ ...rest, headers: [...auth, ...type, ...extra], body })),
  ).filter((r) => {
    // Keep clear of the parser's limit, where a few bytes of port number would decide the answer.
    const n = headBytes(r, 65535);
    return n < HEAD_LIMIT - 1000 || n > HEAD_LIMIT + 500;
  });

/** Bytes of the request head as rawRequest writes it (host, connection and content-length included). */
export function headBytes(req: RawRequest, port: number): number {
  let n = `${req.method} ${req.target} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nconnection: close\r\ncontent-length: ${req.body?.byteLength ?? 0}\r\n\r\n`.length;
  for (const [k, v] of req.headers) n += k.length + v.length + 4;
  return n;
}

/**
 * Whether Bun's HTTP parser refuses the request before the gateway sees it: a head too large, a
 * control byte in a header value, a request target that is neither origin-form nor "*".
 */
export function refusedByHttpParser(req: RawRequest, port: number): boolean {
  if (!req.target.startsWith("/")) return true;
  // eslint-disable-next-line no-control-regex
  return headBytes(req, port) >= HEAD_LIMIT || req.headers.some(([, v]) => /[\x00-\x08\x0a-\x1f]/.test(v));
}
