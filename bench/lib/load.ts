// Load generators, each in its own process: wrk (closed loop, JSON cells and the memory run) and
// the raw-socket streaming probe (TTFB). One measured cell = one load run against one target, with
// the target's CPU time and the upstream's request counter read before and after.
import { join } from "node:path";
import { cpuSeconds, runToEnd } from "./procs.ts";
import { ROOT, type Rig, type Target, type Workload } from "./rig.ts";

export interface WrkResult {
  requests: number;
  duration_us: number;
  connect: number;
  read: number;
  write: number;
  status: number;
  timeout: number;
  lat_p50_us: number;
  lat_p90_us: number;
  lat_p99_us: number;
}

export interface ProbeResult {
  requests: number;
  sent: number;
  errors: number;
  first_errors: string[];
  elapsed_us: number;
  rps: number;
  ttfb_p50_us: number;
  ttfb_p90_us: number;
  ttfb_p99_us: number;
  total_p50_us: number;
  arrivals_p50: number;
  traces?: number[][];
  /** --trace: receive time − upstream send time of every stamped chunk, ms */
  chunk_lags_ms?: number[];
  /** --lags: the same, summarised */
  lag_n?: number;
  lag_p50_ms?: number;
  lag_p99_ms?: number;
}

/** Extra request headers as the load generators take them: "name: value". */
const headerLines = (h: Record<string, string> = {}) => Object.entries(h).map(([k, v]) => `${k}: ${v}`);

/** `key`: one key, or several joined by commas, taken in turn request by request. */
export async function runWrk(port: number, key: string, bodyFiles: string[], c: number, seconds: number, headers?: Record<string, string>): Promise<WrkResult> {
  // One wrk thread: it drives 64 connections easily and leaves the second core to the servers.
  const out = await runToEnd("wrk", [
    "wrk", "-t1", `-c${c}`, `-d${seconds}s`, "--timeout", "10s",
    "-s", join(ROOT, "bench/wrk/post.lua"), `http://127.0.0.1:${port}`, "--", key, bodyFiles.join(","), headerLines(headers).join("|"),
  ]);
  const line = out.trim().split("\n").at(-1)!;
  return JSON.parse(line) as WrkResult;
}

export async function runProbe(
  port: number, key: string, bodyFile: string, c: number, seconds: number, extra: string[] = [], headers?: Record<string, string>,
): Promise<ProbeResult> {
  const out = await runToEnd(
    "probe",
    [
      "bun", "bench/probe.ts", "--port", String(port), "--key", key, "--body", bodyFile, "--c", String(c), "--duration", String(seconds), ...extra,
      ...headerLines(headers).flatMap((h) => ["--header", h]),
    ],
    { cwd: ROOT },
  );
  return JSON.parse(out.trim().split("\n").at(-1)!) as ProbeResult;
}

export interface Sample {
  workload: Workload["id"];
  c: number;
  target: Target["id"];
  round: number;
  /** responses per second seen by the client */
  rps: number;
  /** median latency (JSON: whole response; SSE: first byte), µs */
  p50_us: number;
  /** JSON only: the whole response's 99th percentile, µs */
  p99_us?: number;
  /** SSE only: median time to the end of the stream, µs */
  total_p50_us?: number;
  /** target CPU (user + system, all threads) per request the upstream served, µs */
  cpu_us: number;
  /** mock upstream CPU per request, µs (the same work for every target) */
  upstream_cpu_us: number;
  responses: number;
  upstreamHits: number;
  errors: number;
  errorDetail: string;
  /** hits agree with responses: exactly for the probe; wrk cuts up to c requests in flight */
  hitsOk: boolean;
}

const SETTLE_MS = 250;

/** Runs one cell against one target and reads CPU and upstream hits around it. */
export async function measure(rig: Rig, w: Workload, c: number, t: Target, seconds: number, round: number): Promise<Sample> {
  const hits0 = (await rig.upstreamHits()).fast;
  const cpu0 = cpuSeconds(t.pid);
  const up0 = cpuSeconds(rig.upstream.pid);
  let sample: Omit<Sample, "cpu_us" | "upstream_cpu_us" | "upstreamHits" | "hitsOk">;
  if (w.stream) {
    const r = await runProbe(t.port, rig.key, rig.bodyFile(w.id), c, seconds, [], t.headers?.(w.id));
    sample = {
      workload: w.id, c, target: t.id, round, rps: r.rps, p50_us: r.ttfb_p50_us, total_p50_us: r.total_p50_us,
      responses: r.sent, errors: r.errors, errorDetail: r.first_errors.join("; "),
    };
  } else {
    const r = await runWrk(t.port, rig.keys.join(","), [rig.bodyFile(w.id)], c, seconds, t.headers?.(w.id));
    const errors = r.connect + r.read + r.write + r.status + r.timeout;
    sample = {
      workload: w.id, c, target: t.id, round, rps: r.requests / (r.duration_us / 1e6), p50_us: r.lat_p50_us, p99_us: r.lat_p99_us,
      responses: r.requests, errors,
      errorDetail: errors ? `connect ${r.connect}, read ${r.read}, write ${r.write}, non-2xx ${r.status}, timeout ${r.timeout}` : "",
    };
  }
  // Requests cut by wrk's deadline still finish on the server; let them, so they are counted here.
  await Bun.sleep(SETTLE_MS);
  const hits = (await rig.upstreamHits()).fast - hits0;
  const cpu = cpuSeconds(t.pid) - cpu0;
  const up = cpuSeconds(rig.upstream.pid) - up0;
  const extra = hits - sample.responses;
  return {
    ...sample,
    upstreamHits: hits,
    cpu_us: hits > 0 ? (cpu * 1e6) / hits : NaN,
    upstream_cpu_us: hits > 0 ? (up * 1e6) / hits : NaN,
    hitsOk: w.stream ? extra === 0 : extra >= 0 && extra <= c,
  };
}
