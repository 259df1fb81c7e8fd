import { asGatewayError, GatewayError } from "../../core/errors.ts";
import type { Services } from "../../services.ts";
import { json, type OpenCall } from "../exchange.ts";

// The operator's endpoints, outside /v1: liveness, readiness and metrics for orchestrators and
// Prometheus. Being outside /v1 they write no request log row. (`/` is the dashboard's page,
// served by Bun beside the table: dashboard/page.ts.) Who may read /metrics is ../operator-guard.ts's.

/**
 * GET /readyz: whether the database takes a write now (the group commit, owner of BEGIN and COMMIT,
 * probes it; on PostgreSQL the instance's heartbeat, a write, must be succeeding too), and the shared
 * limit store answers.
 */
async function writable(svc: Services): Promise<GatewayError | null> {
  const refusal = (await svc.commits.writeRefusal()) ?? svc.ledger.writeRefusal();
  return refusal ? asGatewayError(refusal) : null;
}

export const healthz = () => json({ status: "ok" });

export async function readyz({ svc }: OpenCall): Promise<Response> {
  const refusal = svc.settings.paused ? new GatewayError("product_paused", "The service is paused by its operator.", { retryAfter: 60 }) : await writable(svc);
  if (refusal) throw refusal;
  // With [limits] store, no key request is served while the store is away: not ready either.
  await svc.limiter.ready();
  return json({ status: "ready" });
}

export async function metrics({ svc }: OpenCall): Promise<Response> {
  return new Response(await svc.metrics.render(), { headers: { "content-type": svc.metrics.registry.contentType } });
}

/**
 * POST /reload, for `gateway reload` on this machine (`--local` on PostgreSQL): the config read
 * again, as SIGHUP does (docs/operations.md#reload). A refused file answers 422 with its one line; the running config stays.
 */
export function reload({ svc }: OpenCall): Response {
  const outcome = svc.live.reload();
  // Which instance it reached: behind several, `gateway reload --local` reloads this one only.
  const instance = svc.ledger.instanceId;
  if (!outcome.reloaded) return json({ reloaded: false, instance, error: outcome.error }, 422);
  const { source, catalogVersion, models, providers, needsRestart } = outcome;
  return json({ reloaded: true, instance, source, catalog_version: catalogVersion, models, providers, needs_restart: needsRestart });
}
