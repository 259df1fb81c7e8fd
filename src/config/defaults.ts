import type { ModelConfig, ProviderConfig } from "./schema.ts";

// The embedded default: an in-process demo provider so a new user sees the whole product work
// without a provider account.
export const DEFAULT_PROVIDERS: ProviderConfig[] = [{ id: "demo", kind: "demo" }];

export const DEFAULT_MODELS: ModelConfig[] = [
  {
    id: "demo-text-1",
    aliases: ["demo", "demo-text"],
    display_name: "Demo text model",
    owned_by: "gateway",
    modalities: ["text"],
    endpoints: ["messages", "chat.completions"],
    pricing: { input: 1.0, output: 4.0, cache_read: 0.1, cache_write: 1.25 },
    max_output_tokens: 8192,
    routes: [{ provider: "demo", model: "demo-text" }],
  },
  {
    id: "demo-image-1",
    aliases: ["demo-image"],
    display_name: "Demo image model",
    owned_by: "gateway",
    modalities: ["image"],
    endpoints: ["images.generations", "images.edits"],
    pricing: { per_image: 0.01 },
    routes: [{ provider: "demo", model: "demo-image" }],
  },
];
