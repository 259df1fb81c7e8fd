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
    expect(r.stdout.split("\n")[0]).toMatch(
      /^model +samples +calibrated +median_bytes_per_token +hold_bytes_per_token +typical_error_pct +plain_error_pct +output_samples +output_median_bytes_per_token +cancel_bytes_per_token +output_plain_error_pct$/,
    );
    // A row written before output was learnt: its input window as it was, an empty output window.
    expect(r.stdout.split("\n")[1]!.trim().split(/ +/)).toEqual(["claude-x", "25", "yes", "6", "6", "0", "50", "0", "-", "4", "-"]);
    const csv = await gateway(["usage", "--calibration", "--csv", "--db", install.db]);
    expect(csv.stdout).toBe(
      "model,samples,calibrated,median_bytes_per_token,hold_bytes_per_token,typical_error_pct,plain_error_pct,output_samples,output_median_bytes_per_token,cancel_bytes_per_token,output_plain_error_pct\r\n" +
        "claude-x,25,yes,6,6,0,50,0,,4,\r\n",
    );
  });

  it("shows a model's output window: completed streams' bytes per output token, and the low end a cancelled stream is charged on", async () => {
    const db = new Database(install.db);
    const bytes = Array.from({ length: 25 }, () => 600);
    const output = { bytes: Array.from({ length: 25 }, () => 900), tokens: Array.from({ length: 25 }, (_, i) => (i === 0 ? 450 : 300)) };
    db.run("INSERT INTO settings (name, value) VALUES (?, ?)", ["calibration:claude-y", JSON.stringify({ bytes, tokens: bytes.map(() => 100), output })]);
    db.close();
    const [, y] = await gatewayJson<Record<string, unknown>[]>(["usage", "--calibration", "--db", install.db]);
    // 3 bytes a token but for one answer at 2: cancels are charged at 2.
    expect(y).toMatchObject({ model: "claude-y", output_samples: 25, output_median_bytes_per_token: 3, cancel_bytes_per_token: 2, output_plain_error_pct: 25 });
  });

  it("refuses --account and --since with it in one line: the window is per model, not per account or day", async () => {
    const line = expectOneLineFailure(await gateway(["usage", "--calibration", "--since", "7d", "--db", install.db]));
    expect(line).toContain("--calibration takes no --account or --since");
  });
});
