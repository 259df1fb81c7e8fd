import { describe, expect, it } from "bun:test";
import { ConfigError, parseConfig } from "../../src/config/load.ts";
import { buildServices } from "../../src/services.ts";
import { openDatabase } from "../../src/store/engine/sqlite/client.ts";
import { RateLimiter } from "../../src/limits/rate-limit.ts";
import { RedisRateLimiter } from "../../src/limits/redis-rate-limit.ts";

// Issue 18's config name: `[limits] store`, absent: the in-process token buckets; a redis:// or
// rediss:// URL (Redis or Valkey); anything else stops the start with the field's path.

const parse = (store: unknown) => () => parseConfig({ limits: { store } }, "gateway.toml", {});

describe("[limits] store", () => {
  it("is null when absent: each process keeps its own buckets", () => {
    expect(parseConfig({}, "t").limitStore).toBeNull();
  });

  it("takes a redis:// URL, a password from the environment included", () => {
    const cfg = parseConfig({ limits: { store: "redis://:${REDIS_PASSWORD}@cache:6379/2" } }, "t", { REDIS_PASSWORD: "s3cret" });
    expect(cfg.limitStore).toBe("redis://:s3cret@cache:6379/2");
  });

  it("takes a rediss:// URL (TLS)", () => {
    expect(parseConfig({ limits: { store: "rediss://cache.example:6380" } }, "t").limitStore).toBe("rediss://cache.example:6380");
  });

  it("refuses another scheme with the field's path, without repeating the URL", () => {
    const refused = parse("memcached://:s3cret@cache:11211");
    expect(refused).toThrow(ConfigError);
    expect(refused).toThrow(/^gateway\.toml: limits\.store: not a Redis or Valkey URL such as redis:\/\/cache:6379 \(rediss:\/\/ for TLS\) \(got memcached:\)$/);
  });

  it("refuses a text that is no URL with the field's path", () => {
    for (const store of ["cache:6379", "localhost", "redis://"]) expect(parse(store)).toThrow(/^gateway\.toml: limits\.store: not a Redis or Valkey URL /);
  });

  it("refuses an empty text or a number with the field's path", () => {
    for (const store of ["", 6379]) {
      expect(parse(store)).toThrow(ConfigError);
      expect(parse(store)).toThrow(/^gateway\.toml: limits\.store: /);
    }
  });

  it("picks the limiter: in-process without it, Redis with it", () => {
    const plain = buildServices(parseConfig({}, "t"), openDatabase(":memory:"));
    expect(plain.limiter).toBeInstanceOf(RateLimiter);
    const shared = buildServices(parseConfig({ limits: { store: "redis://127.0.0.1:1" } }, "t"), openDatabase(":memory:"));
    expect(shared.limiter).toBeInstanceOf(RedisRateLimiter);
    for (const svc of [plain, shared]) for (const stop of svc.atStop) stop();
  });
});
