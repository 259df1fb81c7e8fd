// `[database] url` (DESIGN.md "Scaling past one machine"): a PostgreSQL URL, checked at load;
// `gateway migrate` applies the PostgreSQL migrations to it; serve and every other command use it
// instead of the SQLite file.
import { afterAll, beforeAll, describe, expect, it, setDefaultTimeout } from "bun:test";
import { SQL } from "bun";
import { existsSync } from "node:fs";
import { ConfigError, parseConfig } from "../../src/config/load.ts";
import { embeddedMigrations } from "../../src/store/engine/postgres/migrations.gen.ts";
import { expectOneLineFailure, gateway, tempInstallation } from "../support/cli.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";

setDefaultTimeout(60_000);

/** The ConfigError parseConfig refuses `raw` with: its message. */
function refusal(raw: unknown): string {
  const thrown = (() => { try { parseConfig(raw, "gateway.toml", {}); } catch (e) { return e; } })();
  expect(thrown).toBeInstanceOf(ConfigError);
  return (thrown as Error).message;
}

describe("[database] url in the config", () => {
  it("is absent by default: SQLite at [server] database", () => {
    expect(parseConfig({}, "gateway.toml").databaseUrl).toBeNull();
  });

  it("takes a postgres:// URL", () => {
    expect(parseConfig({ database: { url: "postgres://gw:pw@db:5432/gateway" } }, "gateway.toml").databaseUrl).toBe("postgres://gw:pw@db:5432/gateway");
  });

  it("takes a postgresql:// URL", () => {
    expect(parseConfig({ database: { url: "postgresql://db/gateway" } }, "gateway.toml").databaseUrl).toBe("postgresql://db/gateway");
  });

  it("takes the password from the environment", () => {
    const config = parseConfig({ database: { url: "postgres://gw:${PGPASS}@db/gateway" } }, "gateway.toml", { PGPASS: "s3cret" });
    expect(config.databaseUrl).toBe("postgres://gw:s3cret@db/gateway");
  });

  it("refuses another scheme, naming database.url and never the value's password", () => {
    const message = refusal({ database: { url: "mysql://gw:hunter2@db/gateway" } });
    expect(message).toBe("gateway.toml: database.url: not a PostgreSQL URL such as postgres://user:password@host:5432/gateway (got mysql:)");
  });

  it("refuses a file path", () => {
    expect(refusal({ database: { url: "data/gateway.db" } })).toStartWith("gateway.toml: database.url: not a PostgreSQL URL");
  });

  it("refuses a URL without a host", () => {
    expect(refusal({ database: { url: "postgres:///gateway" } })).toStartWith("gateway.toml: database.url: not a PostgreSQL URL");
  });

  it("refuses an empty url", () => {
    expect(refusal({ database: { url: "" } })).toStartWith("gateway.toml: database.url: ");
  });

  it("refuses an unknown field of [database]", () => {
    expect(refusal({ database: { uri: "postgres://db/gateway" } })).toStartWith("gateway.toml: database.uri: unknown field");
  });
});

describe("the CLI with [database] url", () => {
  let pg: TestPostgres;
  let url: string;
  const installs: { remove(): void }[] = [];
  const installation = (databaseUrl: string) => {
    const inst = tempInstallation(`[server]\nhost = "127.0.0.1"\n\n[database]\nurl = "${databaseUrl}"\n`);
    installs.push(inst);
    return inst;
  };

  beforeAll(async () => {
    pg = await startPostgres();
    url = await pg.createDatabase("cli");
  });

  afterAll(async () => {
    for (const inst of installs) inst.remove();
    await pg?.stop();
  });

  it("gateway migrate applies the PostgreSQL migrations, then none", async () => {
    const { config, db } = installation(url);
    const first = await gateway(["migrate", "--config", config, "--json"]);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({ database: url, applied: embeddedMigrations.length });
    const again = await gateway(["migrate", "--config", config, "--json"]);
    expect(JSON.parse(again.stdout).applied).toBe(0);
    // The SQLite file of [server] database is left alone.
    expect(existsSync(db)).toBe(false);
    const sql = new SQL(url);
    const tables = await sql`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public' AND tablename IN ('accounts', 'ledger_entries', 'holds', 'instances')`;
    await sql.close();
    expect(tables[0].n).toBe(4);
  });

  it("gateway migrate names the database without its password", async () => {
    const withPassword = url.replace("gateway@", "gateway:pw@");
    const r = await gateway(["migrate", "--config", installation(withPassword).config]);
    expect(r.code).toBe(0);
    expect(r.stderr + r.stdout).not.toContain(":pw@");
    expect(r.stdout).toContain("is up to date");
  });

  it("gateway migrate says in one line that a database cannot be reached", async () => {
    const line = expectOneLineFailure(await gateway(["migrate", "--config", installation(url.replace(/:\d+\//, ":1/")).config]));
    expect(line).toStartWith("gateway: the PostgreSQL database postgres://gateway@127.0.0.1:1/cli: ");
  });

  it("gateway serve says in one line that the database cannot be reached", async () => {
    const line = expectOneLineFailure(await gateway(["serve", "--config", installation(url.replace(/:\d+\//, ":1/")).config, "--port", "0"]));
    expect(line).toStartWith("gateway: the PostgreSQL database postgres://gateway@127.0.0.1:1/cli: ");
  });

  it("a command on the installation writes to PostgreSQL, never to the SQLite file", async () => {
    const { config, db } = installation(url);
    const r = await gateway(["account", "create", "--email", "cli-pg@x.test", "--config", config, "--json"]);
    expect(r.code).toBe(0);
    expect(existsSync(db)).toBe(false);
    const sql = new SQL(url);
    try {
      expect((await sql`SELECT count(*)::int AS n FROM accounts WHERE email = 'cli-pg@x.test'`)[0].n).toBe(1);
    } finally {
      await sql.close();
    }
  });

  it("a command says which database it used, without the password", async () => {
    const { config } = installation(url);
    const r = await gateway(["account", "list", "--config", config]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("gateway: database postgres://");
    expect(r.stderr).not.toContain(":pw@");
  });
});
