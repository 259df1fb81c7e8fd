// Every call of the page to /api/: same-origin, JSON in and out. The browser adds Origin to writes
// and the session cookie (HttpOnly) to everything, which is all /api/ asks of it.

/** A refusal in the gateway's error shape: the message is meant for the person reading the page. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | null,
    /** The call refused, "GET /api/keys": what a failed view names. */
    readonly call: string,
  ) {
    super(message);
  }
}

type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export async function api<T>(method: Method, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const init: RequestInit = { method, credentials: "same-origin", headers: { accept: "application/json", ...headers } };
  if (body !== undefined) {
    init.headers = { ...init.headers, "content-type": "application/json" };
    init.body = JSON.stringify(body);
  }
  const call = `${method} ${path.split("?")[0]}`;
  let res: Response;
  try {
    res = await fetch(path, init);
  } catch {
    // The browser's own words ("Failed to fetch") say nothing to the holder.
    throw new ApiError(0, "unreachable", "The gateway did not answer: check the connection and try again.", null, call);
  }
  const text = await res.text();
  const data = text ? (JSON.parse(text) as unknown) : null;
  if (!res.ok) {
    const err = (data as { error?: { code?: string; message?: string; request_id?: string } } | null)?.error;
    throw new ApiError(res.status, err?.code ?? "http_" + res.status, err?.message ?? `${method} ${path}: HTTP ${res.status}`, err?.request_id ?? null, call);
  }
  return data as T;
}

/** A query string of the filled-in fields only. */
export function query(params: Record<string, string | number | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? "?" + s : "";
}
