import { afterAll, describe, expect, it } from "bun:test";
import { UsageError } from "../../src/cli/args.ts";
import { healthcheckCommand } from "../../src/cli/healthcheck.ts";
import { freePort, tempInstallation } from "../support/cli.ts";

// The Dockerfile's HEALTHCHECK runs `gateway healthcheck`. GET /healthz is served by the gateway
// itself; here a loopback server answers it, which is all the command depends on.
const healthy = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => new Response("ok", { status: new URL(req.url).pathname === "/healthz" ? 200 : 404 }) });
const unready = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("no", { status: 503 }) });
afterAll(() => {
  healthy.stop(true);
  unready.stop(true);
});

async function failure(run: Promise<void>): Promise<string> {
  const e = await run.then(() => null, (err: unknown) => err);
  expect(e).toBeInstanceOf(UsageError);
  return (e as Error).message;
}

describe("gateway healthcheck", () => {
  it("succeeds when GET /healthz on the port answers 200", async () => {
    await expect(healthcheckCommand(["--port", String(healthy.port)])).resolves.toBeUndefined();
  });

  it("takes the port from PORT when --port is not given", async () => {
    const before = process.env.PORT;
    process.env.PORT = String(healthy.port);
    try {
      await expect(healthcheckCommand([])).resolves.toBeUndefined();
    } finally {
      if (before === undefined) delete process.env.PORT;
      else process.env.PORT = before;
    }
  });

  it("takes the port from the --config file's [server] port when neither --port nor PORT is given", async () => {
    const f = tempInstallation(`[server]\nhost = "127.0.0.1"\nport = ${healthy.port}\n`);
    const before = process.env.PORT;
    delete process.env.PORT;
    try {
      await expect(healthcheckCommand(["--config", f.config])).resolves.toBeUndefined();
    } finally {
      if (before !== undefined) process.env.PORT = before;
      f.remove();
    }
  });

  it("fails with one line naming the address when nothing listens", async () => {
    const port = freePort();
    const message = await failure(healthcheckCommand(["--port", String(port)]));
    expect(message).toContain(`http://127.0.0.1:${port}/healthz`);
    expect(message).toContain("connection refused");
    expect(message).not.toContain("\n");
  });

  it("fails with the status when /healthz answers anything but 200", async () => {
    const message = await failure(healthcheckCommand(["--port", String(unready.port)]));
    expect(message).toBe(`healthcheck: http://127.0.0.1:${unready.port}/healthz answered 503`);
  });

  it("refuses a port that is not a port number", async () => {
    expect(await failure(healthcheckCommand(["--port", "http"]))).toBe("--port: not a port number: http");
  });
});
