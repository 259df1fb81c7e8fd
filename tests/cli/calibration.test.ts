import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { Database } from "bun:sqlite";
import { expectOneLineFailure, gateway, gatewayJson, tempInstallation } from "../support/cli.ts";

// gateway usage --calibration: the estimator's window per model as the server saved it in settings.
// The numbers after real traffic and a restart: tests/ledger/calibration-http.test.ts.

const install = tempInstallation();
beforeAll(async () => {
  await gatewayJson(["migrate", "--db", install.db]);
});
afterAll(() => install.remove());

describe("gateway usage --calibration", () => {
  it("says there is no calibration yet on a database no request has settled in", async () => {
    const r = await gateway(["usage", "--calibration", "--db", install.db]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe("no calibration yet: no settled request has reported its input tokens");
    expect(await gatewayJson<unknown[]>(["usage", "--calibration", "--db", install.db])).toEqual([]);
  });

  it("prints a table per model for people and CSV for scripts", async () => {
    const db = new Database(install.db);
    const bytes = Array.from({ length: 25 }, () => 600);
    db.run("INSERT INTO settings (name, value) VALUES (?, ?)", ["calibration:claude-x", JSON.stringify({ bytes, tokens: bytes.map(() => 100) })]);
    db.close();
    const r = await gateway(["usage", "--calibration", "--db", install.db]);
    expect(r.stdout.split("\n")[0]).toMatch(/^model +samples +calibrated +median_bytes_per_token +hold_bytes_per_token +typical_error_pct +plain_error_pct$/);
    expect(r.stdout.split("\n")[1]!.split(/ +/)).toEqual(["claude-x", "25", "yes", "6", "6", "0", "50"]);
    const csv = await gateway(["usage", "--calibration", "--csv", "--db", install.db]);
    expect(csv.stdout).toBe("model,samples,calibrated,median_bytes_per_token,hold_bytes_per_token,typical_error_pct,plain_error_pct\r\nclaude-x,25,yes,6,6,0,50\r\n");
  });

  it("refuses --account and --since with it in one line: the window is per model, not per account or day", async () => {
    const line = expectOneLineFailure(await gateway(["usage", "--calibration", "--since", "7d", "--db", install.db]));
    expect(line).toContain("--calibration takes no --account or --since");
  });
});
