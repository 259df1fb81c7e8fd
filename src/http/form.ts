import { createHash } from "node:crypto";
import { GatewayError } from "../core/errors.ts";

// The multipart body of a key route (POST /v1/images/edits), parsed once by the pipeline.

export async function parseForm(request: Request, bytes: Uint8Array): Promise<FormData> {
  const type = request.headers.get("content-type") ?? "";
  if (!type.startsWith("multipart/form-data")) {
    throw new GatewayError("invalid_request", "This route takes multipart/form-data.");
  }
  try {
    return (await new Response(bytes, { headers: { "content-type": type } }).formData()) as unknown as FormData;
  } catch (e) {
    throw new GatewayError("invalid_request", `Malformed multipart body: ${(e as Error).message}`);
  }
}

/**
 * The request's fingerprint for its Idempotency-Key: the parts in order, each its name and its value
 * or its file's bytes (hashed), not the raw body, whose boundary is new on every send, so that hashing
 * it made a retry with the same key and form a 409 conflict with itself.
 */
export async function formFingerprint(form: FormData): Promise<string> {
  const h = createHash("sha256");
  for (const [name, v] of form.entries()) {
    const value = v as string | File;
    const part = typeof value === "string" ? ["text", value] : ["file", value.type, createHash("sha256").update(new Uint8Array(await value.arrayBuffer())).digest("hex")];
    // JSON per part: no value can be shaped to run into the next one.
    h.update(JSON.stringify([name, ...part])).update("\n");
  }
  return h.digest("hex");
}
