import type { Capabilities, ModelConfig, ProviderConfig } from "./schema.ts";

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

// What a translator assumes of an upstream nobody described: plain Chat Completions (no reasoning,
// no top_k) and a thinking Messages model. The same for every kind: each field applies to one.
export const DEFAULT_CAPABILITIES: Required<Capabilities> = {
  reasoning: false,
  reasoning_content: false,
  top_k: false,
  thinking: "budget",
  structured_outputs: true,
  fixed_sampling: false,
  prompt_cache: "off",
};
