import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { hi, keyHeaders } from "../support/http.ts";
import { postWithApiKey } from "../support/keyed.ts";
import { expectError } from "../support/errors.ts";

// A request its key or its buckets refuse is answered before its body is read: a count_tokens of
// 20 MiB, refused, used to be read and parsed whole first (96 of them in 6 s slowed every other
// account's requests from 1 ms to 181 ms). Each body here starts and never ends; an answer at all
// proves the server did not wait for it.

const MiB = 1024 * 1024;
const SOON_MS = 5_000;

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ limits: { count_tokens_rpm: 1, account_rpm: 3 } });
});
afterAll(() => gw.stop());

/** A body that sends one chunk of JSON and then stays open: a client still uploading. */
function endlessBody(): { body: ReadableStream<Uint8Array>; end(): void } {
  let close = () => {};
  let sent = false;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      close = () => {
        try {
          c.close();
        } catch {
          // fetch has let go of the body already (the answer came, or the wait was given up).
        }
      };
      if (!sent) {
        sent = true;
        c.enqueue(new TextEncoder().encode('{"model": "demo", "messages": [{"role": "user", "content": "'));
      }
      return new Promise<void>(() => {});
    },
  });
  return { body, end: () => close() };
}

/** POSTs an endless body; the answer, or null when none came within SOON_MS. */
async function postEndless(path: string, headers: Record<string, string>): Promise<Response | null> {
  const upload = endlessBody();
  const aborted = new AbortController();
  const timer = setTimeout(() => aborted.abort(), SOON_MS);
  try {
    return await fetch(`${gw.url}${path}`, { method: "POST", headers, body: upload.body, duplex: "half", signal: aborted.signal } as RequestInit);
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
    upload.end();
  }
}

const countBody = { model: "demo", messages: hi };

describe("a count_tokens request refused by a rate limit", () => {
  it("is answered 429 by its key's count_tokens bucket while its body is still coming", async () => {
    const a = await gw.account(1);
    expect((await postWithApiKey(gw, "/v1/messages/count_tokens", countBody, a.key)).status).toBe(200);
    const res = await postEndless("/v1/messages/count_tokens", keyHeaders(a.key));
    expect(res).not.toBeNull();
    await expectError(res!, 429, "rate_limit");
  });

  it("is answered 429 by its account's bucket while its body is still coming", async () => {
    const a = await gw.account(1);
    for (let i = 0; i < 3; i++) expect((await postWithApiKey(gw, "/v1/messages/count_tokens", countBody, (await gw.key(a.accountId)).key)).status).toBe(200);
    const res = await postEndless("/v1/messages/count_tokens", keyHeaders((await gw.key(a.accountId)).key));
    expect(res).not.toBeNull();
    const err = await expectError(res!, 429, "rate_limit");
    expect(err.message).toContain("this account");
  });

  it("is answered at once when it declares 8 MiB (its limit) and sends none of it", async () => {
    const a = await gw.account(1);
    expect((await postWithApiKey(gw, "/v1/messages/count_tokens", countBody, a.key)).status).toBe(200);
    const { promise, resolve } = Promise.withResolvers<string>();
    let got = "";
    const socket = await Bun.connect({
      hostname: "127.0.0.1",
      port: Number(new URL(gw.url).port),
      socket: {
        data(_s, d) {
          got += Buffer.from(d).toString("latin1");
          if (got.includes("\r\n\r\n")) resolve(got);
        },
        close: () => resolve(got),
      },
    });
    socket.write(`POST /v1/messages/count_tokens HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${a.key}\r\ncontent-type: application/json\r\ncontent-length: ${8 * MiB}\r\n\r\n{"model":`);
    const head = await Promise.race([promise, Bun.sleep(SOON_MS).then(() => "no answer")]);
    socket.end();
    expect(head).toStartWith("HTTP/1.1 429 ");
    expect(head.toLowerCase()).toContain("retry-after: ");
  });
});

describe("a request refused by its key", () => {
  it("is answered 401 while its body is still coming", async () => {
    const res = await postEndless("/v1/messages/count_tokens", keyHeaders("gk_sk_not-a-key-of-this-gateway-00000000000"));
    expect(res).not.toBeNull();
    await expectError(res!, 401, "no-key", "authentication_error");
  });

  it("is answered 403 inactive on /v1/chat/completions while its body is still coming", async () => {
    const a = await gw.account(1);
    await gw.services.keys.revoke(a.keyId);
    const res = await postEndless("/v1/chat/completions", keyHeaders(a.key));
    expect(res).not.toBeNull();
    await expectError(res!, 403, "inactive", "permission_error");
  });
});
