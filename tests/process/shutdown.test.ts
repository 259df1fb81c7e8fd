import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { join } from "node:path";
import { startMockUpstream, type MockUpstream } from "../support/mock-upstream.ts";
import { anthropicConfig, startServe, tempInstallation, type Served } from "../support/cli.ts";
import { errorOf } from "../support/errors.ts";

// Each test starts and stops a gateway process with its own deadlines; a loaded 2-core machine needs more than 5 s.
setDefaultTimeout(30_000);

// Issue 13, the process: SIGTERM and SIGINT drain what is in flight up to [server] shutdown_timeout_s,
// then end the rest with an error (free, hold released, log row written), close the database and
// exit 0. SIGHUP does not stop the server (it reloads the config: reload.test.ts).

let up: MockUpstream;
const folders: { remove(): void }[] = [];
beforeAll(async () => {
  up = await startMockUpstream();
});
afterAll(async () => {
  await up.stop();
  folders.forEach((f) => f.remove());
});

async function gateway(timeoutS: number): Promise<{ s: Served; url: string; key: string; db: string }> {
  const f = tempInstallation(anthropicConfig(up.url, { shutdown_timeout_s: timeoutS }));
  folders.push(f);
  const db = join(f.dir, "gateway.db");
  const create = (args: string[]) => Bun.spawnSync(["bun", join(import.meta.dir, "../../src/cli/main.ts"), ...args, "--config", f.config, "--db", db, "--json"]);
  expect(create(["migrate"]).exitCode).toBe(0);
  expect(create(["account", "create", "--email", "a@test.local", "--balance", "5"]).exitCode).toBe(0);
  const key = JSON.parse(create(["key", "create", "--email", "a@test.local", "--rpm", "1000"]).stdout.toString()).key as string;
  const s = startServe(["--config", f.config, "--port", "0", "--db", db]);
  return { s, url: await s.url(), key, db };
}

const messages = (url: string, key: string, stream: boolean) =>
  fetch(`${url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "claude-x", max_tokens: 100, stream, messages: [{ role: "user", content: "Hi" }] }),
  });

/** Balance, ledger sum and the request log of the stopped server's database. */
function books(db: string) {
  const d = new Database(db, { readonly: true });
  try {
    const acc = d.query("SELECT balance_nano AS b, (SELECT sum(amount_nano) FROM ledger_entries WHERE account_id = accounts.id) AS l FROM accounts").get() as { b: number; l: number };
    const logs = d.query("SELECT status, error_code, cost_nano FROM request_logs WHERE path = '/v1/messages'").all() as { status: number; error_code: string | null; cost_nano: number }[];
    return { balance: acc.b, ledgerSum: acc.l, logs };
  } finally {
    d.close();
  }
}

describe("SIGTERM", () => {
  it("lets a stream in flight finish, charges it, and exits 0", async () => {
    const { s, url, key, db } = await gateway(30);
    up.script({ kind: "slow_stream", events: 6, intervalMs: 150 });
    const res = await messages(url, key, true);
    const text = res.text();
    await Bun.sleep(100);
    s.kill("SIGTERM");
    const body = await text;
    expect(body).toContain("event: message_stop");
    expect(await s.exited()).toBe(0);
    const b = books(db);
    expect(b.balance).toBe(b.ledgerSum);
    expect(b.balance).toBeLessThan(5_000_000_000);
    expect(b.logs).toMatchObject([{ status: 200, error_code: null }]);
  });

  it("refuses new connections while it drains", async () => {
    const { s, url, key } = await gateway(30);
    up.script({ kind: "slow_stream", events: 5, intervalMs: 150 });
    const res = await messages(url, key, true);
    const text = res.text();
    await Bun.sleep(100);
    s.kill("SIGTERM");
    await s.until(/stopping/);
    expect(fetch(`${url}/status`)).rejects.toThrow();
    await text;
    expect(await s.exited()).toBe(0);
  });

  it("ends a stream still running at the deadline with an error event, free of charge, and exits 0", async () => {
    const { s, url, key, db } = await gateway(1);
    up.script({ kind: "slow_stream", events: 40, intervalMs: 250 });
    const res = await messages(url, key, true);
    expect(res.status).toBe(200);
    const text = res.text();
    await Bun.sleep(300);
    const stoppedAt = performance.now();
    s.kill("SIGTERM");
    const body = await text;
    expect(body).toContain("event: error");
    expect(body).toContain("shutting down");
    expect(await s.exited()).toBe(0);
    expect(performance.now() - stoppedAt).toBeLessThan(6000);
    const b = books(db);
    expect(b.balance).toBe(5_000_000_000);
    expect(b.ledgerSum).toBe(5_000_000_000);
    // The status the client got (200, then an error event), not 0.
    expect(b.logs).toMatchObject([{ status: 200, error_code: "shutdown", cost_nano: 0 }]);
  });

  it("answers a request still waiting for its upstream at the deadline with a retryable error, free of charge", async () => {
    const { s, url, key, db } = await gateway(1);
    up.script({ kind: "hang", ms: 20_000 });
    const pending = messages(url, key, false);
    await Bun.sleep(300);
    s.kill("SIGTERM");
    const res = await pending;
    expect(res.status).toBe(502);
    const err = await errorOf(res);
    expect(err.type).toBe("upstream_unavailable");
    expect(err.message).toContain("shutting down");
    expect(await s.exited()).toBe(0);
    const b = books(db);
    expect(b.balance).toBe(5_000_000_000);
    expect(b.logs).toMatchObject([{ status: 502, cost_nano: 0 }]);
  });
});

describe("SIGINT", () => {
  it("stops like SIGTERM: drains, closes the database, exits 0", async () => {
    const { s, url, key } = await gateway(30);
    expect((await messages(url, key, false)).status).toBe(200);
    s.kill("SIGINT");
    expect(await s.exited()).toBe(0);
    expect(s.out).toContain("database closed");
  });
});

describe("SIGHUP", () => {
  it("does not stop the server", async () => {
    const { s, url, key } = await gateway(30);
    s.kill("SIGHUP");
    await s.until(/gateway: reloaded /);
    expect((await messages(url, key, false)).status).toBe(200);
    s.kill("SIGTERM");
    expect(await s.exited()).toBe(0);
  });
});
