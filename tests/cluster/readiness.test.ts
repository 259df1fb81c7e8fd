// GET /readyz of an instance on PostgreSQL as a load balancer polls it (docs/scaling.md#health-checks-behind-the-load-balancer):
// ready means this instance can write, not merely that its database answers a SELECT or its
// [limits] store a PING.
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { startCluster, type TestCluster } from "../support/cluster.ts";

setDefaultTimeout(120_000);

let cluster: TestCluster;
let db: SQL;

beforeAll(async () => {
  // hold_timeout_s 6: a heartbeat every 1.5 s.
  cluster = await startCluster({ instances: 1, extra: "\n[cluster]\nhold_timeout_s = 6\n" });
  db = new SQL(cluster.databaseUrl);
});

afterAll(async () => {
  await db?.close();
  await cluster?.stop();
});

/** Every session of the server, the instance's pool included, refuses writes from its next transaction (a standby, a full-disk guard). */
async function readOnly(on: boolean): Promise<void> {
  await db.unsafe(on ? "ALTER SYSTEM SET default_transaction_read_only = on" : "ALTER SYSTEM RESET default_transaction_read_only");
  await db.unsafe("SELECT pg_reload_conf()");
}

/** Polls /readyz until it answers `status`; that answer. */
async function readyzUntil(status: number, limitMs: number): Promise<Response> {
  const start = performance.now();
  for (;;) {
    const res = await fetch(`${cluster.instances[0]!.url}/readyz`);
    if (res.status === status) return res;
    await res.arrayBuffer();
    if (performance.now() - start > limitMs) throw new Error(`after ${limitMs} ms /readyz still answers ${res.status}`);
    await Bun.sleep(100);
  }
}

describe("GET /readyz of an instance whose PostgreSQL turns read-only", () => {
  it("says not ready (503 database_unavailable) within a heartbeat, as its paid requests are refused", async () => {
    expect((await fetch(`${cluster.instances[0]!.url}/readyz`)).status).toBe(200);
    await readOnly(true);
    try {
      // A period (1.5 s) and the failed beat's answer; generous for a loaded machine.
      const res = await readyzUntil(503, 10_000);
      const body = (await res.json()) as { error: { type: string; code: string; request_id: string } };
      expect(body.error.type).toBe("database_unavailable");
      expect(body.error.code).toBe("database_unavailable");
      expect(body.error.request_id).toStartWith("gw_");
    } finally {
      await readOnly(false);
    }
  });

  it("says ready again once the database takes writes", async () => {
    await readOnly(true);
    await readyzUntil(503, 10_000);
    await readOnly(false);
    await readyzUntil(200, 10_000);
  });
});

describe("GET /readyz of an instance whose [limits] store answers but refuses writes", () => {
  it("says not ready while the store is a read-only replica (after a failover)", async () => {
    await cluster.redis.send("REPLICAOF", "127.0.0.1", "1");
    try {
      const res = await fetch(`${cluster.instances[0]!.url}/readyz`);
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("rate_limit_unavailable");
    } finally {
      await cluster.redis.send("REPLICAOF", "NO", "ONE");
    }
    expect((await fetch(`${cluster.instances[0]!.url}/readyz`)).status).toBe(200);
  });

  it("says not ready while the store is out of memory (maxmemory with noeviction)", async () => {
    await cluster.redis.send("CONFIG", "SET", "maxmemory-policy", "noeviction");
    await cluster.redis.send("CONFIG", "SET", "maxmemory", "1");
    try {
      expect((await fetch(`${cluster.instances[0]!.url}/readyz`)).status).toBe(503);
    } finally {
      await cluster.redis.send("CONFIG", "SET", "maxmemory", "0");
    }
    expect((await fetch(`${cluster.instances[0]!.url}/readyz`)).status).toBe(200);
  });
});
