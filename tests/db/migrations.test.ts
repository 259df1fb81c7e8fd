// The migrations the program carries (the same as drizzle/: migration-order.test.ts), applied to an old database without
// losing a row, and compiled into the one-file binary.
import { afterAll, describe, expect, it } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate, openDatabase } from "../../src/store/engine/sqlite/client.ts";
import { embeddedMigrations } from "../../src/store/engine/sqlite/migrations.gen.ts";
import { ROOT } from "../support/cli.ts";
import { loadDashboardPage } from "../support/dashboard-page.ts";

const dir = mkdtempSync(join(tmpdir(), "gw-migrations-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("upgrading a database made by the first migration", () => {
  const file = join(dir, "old.db");
  const old = new Database(file, { create: true });
  for (const statement of embeddedMigrations[0]!.sql.split("--> statement-breakpoint")) old.run(statement);
  // The bookkeeping drizzle keeps, as the first release left it.
  old.run('CREATE TABLE "__drizzle_migrations" (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric)');
  old.run("INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('h0', ?)", [embeddedMigrations[0]!.when]);
  old.run("INSERT INTO accounts (email, balance_nano, created_at) VALUES ('a@x', 700, 1)");
  old.run("INSERT INTO api_keys (account_id, prefix, key_hash, created_at) VALUES (1, 'gk_sk_ab', 'h', 1)");
  old.run("INSERT INTO ledger_entries (account_id, kind, amount_nano, created_at) VALUES (1, 'top_up', 1000, 1), (1, 'charge', -300, 2)");
  old.run("INSERT INTO ledger_entries (account_id, kind, amount_nano, external_ref, created_at) VALUES (1, 'top_up', 5, 'pi_1', 3)");
  old.run("INSERT INTO request_logs (request_id, method, path, status, latency_ms, created_at) VALUES ('gw_old1', 'POST', '/v1/messages', 200, 5, 2)");
  old.close();

  const db = openDatabase(file);
  const applied = migrate(db);
  const all = (sql: string) => db.$client.query(sql).all();

  it("applies only what is new", () => {
    expect(applied).toBe(embeddedMigrations.length - 1);
  });

  it("keeps every ledger row, with its id", () => {
    expect(all("SELECT id, kind, amount_nano FROM ledger_entries ORDER BY id")).toEqual([
      { id: 1, kind: "top_up", amount_nano: 1000 },
      { id: 2, kind: "charge", amount_nano: -300 },
      { id: 3, kind: "top_up", amount_nano: 5 },
    ]);
  });

  it("keeps the request log rows, now in a table keyed by the request id alone", () => {
    expect(all("SELECT request_id, status FROM request_logs")).toEqual([{ request_id: "gw_old1", status: 200 }]);
    expect(all("SELECT sql FROM sqlite_master WHERE name = 'request_logs'")[0]).toMatchObject({ sql: expect.stringContaining("WITHOUT ROWID") });
  });

  it("still refuses a payment reference twice", () => {
    expect(() => db.$client.run("INSERT INTO ledger_entries (account_id, kind, amount_nano, external_ref, created_at) VALUES (1, 'top_up', 1, 'pi_1', 4)")).toThrow(
      /UNIQUE/,
    );
  });

  it("gives an old account the dashboard's columns: not an admin, no low-balance threshold", () => {
    expect(all("SELECT admin, low_balance_nano FROM accounts")).toEqual([{ admin: 0, low_balance_nano: null }]);
  });

  it("passes SQLite's own integrity and foreign-key checks", () => {
    expect(all("PRAGMA integrity_check")).toEqual([{ integrity_check: "ok" }]);
    expect(all("PRAGMA foreign_key_check")).toEqual([]);
  });
});

describe("the compiled binary", () => {
  const binary = join(dir, "gateway");

  it("builds with bun build --compile and serves the demo catalog from its embedded migrations", async () => {
    const build = Bun.spawnSync(["bun", "build", "--compile", "src/cli/main.ts", "--outfile", binary], { cwd: ROOT });
    expect(build.exitCode).toBe(0);
    // Run from an empty directory: nothing but the binary itself.
    const cwd = mkdtempSync(join(dir, "run-"));
    const proc = Bun.spawn([binary, "serve", "--port", "0", "--db", join(cwd, "g.db"), "--json"], {
      cwd,
      stdout: "pipe",
      env: { PATH: process.env.PATH ?? "" },
    });
    try {
      const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
      let text = "";
      while (!text.includes("\n")) {
        const { done, value } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      const started = JSON.parse(text.split("\n")[0]!) as { port: number; first_key: string };
      const base = `http://127.0.0.1:${started.port}`;
      expect(((await (await fetch(`${base}/status`)).json()) as { status: string }).status).toBe("ok");
      const res = await fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${started.first_key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "demo", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }),
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { usage: { cost_usd: number } }).usage.cost_usd).toBeGreaterThan(0);
      // The dashboard's HTML import was bundled into the binary: the page and its assets, with no source beside it.
      expect((await loadDashboardPage(base)).assets.size).toBe(2);
      const policy = (await fetch(`${base}/`)).headers.get("content-security-policy");
      expect(policy).toContain("script-src 'self'");
      expect(policy).toContain("frame-ancestors 'none'");
    } finally {
      proc.kill();
      await proc.exited;
    }
  }, 60_000);
});
