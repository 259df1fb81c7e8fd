import { GatewayError } from "../errors.ts";

// Vendor errors the spec passes through with their own texts, in the gateway's error shape.

interface VendorError {
  type: string;
  code: string;
  message: string;
}

/** Reads an Anthropic ({type:"error", error:{type,message}}) or OpenAI ({error:{message,type,code}}) body. */
export function readVendorError(text: string): VendorError | null {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return null;
  }
  const err = (body as { error?: unknown })?.error;
  if (!err || typeof err !== "object") return null;
  const e = err as { type?: unknown; code?: unknown; message?: unknown };
  if (typeof e.message !== "string") return null;
  const type = typeof e.type === "string" && e.type ? e.type : typeof e.code === "string" ? e.code : "upstream_error";
  const code = typeof e.code === "string" && e.code ? e.code : type;
  return { type, code, message: e.message };
}

// OpenAI marks region blocks with type request_forbidden; the spec names the error by its code.
const TYPE_FROM_CODE = new Set(["unsupported_country_region_territory", "insufficient_quota"]);

export function passThrough(status: number, v: VendorError): GatewayError {
  const type = TYPE_FROM_CODE.has(v.code) ? v.code : v.type;
  // A vendor 429 for an exhausted credit balance will not succeed on a retry.
  const headers: Record<string, string> = status === 429 && type === "insufficient_quota" ? { "x-should-retry": "false" } : {};
  return GatewayError.upstream(status, type, v.code, v.message, headers);
}

/** Retrying another route can help: server errors, overload, and no usable answer at all. */
export const isRetryableStatus = (status: number) => status >= 500 || status === 529 || status === 408;
