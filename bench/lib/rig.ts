// The rig: mock upstream, bare proxy and the gateway, each in its own process, plus the request
// bodies the load generators send. The gateway runs its real path: a key created with the CLI,
// auth, rate limit (rpm high enough never to trigger), reserve, settle, request log, SQLite in WAL
// mode on disk in a temp dir.
import { SQL } from "bun";
import { Database } from "bun:sqlite";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { agentBody, type AgentDialect } from "./agent-bodies.ts";
import { runToEnd, startChild, type Child } from "./procs.ts";
import { median } from "./stats.ts";

export const ROOT = join(import.meta.dir, "..", "..");

export type WorkloadId =
  | "chat-json" | "messages-json" | "chat-sse" | "messages-sse"
  | "agent-messages-json" | "agent-messages-sse" | "agent-m2c-json" | "agent-m2c-sse"
  | "agent-chat-json" | "agent-chat-sse" | "agent-responses-json" | "agent-responses-sse";

export interface Workload {
  id: WorkloadId;
  /** OpenAI chat or Anthropic Messages, JSON or SSE */
  label: string;
  stream: boolean;
  path: string;
  /** gateway model id; the proxy forwards whatever it gets */
  model: string;
  /** an agent-sized turn (bench/lib/agent-bodies.ts) in this dialect, and how the gateway serves it */
  agent?: { dialect: AgentDialect; route: "native" | "translated" };
}

const agent = (id: string, label: string, path: string, model: string, dialect: AgentDialect, route: "native" | "translated"): Workload[] =>
  [false, true].map((stream) => ({
    id: `${id}-${stream ? "sse" : "json"}` as WorkloadId, label: `${label}, ${stream ? "SSE" : "JSON"}`, stream, path, model, agent: { dialect, route },
  }));

export const WORKLOADS: Workload[] = [
  { id: "chat-json", label: "OpenAI chat, JSON", stream: false, path: "/v1/chat/completions", model: "bench-gpt" },
  { id: "messages-json", label: "Anthropic messages, JSON", stream: false, path: "/v1/messages", model: "bench-claude" },
  { id: "chat-sse", label: "OpenAI chat, SSE", stream: true, path: "/v1/chat/completions", model: "bench-gpt" },
  { id: "messages-sse", label: "Anthropic messages, SSE", stream: true, path: "/v1/messages", model: "bench-claude" },
  // Agent turns run at c=1 and c=16 only (agentConcs): at 100 to 300 KB a request, c=64 measures the loopback.
  ...agent("agent-messages", "agent turn, Messages on an Anthropic route", "/v1/messages", "bench-claude", "messages", "native"),
  ...agent("agent-m2c", "agent turn, Messages on an OpenAI-kind route", "/v1/messages", "bench-claude-oai", "messages", "translated"),
  ...agent("agent-chat", "agent turn, Codex-like Chat", "/v1/chat/completions", "bench-gpt", "chat", "native"),
  ...agent("agent-responses", "agent turn, Responses", "/v1/responses", "bench-gpt", "responses", "translated"),
];

/** The connection counts an agent workload runs at, of those asked for. */
export const agentConcs = (concs: number[]) => concs.filter((c) => c <= 16);

/** A small two-turn conversation (about 500 bytes), the shape of a real chat request; or an agent turn of agentKb KiB. */
function requestBody(w: Workload, paced: boolean, agentKb: number): string {
  const model = paced ? `${w.model}-paced` : w.model;
  if (w.agent) return agentBody(w.agent.dialect, agentKb, model, w.stream);
  const messages = [
    { role: "user", content: "You are benchmarking an LLM gateway. Reply with a short friendly greeting, nothing else." },
    { role: "assistant", content: "Hello! How can I help you today?" },
    { role: "user", content: "Say hello once more, in five words or fewer, and mention the weather if you like." },
  ];
  const body: Record<string, unknown> = { model, max_tokens: 64, messages };
  if (w.stream) body.stream = true;
  if (w.stream && w.id.startsWith("chat")) body.stream_options = { include_usage: true };
  return JSON.stringify(body);
}

export interface UpstreamInfo {
  url: string;
  pacedUrl: string;
  responsesUrl: string;
  control: string;
}
export interface ProxyInfo {
  buffered: number;
  streamed: number;
  pacedBuffered: number;
  pacedStreamed: number;
}
export interface GatewayInfo {
  port: number;
}

export type TargetId = "proxy-buffered" | "proxy-streamed" | "gateway" | "gateway-pg" | "portkey";

/** The gateway's own targets: on SQLite, and (--postgres) the same tree serving from PostgreSQL. */
export const isGateway = (t: { id: TargetId }) => t.id === "gateway" || t.id === "gateway-pg";

export interface Target {
  id: TargetId;
  pid: number;
  port: number;
  pacedPort: number;
  /** Request headers this target needs besides the key (another gateway's routing: bench/lib/peer.ts). */
  headers?: (w: WorkloadId) => Record<string, string>;
}

export interface Rig {
  dir: string;
  /** the first account's key (the only one unless RigOptions.accounts) */
  key: string;
  /** one key per account, `key` first: the JSON cells' load spreads over them (bench/wrk/post.lua) */
  keys: string[];
  dbFile: string;
  upstream: Child<UpstreamInfo>;
  proxy: Child<ProxyInfo> | null;
  gateway: Child<GatewayInfo>;
  /** The same gateway serving from PostgreSQL (RigOptions.postgresUrl), a copy of the SQLite installation. */
  pgGateway: Child<GatewayInfo> | null;
  targets: Target[];
  /** "PATH\nBODY" files for wrk and the probe, by workload (and paced variant) */
  bodyFile(w: WorkloadId, paced?: boolean): string;
  /** requests the unpaced and paced mock upstreams have answered so far */
  upstreamHits(): Promise<{ fast: number; paced: number }>;
}

function configToml(up: UpstreamInfo): string {
  const providers = [
    ["mock-openai", "openai", `${up.url}/v1`],
    ["mock-anthropic", "anthropic", up.url],
    ["mock-openai-paced", "openai", `${up.pacedUrl}/v1`],
    ["mock-anthropic-paced", "anthropic", up.pacedUrl],
  ]
    .map(([id, kind, url]) => `[[providers]]\nid = "${id}"\nkind = "${kind}"\nbase_url = "${url}"\napi_key = "sk-bench-upstream"\n${kind === "openai" ? 'max_tokens_field = "max_tokens"\n' : ""}`)
    .join("\n");
  const model = (id: string, endpoint: string, provider: string, upstreamModel: string) =>
    `[[models]]\nid = "${id}"\nmodalities = ["text"]\nendpoints = ["${endpoint}"]\n` +
    `pricing = { input = 1.0, output = 2.0 }\nroutes = [{ provider = "${provider}", model = "${upstreamModel}" }]\n`;
  return [
    `[server]\nhost = "127.0.0.1"\n`,
    // Far above any rate the rig reaches, so the limiter runs on every request but never refuses.
    `[limits]\ndefault_rpm = 1000000000\n`,
    providers,
    model("bench-gpt", "chat.completions", "mock-openai", "gpt-bench"),
    model("bench-claude", "messages", "mock-anthropic", "claude-bench"),
    // A Messages client served by an OpenAI-kind route: the gateway translates both ways.
    model("bench-claude-oai", "messages", "mock-openai", "gpt-bench"),
    model("bench-gpt-paced", "chat.completions", "mock-openai-paced", "gpt-bench"),
    model("bench-claude-paced", "messages", "mock-anthropic-paced", "claude-bench"),
    model("bench-claude-oai-paced", "messages", "mock-openai-paced", "gpt-bench"),
  ].join("\n");
}

export interface RigOptions {
  dir: string;
  paceMs: number;
  withProxy: boolean;
  /** extra `bun` flags for the gateway process, e.g. --cpu-prof */
  gatewayBunFlags?: string[];
  /** extra `bun` flags for the gateway on PostgreSQL (postgresUrl), e.g. --cpu-prof */
  pgGatewayBunFlags?: string[];
  /** the source tree whose gateway runs (bench/ab.ts: another revision); this one by default */
  gatewayRoot?: string;
  /** size of the agent workloads' bodies, KiB (100 by default) */
  agentKb?: number;
  /** text deltas per answer of the paced upstream (5 by default; the many-streams run asks for more) */
  pacedChunks?: number;
  /** An empty PostgreSQL database: the installation is copied there (gateway migrate-db, so the bench key works on both) and a second gateway serves from it. */
  postgresUrl?: string;
  /** accounts to create, each with its own key (1 by default: the bench account alone) */
  accounts?: number;
}

/**
 * Bun's fetch runs at most 256 requests at once per process by default and queues the rest, which
 * the many-streams run (1,000 open upstream streams) would measure instead of the servers. Every
 * process of the rig gets the same higher cap; the cells (c ≤ 64) never reach either.
 */
const RIG_ENV = { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" };

export async function startRig(o: RigOptions): Promise<Rig> {
  mkdirSync(join(o.dir, "bodies"), { recursive: true });
  const upstream = await startChild<UpstreamInfo>(
    "mock upstream", ["bun", "bench/upstream.ts", "--pace-ms", String(o.paceMs), "--paced-chunks", String(o.pacedChunks ?? 5)], { cwd: ROOT, env: RIG_ENV },
  );
  const proxy = o.withProxy
    ? await startChild<ProxyInfo>(
        "bare proxy", ["bun", "bench/proxy.ts", "--upstream", upstream.info.url, "--paced", upstream.info.pacedUrl, "--responses", upstream.info.responsesUrl],
        { cwd: ROOT, env: RIG_ENV },
      )
    : null;

  const configFile = join(o.dir, "gateway.toml");
  const dbFile = join(o.dir, "gateway.db");
  writeFileSync(configFile, configToml(upstream.info));
  const gwRoot = o.gatewayRoot ?? ROOT;
  const cli = (...args: string[]) => runToEnd("gateway CLI", ["bun", "src/cli/main.ts", ...args, "--config", configFile, "--db", dbFile, "--json"], { cwd: gwRoot });
  await cli("migrate");
  const keys: string[] = [];
  for (let i = 1; i <= (o.accounts ?? 1); i++) {
    const email = i === 1 ? "bench@gateway.local" : `bench${i}@gateway.local`;
    await cli("account", "create", "--email", email, "--balance", "1000000");
    keys.push((JSON.parse(await cli("key", "create", "--email", email, "--rpm", "1000000000", "--name", "bench")) as { key: string }).key);
  }
  const key = keys[0]!;
  let pgGateway: Child<GatewayInfo> | null = null;
  if (o.postgresUrl) {
    // Before the SQLite gateway starts: migrate-db refuses a file a server is running on.
    await cli("migrate-db", "--from", dbFile, "--to", o.postgresUrl);
    const pgConfig = join(o.dir, "gateway-pg.toml");
    writeFileSync(pgConfig, `[database]\nurl = "${o.postgresUrl}"\n\n${configToml(upstream.info)}`);
    pgGateway = await startChild<GatewayInfo>(
      "gateway on PostgreSQL",
      ["bun", ...(o.pgGatewayBunFlags ?? []), "src/cli/main.ts", "serve", "--config", pgConfig, "--port", "0", "--json"],
      { cwd: gwRoot, env: RIG_ENV },
    );
  }
  const gateway = await startChild<GatewayInfo>(
    "gateway",
    ["bun", ...(o.gatewayBunFlags ?? []), "src/cli/main.ts", "serve", "--config", configFile, "--db", dbFile, "--port", "0", "--json"],
    { cwd: gwRoot, env: RIG_ENV },
  );
  const check = new Database(dbFile, { readonly: true });
  const mode = (check.query("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode;
  check.close();
  if (mode !== "wal") throw new Error(`the gateway's database is in ${mode} mode, not WAL`);

  const files = new Map<string, string>();
  for (const w of WORKLOADS) {
    for (const paced of [false, true]) {
      const file = join(o.dir, "bodies", `${w.id}${paced ? "-paced" : ""}.txt`);
      writeFileSync(file, `${w.path}\n${requestBody(w, paced, o.agentKb ?? 100)}`);
      files.set(`${w.id}${paced}`, file);
    }
  }

  const targets: Target[] = [];
  if (proxy) {
    targets.push({ id: "proxy-buffered", pid: proxy.pid, port: proxy.info.buffered, pacedPort: proxy.info.pacedBuffered });
    targets.push({ id: "proxy-streamed", pid: proxy.pid, port: proxy.info.streamed, pacedPort: proxy.info.pacedStreamed });
  }
  targets.push({ id: "gateway", pid: gateway.pid, port: gateway.info.port, pacedPort: gateway.info.port });
  if (pgGateway) targets.push({ id: "gateway-pg", pid: pgGateway.pid, port: pgGateway.info.port, pacedPort: pgGateway.info.port });

  return {
    dir: o.dir,
    key,
    keys,
    dbFile,
    upstream,
    proxy,
    gateway,
    pgGateway,
    targets,
    bodyFile: (w, paced = false) => files.get(`${w}${paced}`)!,
    upstreamHits: async () => (await (await fetch(upstream.info.control)).json()) as { fast: number; paced: number },
  };
}

/** One request per workload before any load: a 200 in the right shape, cost included. */
/**
 * One request of each workload asked for (all by default). Our gateways must serve every one (a
 * failure throws); a peer may not serve some (Portkey has no route for some of them): those are
 * answered, workload to reason, and their cells are marked as not served instead of stopping the run.
 */
export async function smokeTest(rig: Rig, t: Target, only?: readonly string[]): Promise<Map<WorkloadId, string>> {
  const unserved = new Map<WorkloadId, string>();
  for (const w of WORKLOADS.filter((x) => !only || only.includes(x.id))) {
    const file = await Bun.file(rig.bodyFile(w.id)).text();
    const res = await fetch(`http://127.0.0.1:${t.port}${w.path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${rig.key}`, "anthropic-version": "2023-06-01", ...t.headers?.(w.id) },
      body: file.slice(file.indexOf("\n") + 1),
    });
    const text = await res.text();
    let why: string | null = null;
    if (res.status !== 200) why = `answered ${res.status}: ${text.slice(0, 300)}`;
    else if (isGateway(t) && !text.includes('"cost_usd"')) why = "answered without cost_usd";
    else if (w.stream && !(text.includes("[DONE]") || text.includes("message_stop") || text.includes("response.completed"))) why = "stream did not end properly";
    if (why === null) continue;
    if (isGateway(t)) throw new Error(`smoke test: ${t.id} ${w.id} ${why}`);
    unserved.set(w.id, why);
  }
  return unserved;
}

/** One JSON.parse of a body file's JSON in this process, µs: the median of 15 batches, after a warm-up. */
export async function parseUs(bodyFile: string): Promise<number> {
  const file = await Bun.file(bodyFile).text();
  const json = file.slice(file.indexOf("\n") + 1);
  const n = json.length > 10_000 ? 20 : 2000;
  for (let i = 0; i < n; i++) JSON.parse(json);
  const batches: number[] = [];
  for (let b = 0; b < 15; b++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) JSON.parse(json);
    batches.push(((performance.now() - t0) * 1000) / n);
  }
  return median(batches);
}

export interface Reconciliation {
  ok: boolean;
  accounts: number;
  mismatched: { id: number; balance_nano: number; ledger_sum: number }[];
  /** What the gateway still held for running requests once the load was over (GET /v1/me). */
  heldNano: number;
  logRows: number;
  logRowsNot200: number;
  chargeEntries: number;
}

/** Holds the gateway reports for the bench key's account; read once the load is over, before it stops. */
export async function heldNano(rig: Rig, gateway: Child<GatewayInfo> = rig.gateway): Promise<number> {
  await Bun.sleep(250); // requests cut by wrk's deadline still finish on the server
  const res = await fetch(`http://127.0.0.1:${gateway.info.port}/v1/me`, { headers: { authorization: `Bearer ${rig.key}` } });
  const me = (await res.json()) as { balance: { reserved_usd: number } };
  return Math.round(me.balance.reserved_usd * 1e9);
}

/** After the gateway stopped: every balance equals the sum of its ledger rows, and no hold was left. */
export function reconcile(dbFile: string, held: number): Reconciliation {
  const db = new Database(dbFile, { readonly: true });
  try {
    const one = (sql: string) => (db.query(sql).get() as { n: number }).n;
    const mismatched = db
      .query(
        `SELECT a.id, a.balance_nano, COALESCE((SELECT SUM(amount_nano) FROM ledger_entries e WHERE e.account_id = a.id), 0) AS ledger_sum
         FROM accounts a`,
      )
      .all()
      .filter((r) => (r as { balance_nano: number; ledger_sum: number }).balance_nano !== (r as { ledger_sum: number }).ledger_sum) as Reconciliation["mismatched"];
    const r = {
      accounts: one("SELECT count(*) AS n FROM accounts"),
      mismatched,
      heldNano: held,
      logRows: one("SELECT count(*) AS n FROM request_logs WHERE path != '/v1/me'"),
      logRowsNot200: one("SELECT count(*) AS n FROM request_logs WHERE status != 200"),
      chargeEntries: one("SELECT count(*) AS n FROM ledger_entries WHERE kind = 'charge'"),
    };
    return { ok: mismatched.length === 0 && r.heldNano === 0, ...r };
  } finally {
    db.close();
  }
}

/** reconcile's checks on the PostgreSQL copy (after its gateway stopped), plus the holds table: no row left. */
export async function reconcilePostgres(url: string, held: number): Promise<Reconciliation> {
  const sql = new SQL(url);
  try {
    const one = async (q: string) => Number((await sql.unsafe(q))[0].n);
    const mismatched = (await sql`SELECT a.id, a.balance_nano, COALESCE((SELECT SUM(amount_nano) FROM ledger_entries e WHERE e.account_id = a.id), 0) AS ledger_sum FROM accounts a`)
      .map((r: Record<string, string>) => ({ id: Number(r.id), balance_nano: Number(r.balance_nano), ledger_sum: Number(r.ledger_sum) }))
      .filter((r: { balance_nano: number; ledger_sum: number }) => r.balance_nano !== r.ledger_sum);
    const holdRows = await one("SELECT count(*) AS n FROM holds");
    const r = {
      accounts: await one("SELECT count(*) AS n FROM accounts"),
      mismatched,
      heldNano: held + (await one("SELECT coalesce(sum(held_nano), 0) AS n FROM accounts")),
      logRows: await one("SELECT count(*) AS n FROM request_logs WHERE path != '/v1/me'"),
      logRowsNot200: await one("SELECT count(*) AS n FROM request_logs WHERE status != 200"),
      chargeEntries: await one("SELECT count(*) AS n FROM ledger_entries WHERE kind = 'charge'"),
    };
    return { ok: mismatched.length === 0 && r.heldNano === 0 && holdRows === 0, ...r };
  } finally {
    await sql.close();
  }
}
