import type { ProviderConfig } from "../config/schema.ts";
import type { ImageCall, Provider, TextCall } from "./types.ts";

// Providers reached over HTTP with native fetch: the body goes out once, the answer streams back
// untouched for the relay to read event by event.

const trimSlash = (s: string) => s.replace(/\/+$/, "");

function send(url: string, headers: Record<string, string>, body: string | Blob | Uint8Array | FormData, signal: AbortSignal): Promise<Response> {
  return fetch(url, { method: "POST", headers, body, signal, redirect: "manual" });
}

export function anthropicProvider(config: ProviderConfig): Provider {
  const base = trimSlash(config.base_url ?? "https://api.anthropic.com");
  return {
    config,
    dialects: ["messages"],
    text(call: TextCall) {
      const h = call.clientHeaders;
      const headers: Record<string, string> = {
        ...config.headers,
        "content-type": "application/json",
        accept: call.body.stream ? "text/event-stream" : "application/json",
        "anthropic-version": h.get("anthropic-version") ?? "2023-06-01",
      };
      // The provider's own key replaces whatever identified the client to the gateway.
      const key = call.apiKey ?? config.api_key;
      if (key) headers["x-api-key"] = key;
      const beta = h.get("anthropic-beta");
      if (beta) headers["anthropic-beta"] = beta;
      return send(`${base}/v1/messages${call.search}`, headers, call.bytes ?? JSON.stringify(call.body), call.signal);
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
  const auth = (apiKey = config.api_key): Record<string, string> => ({ ...config.headers, ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) });
  return {
    config,
    dialects: ["chat"],
    text(call: TextCall) {
      const headers = { ...auth(call.apiKey), "content-type": "application/json", accept: call.body.stream ? "text/event-stream" : "application/json" };
      return send(`${base}/chat/completions`, headers, call.bytes ?? JSON.stringify(call.body), call.signal);
    },
    images(call: ImageCall) {
      const path = call.endpoint === "images.generations" ? "/images/generations" : "/images/edits";
      const isForm = call.body instanceof FormData;
      const headers = isForm ? auth(call.apiKey) : { ...auth(call.apiKey), "content-type": "application/json" };
      return send(`${base}${path}`, headers, isForm ? (call.body as FormData) : JSON.stringify(call.body), call.signal);
    },
  };
}
