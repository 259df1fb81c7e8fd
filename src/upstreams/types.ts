import type { ProviderConfig } from "../config/schema.ts";
import type { Dialect } from "../dialects/dialect.ts";
import type { JsonObject } from "../wire/shapes.ts";


export interface TextCall {
  /** Dialect of `body`; the provider must speak it. */
  dialect: Dialect;
  body: JsonObject;
  /** `body` serialised already (the client's bytes, model spliced, or a translation's text): sent as is instead of JSON.stringify(body). */
  bytes?: Blob | Uint8Array | string;
  /** The client's headers, for the ones forwarded on the native path (anthropic-version, anthropic-beta). */
  clientHeaders: Headers;
  /** The client's query string on the native Messages path (`?beta=true`). */
  search: string;
  signal: AbortSignal;
  /** The provider key this attempt uses (relay/capacity.ts); absent: the config's api_key. */
  apiKey?: string;
}

export interface ImageCall {
  endpoint: "images.generations" | "images.edits";
  /** JSON for generations; multipart form for edits. */
  body: JsonObject | FormData;
  signal: AbortSignal;
  /** The provider key this attempt uses; absent: the config's api_key. */
  apiKey?: string;
}

/** One configured provider: speaks one or more dialects over its own transport. */
export interface Provider {
  config: ProviderConfig;
  dialects: readonly Dialect[];
  text(call: TextCall): Promise<Response>;
  images(call: ImageCall): Promise<Response>;
}
