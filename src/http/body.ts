import { GatewayError } from "../core/errors.ts";
import { BODY_LIMIT_BYTES } from "../wire/body-limit.ts";

/** A byte count as people write it: "20 MiB", "64 KiB", "1000 bytes". */
export function sizeText(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / 1024 / 1024} MiB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

/** The 413 of a route: it names that route's own limit, since /api/ and the webhook take far less than /v1. */
export const tooLarge = (limit: number) =>
  new GatewayError("request_too_large", `Request body is larger than this route's ${sizeText(limit)} limit.`);

/**
 * Whether an answer leaves some of the request's body unread: refused before its body was read (a
 * key, a limit, an unknown path), or cut off at the size limit (413). Such an answer closes the
 * connection (`connection: close`, which Bun honours by ending the socket once the answer is out):
 * kept open, Bun went on reading and discarding the rest of the upload, 20 MiB and more per
 * connection, while the client kept sending a body nobody would read (docs/operations.md#what-clients-are-held-to).
 */
export function leavesBodyUnread(request: Request, status: number): boolean {
  if (status === 413) return true;
  if (request.bodyUsed) return false;
  const declared = request.headers.get("content-length");
  return declared !== null ? declared !== "0" : request.headers.has("transfer-encoding");
}

/**
 * Reads the body while counting: an oversized upload is cut off as soon as it passes the limit,
 * so a 200 MiB upload costs at most 20 MiB of memory and is refused before it finishes.
 * `declared`: its content-length as a number (NaN without one), when the caller has read it already.
 */
export async function readBodyLimited(request: Request, limit = BODY_LIMIT_BYTES, declared = Number(request.headers.get("content-length") ?? NaN)): Promise<Uint8Array> {
  if (declared > limit) throw tooLarge(limit);
  if (Number.isFinite(declared)) {
    // Known length within the limit: Bun reads it in one go, faster than pulling chunks, and
    // without making the body a stream object first; bytes() gives the Uint8Array itself, not an
    // ArrayBuffer to wrap (half the cost: bench/RESULTS.md, "The key request before its upstream call").
    const buf = await request.bytes();
    if (buf.byteLength > limit) throw tooLarge(limit);
    return buf;
  }
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

const decoder = new TextDecoder();

/** Parses a JSON object body; anything else is 400 invalid_request (docs/api.md#errors). */
export function parseJsonObject(bytes: Uint8Array): Record<string, unknown> {
  if (bytes.byteLength === 0) throw new GatewayError("invalid_request", "Request body is empty; expected a JSON object.");
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(bytes));
  } catch (e) {
    throw new GatewayError("invalid_request", `Request body is not valid JSON: ${(e as Error).message}`);
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) {
    throw new GatewayError("invalid_request", "Request body must be a JSON object.");
  }
  return value as Record<string, unknown>;
}
