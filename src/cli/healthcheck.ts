import { parse, UsageError } from "./args.ts";
import { localServer } from "./local-server.ts";

const TIMEOUT_MS = 3000;

/**
 * `gateway healthcheck`: the container's HEALTHCHECK. The runtime image has no curl, so the binary
 * asks its own server: GET /healthz on loopback, 200 or a one-line failure (non-zero exit).
 */
export async function healthcheckCommand(argv: string[]): Promise<void> {
  const { values } = parse(argv, { port: { type: "string" } });
  const url = `${localServer(values)}/healthz`;
  let status: number;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    status = res.status;
    await res.body?.cancel();
  } catch (e) {
    const why = (e as Error).name === "TimeoutError" ? `no answer within ${TIMEOUT_MS / 1000} s` : oneLine(e);
    throw new UsageError(`healthcheck: ${url}: ${why}`);
  }
  if (status !== 200) throw new UsageError(`healthcheck: ${url} answered ${status}`);
  if (values.json) console.log(JSON.stringify({ healthy: true, url }));
}

function oneLine(e: unknown): string {
  const err = e as { code?: string; message?: string };
  if (err.code === "ECONNREFUSED") return "connection refused (is the gateway running on this port?)";
  const text = (err.message ?? String(e)).split("\n")[0]!;
  return err.code && !text.includes(err.code) ? `${err.code}: ${text}` : text;
}
