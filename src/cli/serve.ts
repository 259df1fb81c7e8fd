import { countAccounts, createAccount } from "../ledger/accounts.ts";
import { startGateway } from "../server.ts";
import { parse, UsageError } from "./args.ts";
import { loadInstallation } from "./context.ts";

export const DEMO_EMAIL = "demo@gateway.local";

export async function serveCommand(argv: string[]): Promise<void> {
  const { values } = parse(argv, { port: { type: "string" } });
  const config = loadInstallation(values);
  // --port beats PORT, which beats the config file (DESIGN: flags beat the config).
  const portText = values.port ?? process.env.PORT;
  let port = config.port;
  if (portText !== undefined) {
    port = Number(portText);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port: not a port number: ${portText}`);
  }
  const gw = startGateway(config, { port });
  const svc = gw.services;
  const base = config.publicUrl || `http://localhost:${gw.port}`;
  const demo = svc.catalog.models.find((m) => m.endpoints.includes("messages") || m.endpoints.includes("chat.completions"));
  let firstKey: string | null = null;
  if (countAccounts(svc.db) === 0) {
    const acc = createAccount(svc.db, svc.ledger, DEMO_EMAIL);
    firstKey = svc.keys.create(acc.id, { name: "first key" }).key;
  }
  if (values.json) {
    console.log(JSON.stringify({ listening: base, port: gw.port, database: config.database, config: config.source, catalog_version: svc.catalog.version, first_key: firstKey }));
  } else {
    console.log(`gateway ${svc.version} listening on ${base} (config: ${config.source}, database: ${config.database})`);
    if (firstKey) console.log(firstRunBanner(base, firstKey, demo?.id ?? "demo-text-1"));
  }
  const stop = async () => {
    await gw.stop();
    process.exit(0);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

function firstRunBanner(base: string, key: string, model: string): string {
  return `
First start: created the account ${DEMO_EMAIL} with 1 USD and this API key (shown once, store it now):

  ${key}

Try it:

  curl ${base}/v1/chat/completions \\
    -H "Authorization: Bearer ${key}" -H "content-type: application/json" \\
    -d '{"model":"${model}","max_tokens":100,"messages":[{"role":"user","content":"Hello"}]}'

  # openai SDK:            new OpenAI({ baseURL: "${base}/v1", apiKey: "${key}" })
  # @anthropic-ai/sdk:     new Anthropic({ baseURL: "${base}", apiKey: "${key}" })
`;
}
