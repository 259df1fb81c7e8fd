import { describe, expect, it } from "bun:test";
import { hostname } from "node:os";
import { ConfigError, parseConfig } from "../../src/config/load.ts";

// Issue 18's config names: `[cluster] instance_id` (default hostname + pid) and `hold_timeout_s`
// (default 30): how the instances on one PostgreSQL database name themselves and give up on a silent one.

const parse = (cluster: unknown) => () => parseConfig({ cluster }, "gateway.toml", {});

describe("[cluster]", () => {
  it("defaults to this host's name and process id, and a 30 s hold timeout", () => {
    expect(parseConfig({}, "t").cluster).toEqual({ instanceId: `${hostname()}-${process.pid}`, holdTimeoutMs: 30_000 });
  });

  it("takes an instance id and a hold timeout in seconds", () => {
    expect(parseConfig({ cluster: { instance_id: "gw-2", hold_timeout_s: 45 } }, "t").cluster).toEqual({ instanceId: "gw-2", holdTimeoutMs: 45_000 });
  });

  it("refuses a hold timeout too short to outlast a few missed heartbeats, with the field's path", () => {
    expect(parse({ hold_timeout_s: 2 })).toThrow(ConfigError);
    expect(parse({ hold_timeout_s: 2 })).toThrow(/^gateway\.toml: cluster\.hold_timeout_s: /);
  });

  it("refuses an empty instance id and an unknown field with their paths", () => {
    expect(parse({ instance_id: "" })).toThrow(/^gateway\.toml: cluster\.instance_id: /);
    expect(parse({ instance: "gw-1" })).toThrow(/^gateway\.toml: cluster/);
  });
});
