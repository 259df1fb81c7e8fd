import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { expectOneLineFailure, gateway, gatewayJson } from "../support/cli.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { sqlGet } from "../support/keyed.ts";

// `gateway account note` and the note in `gateway account show` (docs/operations.md#the-admin-cli):
// the same note the admin page reads and writes, on the database of a running server.

// Each test starts gateway processes; on a loaded 2-core machine that takes more than the default 5 s.
setDefaultTimeout(30_000);

let gw: TestGateway;
let db: string;
beforeAll(async () => {
  gw = await startTestGateway();
  db = gw.config.database;
});
afterAll(() => gw.stop());

let seq = 0;
async function account(): Promise<{ id: number; email: string }> {
  const email = `note${process.pid}-${++seq}@cli.test`;
  const { id } = await gatewayJson<{ id: number }>(["account", "create", "--email", email, "--db", db]);
  return { id, email };
}
const show = (email: string) => gatewayJson<{ note: { text: string; updated_at: string; updated_by: string | null } | null }>(["account", "show", "--email", email, "--db", db]);

describe("gateway account note", () => {
  it("sets the note the admin page shows, with an audit row naming no admin", async () => {
    const a = await account();
    expect(await gatewayJson(["account", "note", "--email", a.email, "--text", "  pays by invoice  ", "--db", db])).toEqual({ id: a.id, email: a.email, note: "pays by invoice" });
    expect(await gw.services.adminQueries.noteOf(a.id)).toMatchObject({ note: "pays by invoice", updatedBy: null });
    const audit = sqlGet<{ action: string; actor_account_id: number | null; detail: string }>(gw, "SELECT action, actor_account_id, detail FROM audit_log WHERE target_account_id = ? ORDER BY id DESC LIMIT 1", a.id);
    expect(audit).toEqual({ action: "account_note_set", actor_account_id: null, detail: "pays by invoice" });
  });

  it('--text "" removes the note', async () => {
    const a = await account();
    await gatewayJson(["account", "note", "--email", a.email, "--text", "temporary", "--db", db]);
    expect(await gatewayJson(["account", "note", "--email", a.email, "--text", "", "--db", db])).toMatchObject({ note: null });
    expect(await gw.services.adminQueries.noteOf(a.id)).toBeNull();
    expect((await show(a.email)).note).toBeNull();
  });

  it("refuses a note over 2,000 characters in one line, and keeps the one there", async () => {
    const a = await account();
    await gatewayJson(["account", "note", "--email", a.email, "--text", "kept", "--db", db]);
    const line = expectOneLineFailure(await gateway(["account", "note", "--email", a.email, "--text", "x".repeat(2001), "--db", db]));
    expect(line).toContain("--text: 2001 characters; a note holds at most 2000");
    expect((await gw.services.adminQueries.noteOf(a.id))?.note).toBe("kept");
  });

  it("without --text is refused in one line saying how to remove a note", async () => {
    const a = await account();
    expect(expectOneLineFailure(await gateway(["account", "note", "--email", a.email, "--db", db]))).toContain('--text is required (--text "" removes the note)');
  });
});

describe("gateway account show", () => {
  it("prints the note an admin wrote on the admin page, naming the admin", async () => {
    const admin = await account();
    const a = await account();
    await gw.services.adminQueries.setNote(a.id, "asked for an invoice", admin.id);
    expect((await show(a.email)).note).toMatchObject({ text: "asked for an invoice", updated_by: admin.email });
    const text = await gateway(["account", "show", "--email", a.email, "--db", db]);
    expect(text.stdout).toContain(`note (${admin.email}, `);
    expect(text.stdout).toContain("): asked for an invoice");
  });

  it("says there is no note with null in --json, and nothing in text", async () => {
    const a = await account();
    expect((await show(a.email)).note).toBeNull();
    expect((await gateway(["account", "show", "--email", a.email, "--db", db])).stdout).not.toContain("note (");
  });
});
