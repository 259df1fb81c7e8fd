// `bun run bench --profile`: the gateway under `bun --cpu-prof` at c=16, once on JSON and once on
// SSE (or each of --workloads; a fresh gateway each, so each profile holds one workload), then the
// SQLite timings.
// Writes bench/out/profile.md and the raw .cpuprofile files under bench/out/profiles/.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { profileMarkdown, summariseProfile } from "./cpuprofile.ts";
import { runProbe, runWrk } from "./load.ts";
import { cpuSeconds, runToEnd, stopChild } from "./procs.ts";
import { ROOT, smokeTest, startRig, WORKLOADS, type WorkloadId } from "./rig.ts";

/** `postgresUrl`: the gateway serving from PostgreSQL is profiled instead (a fresh database per workload, `<url>-<n>`). */
export async function profileRun(o: { dir: string; out: string; seconds: number; paceMs: number; workloads?: WorkloadId[]; postgres?: (name: string) => Promise<string> }): Promise<void> {
  const profDir = join(o.out, "profiles");
  mkdirSync(profDir, { recursive: true });
  const parts: string[] = [`# Gateway${o.postgres ? " on PostgreSQL" : ""} CPU profile (c=16, ${o.seconds} s per workload, bun --cpu-prof, 200 µs sampling)`, ""];
  for (const id of o.workloads ?? (["chat-json", "chat-sse"] as WorkloadId[])) {
    const w = WORKLOADS.find((x) => x.id === id)!;
    const name = `gateway${o.postgres ? "-pg" : ""}-${id}.cpuprofile`;
    const flags = ["--cpu-prof", `--cpu-prof-dir=${profDir}`, `--cpu-prof-name=${name}`, "--cpu-prof-interval=200"];
    const postgresUrl = o.postgres ? await o.postgres(`profile_${id.replace(/-/g, "_")}`) : undefined;
    const rig = await startRig({
      dir: join(o.dir, id),
      paceMs: o.paceMs,
      withProxy: false,
      ...(postgresUrl ? { postgresUrl, pgGatewayBunFlags: flags } : { gatewayBunFlags: flags }),
    });
    const t = rig.targets.find((x) => x.id === (postgresUrl ? "gateway-pg" : "gateway"))!;
    await smokeTest(rig, t);
    // Warm the JIT before the measured part; the profile still covers the whole process lifetime.
    if (w.stream) await runProbe(t.port, rig.key, rig.bodyFile(id), 16, 2);
    else await runWrk(t.port, rig.key, [rig.bodyFile(id)], 16, 2);
    const cpu0 = cpuSeconds(t.pid);
    const h0 = (await rig.upstreamHits()).fast;
    const rps = w.stream
      ? (await runProbe(t.port, rig.key, rig.bodyFile(id), 16, o.seconds)).rps
      : ((r) => r.requests / (r.duration_us / 1e6))(await runWrk(t.port, rig.key, [rig.bodyFile(id)], 16, o.seconds));
    await Bun.sleep(250);
    const hits = (await rig.upstreamHits()).fast - h0;
    const cpuUs = ((cpuSeconds(t.pid) - cpu0) * 1e6) / hits;
    await stopChild((rig.pgGateway ?? rig.gateway).proc, 20_000);
    if (rig.pgGateway) await stopChild(rig.gateway.proc);
    await stopChild(rig.upstream.proc);
    const file = join(profDir, name);
    if (!existsSync(file)) throw new Error(`no profile written at ${file}`);
    console.log(`${id}: ${Math.round(rps)} req/s under the profiler, ${Math.round(cpuUs)} µs CPU/request`);
    parts.push(`## ${w.label} (${id}), c=16`, "", `${Math.round(rps)} req/s under the profiler, ${Math.round(cpuUs)} µs of gateway CPU per request.`, "");
    parts.push(profileMarkdown(summariseProfile(file)), "");
  }
  if (!o.postgres) parts.push("## SQLite statement timing", "", (await runToEnd("sqlite timing", ["bun", "bench/sqlite-timing.ts"], { cwd: ROOT })).trim(), "");
  const md = parts.join("\n");
  writeFileSync(join(o.out, "profile.md"), md);
  console.log(`\n${md}\nwritten to bench/out/profile.md (profiles in bench/out/profiles/)`);
}
