import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { startGatewayOnMock, type TestGateway } from "../support/gateway.ts";
import { messagesBody, postWithApiKey } from "../support/keyed.ts";
import { errorOf } from "../support/errors.ts";

// Issue 14 item 3: another process holding SQLite's write lock longer than the busy timeout (an
// operator's sqlite3, a long prune, a VACUUM). Today: 500 after the upstream answered, the hold leaked,
// and the 5 s busy timeout blocked the event loop (GET /status took 6.2 s).

let gw: TestGateway;
let stop: () => Promise<void>;
beforeAll(async () => {
  ({ gw, stop } = await startGatewayOnMock({
    models: [{ id: "claude-l", modalities: ["text"], endpoints: ["messages"], pricing: { input: 3, output: 15 }, routes: [{ provider: "anthropic", model: "l" }] }],
    limits: { default_rpm: 10_000 },
  }));
});
afterAll(() => stop());

/** Another connection (as another process would) holding the write lock until released. */
function holdWriteLock(): { release(): void } {
  const other = new Database(gw.config.database);
  other.exec("PRAGMA busy_timeout = 0");
  other.exec("BEGIN IMMEDIATE");
  other.exec("INSERT INTO settings (name, value) VALUES ('lock-test', 'x') ON CONFLICT(name) DO UPDATE SET value = 'y'");
  return {
    release() {
      other.exec("ROLLBACK");
      other.close();
    },
  };
}

describe("a write lock held by another process", () => {
  it("answers 503 database_unavailable (retryable) within a few seconds, charges nothing and leaves no hold", async () => {
    const a = await gw.account(10);
    const lock = holdWriteLock();
    let res: Response;
    const started = performance.now();
    try {
      res = await postWithApiKey(gw, "/v1/messages", messagesBody(100, "claude-l"), a.key);
    } finally {
      lock.release();
    }
    expect(performance.now() - started).toBeLessThan(5000);
    expect(res.status).toBe(503);
    const err = await errorOf(res);
    expect(err.code).toBe("database_unavailable");
    expect(res.headers.get("retry-after")).not.toBeNull();
    const m = gw.money(a.accountId);
    expect(m).toMatchObject({ balance: 10_000_000_000, openHolds: 0, ledgerSum: 10_000_000_000 });
  });

  it("does not block the event loop: GET /status answers at once meanwhile", async () => {
    const a = await gw.account(10);
    const lock = holdWriteLock();
    try {
      const pending = postWithApiKey(gw, "/v1/messages", messagesBody(100, "claude-l"), a.key);
      await Bun.sleep(100);
      const t = performance.now();
      expect((await fetch(`${gw.url}/status`)).status).toBe(200);
      expect(performance.now() - t).toBeLessThan(300);
      await (await pending).text();
    } finally {
      lock.release();
    }
  });

  it("serves and charges again once the lock is let go", async () => {
    const a = await gw.account(10);
    const lock = holdWriteLock();
    const pending = postWithApiKey(gw, "/v1/messages", messagesBody(100, "claude-l"), a.key);
    await Bun.sleep(300);
    lock.release();
    const res = await pending;
    expect(res.status).toBe(200);
    await res.text();
    const m = gw.money(a.accountId);
    expect(m.balance).toBeLessThan(10_000_000_000);
    expect(m).toMatchObject({ openHolds: 0 });
    expect(m.balance).toBe(m.ledgerSum);
  });
});
