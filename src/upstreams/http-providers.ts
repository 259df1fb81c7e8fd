import type { ProviderConfig } from "../config/schema.ts";
import type { ImageCall, Provider, TextCall } from "./types.ts";

// Providers reached over HTTP with native fetch: the body goes out once, the answer streams back
// untouched for the relay to read event by event.

const trimSlash = (s: string) => s.replace(/\/+$/, "");

function send(url: string, headers: Record<string, string>, body: string | Blob | Uint8Array | FormData, signal: AbortSignal): Promise<Response> {
  return fetch(url, { method: "POST", headers, body, signal, redirect: "manual" });
}

/**
 * A text call's headers for each provider key, a JSON call's and a stream's, built once: they only
 * change with the key, and fetch reads the object without keeping or changing it.
 */
function headersByKey(build: (apiKey: string | undefined, accept: string) => Record<string, string>) {
  const made = new Map<string | undefined, { json: Record<string, string>; sse: Record<string, string> }>();
  return (apiKey: string | undefined, stream: unknown): Record<string, string> => {
    let h = made.get(apiKey);
    if (!h) made.set(apiKey, (h = { json: build(apiKey, "application/json"), sse: build(apiKey, "text/event-stream") }));
    return stream ? h.sse : h.json;
  };
}

const ANTHROPIC_VERSION = "2023-06-01";

export function anthropicProvider(config: ProviderConfig): Provider {
  const base = trimSlash(config.base_url ?? "https://api.anthropic.com");
  const url = `${base}/v1/messages`;
  const build = (apiKey: string | undefined, accept: string, version = ANTHROPIC_VERSION, beta: string | null = null) => {
    const headers: Record<string, string> = { ...config.headers, "content-type": "application/json", accept, "anthropic-version": version };
    // The provider's own key replaces whatever identified the client to the gateway.
    const key = apiKey ?? config.api_key;
    if (key) headers["x-api-key"] = key;
    if (beta) headers["anthropic-beta"] = beta;
    return headers;
  };
  const usual = headersByKey(build);
  return {
    config,
    dialects: ["messages"],
    text(call: TextCall) {
      const h = call.clientHeaders;
      const version = h.get("anthropic-version");
      const beta = h.get("anthropic-beta");
      const headers =
        (version === null || version === ANTHROPIC_VERSION) && !beta
          ? usual(call.apiKey, call.body.stream)
          : build(call.apiKey, call.body.stream ? "text/event-stream" : "application/json", version ?? ANTHROPIC_VERSION, beta);
      return send(call.search ? url + call.search : url, headers, call.bytes ?? JSON.stringify(call.body), call.signal);
    },
    images() {
      return Promise.resolve(
        Response.json({ type: "error", error: { type: "invalid_request_error", message: "anthropic providers do not serve images" } }, { status: 400 }),
      );
    },
  };
}

export function openaiProvider(config: ProviderConfig): Provider {
  const base = trimSlash(config.base_url ?? "https://api.openai.com/v1");
  const url = `${base}/chat/completions`;
  const auth = (apiKey = config.api_key): Record<string, string> => ({ ...config.headers, ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) });
  const textHeaders = headersByKey((apiKey, accept) => ({ ...auth(apiKey), "content-type": "application/json", accept }));
  return {
    config,
    dialects: ["chat"],
    text(call: TextCall) {
      return send(url, textHeaders(call.apiKey, call.body.stream), call.bytes ?? JSON.stringify(call.body), call.signal);
    },
    images(call: ImageCall) {
      const path = call.endpoint === "images.generations" ? "/images/generations" : "/images/edits";
      const isForm = call.body instanceof FormData;
      const headers = isForm ? auth(call.apiKey) : { ...auth(call.apiKey), "content-type": "application/json" };
      return send(`${base}${path}`, headers, isForm ? (call.body as FormData) : JSON.stringify(call.body), call.signal);
    },
  };
}
