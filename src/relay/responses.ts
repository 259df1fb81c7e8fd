import { GatewayError } from "../errors.ts";
import type { KeyedCall } from "../http/pipeline.ts";

// Placeholder until the Responses adapter lands (issue 6).
export async function serveResponses(_call: KeyedCall): Promise<Response> {
  throw new GatewayError("invalid_request", "The Responses dialect is not served yet.");
}
