import { afterAll, describe, expect, it } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Sessions } from "../../src/auth/sessions.ts";
import { migrate, openDatabase } from "../../src/db/client.ts";
import { createAccount } from "../../src/ledger/accounts.ts";
import { Ledger } from "../../src/ledger/ledger.ts";

const dir = mkdtempSync(join(tmpdir(), "gw-sessions-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const db = openDatabase(join(dir, "g.db"));
migrate(db);
const ledger = new Ledger(db);
let n = 0;
const account = () => createAccount(db, ledger, `s${++n}@test.local`).id;

const HOUR = 3_600_000;
let clock = 1_000_000;
const sessions = new Sessions(db, 24 * HOUR, () => clock);
const row = (id: string) => db.$client.query("SELECT * FROM sessions WHERE id = ?").get(id) as Record<string, number | string | null> | null;

describe("dashboard sessions", () => {
  it("keep only the SHA-256 of the cookie's token, never the token", () => {
    const { token } = sessions.open(account());
    expect(row(token)).toBeNull();
    expect(row(Bun.SHA256.hash(token, "hex"))).not.toBeNull();
  });

  it("are 256-bit random tokens, a new one at every open", () => {
    const acc = account();
    const a = sessions.open(acc).token;
    const b = sessions.open(acc).token;
    expect(a).not.toBe(b);
    expect(Buffer.from(a, "base64url").byteLength).toBe(32);
  });

  it("find the account of a live token", () => {
    const acc = account();
    const { token } = sessions.open(acc);
    expect(sessions.find(token)?.accountId).toBe(acc);
  });

  it("find nothing for a token nobody was given", () => {
    expect(sessions.find("not-a-token")).toBeNull();
  });

  it("end at their expiry", () => {
    const { token, expiresAt } = sessions.open(account());
    clock = expiresAt - 1;
    expect(sessions.find(token)).not.toBeNull();
    clock = expiresAt;
    expect(sessions.find(token)).toBeNull();
  });

  it("end when revoked", () => {
    const { token } = sessions.open(account());
    sessions.revoke(token);
    expect(sessions.find(token)).toBeNull();
  });

  it("end all together but the one kept", () => {
    const acc = account();
    const [a, b, c] = [sessions.open(acc), sessions.open(acc), sessions.open(acc)];
    const kept = sessions.find(b.token)!;
    expect(sessions.revokeAll(acc, kept.id)).toBe(2);
    expect([a, b, c].map((s) => sessions.find(s.token) !== null)).toEqual([false, true, false]);
  });

  it("of another account stay when one account logs out everywhere", () => {
    const other = sessions.open(account());
    sessions.revokeAll(account());
    expect(sessions.find(other.token)).not.toBeNull();
  });

  it("write last_seen_at at most once a minute", () => {
    const { token } = sessions.open(account());
    const id = Bun.SHA256.hash(token, "hex");
    const opened = row(id)!.last_seen_at;
    clock += 30_000;
    sessions.find(token);
    expect(row(id)!.last_seen_at).toBe(opened);
    clock += 30_000;
    sessions.find(token);
    expect(row(id)!.last_seen_at).toBe(clock);
  });
});
