import { describe, expect, it } from "bun:test";
import { GatewayError, type ErrorCode } from "../../src/core/errors.ts";
import { errorResponse } from "../../src/http/errors.ts";

// docs/api.md#retry-rules: only upstream_unavailable, rate_limit and product_paused are safe to
// retry. The official SDKs retry 408, 409, 429 and every 5xx unless told `x-should-retry: false`,
// so every other error on those statuses must say so.

const header = (code: ErrorCode) => errorResponse(new GatewayError(code, "m"), "gw_test", {}, { quiet: true }).headers.get("x-should-retry");

describe("x-should-retry on the gateway's errors", () => {
  const final: ErrorCode[] = ["idempotency_conflict", "quota", "ambiguous_upstream_result", "no_eligible_route", "internal_error"];
  for (const code of final) {
    it(`tells the SDKs not to retry ${code}`, () => {
      expect(header(code)).toBe("false");
    });
  }

  const safe: ErrorCode[] = ["rate_limit", "rate_limit_unavailable", "upstream_unavailable", "product_paused", "database_unavailable"];
  for (const code of safe) {
    it(`leaves ${code} to the SDKs' retries`, () => {
      expect(header(code)).toBeNull();
    });
  }
});
