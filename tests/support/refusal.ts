import { GatewayError } from "../../src/core/errors.ts";

/** The GatewayError that `fn` throws; fails the test when it throws something else or nothing. */
export function refusal(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (e) {
    if (e instanceof GatewayError) return e;
    throw e;
  }
  throw new Error("expected a refusal");
}
