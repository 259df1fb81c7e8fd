import type { ProviderConfig } from "../config/schema.ts";
import { demoProvider } from "./demo.ts";
import { anthropicProvider, openaiProvider } from "./http-providers.ts";
import { rememberSecrets } from "../wire/scrub.ts";
import type { Provider } from "./types.ts";

const FACTORIES: Record<ProviderConfig["kind"], (c: ProviderConfig) => Provider> = {
  anthropic: anthropicProvider,
  openai: openaiProvider,
  demo: demoProvider,
};

export function buildProviders(configs: ProviderConfig[]): Map<string, Provider> {
  rememberSecrets(configs);
  return new Map(configs.map((c) => [c.id, FACTORIES[c.kind](c)]));
}
