import { api } from "../api.ts";
import { h, table, usd, when } from "../dom.ts";
import type { AdminStatus } from "../../../http/api-schemas.ts";

// The admin page's upstream capacity: each route's weight and circuit, and each key of its provider
// (by index and hash prefix: the key itself never leaves the server), resting or in flight
// (docs/dashboard.md#admin).

type RouteView = AdminStatus["routes"][number]["routes"][number];

const routeState = (r: RouteView) =>
  r.state === "open" ? "circuit open" : r.resting_until ? `every key resting until ${when(r.resting_until)}` : r.state;

function rows(status: AdminStatus) {
  return status.routes.flatMap((m) =>
    m.routes.flatMap((r) =>
      r.keys.map((k) => [
        h("code", {}, m.id),
        r.route,
        r.weight === null ? "fallback" : String(r.weight),
        routeState(r),
        h("code", {}, `#${k.index}${k.fingerprint ? ` ${k.fingerprint}` : ""}`),
        h("span", { "data-testid": `key-state-${r.route}-${k.index}` }, k.resting_until ? `resting until ${when(k.resting_until)}` : "ready"),
        String(k.in_flight),
        String(k.rests),
      ]),
    ),
  );
}

type InstanceReload = AdminStatus["instances"][number]["last_reload"];

/** An instance's last reload of its own config: applied (with its catalog) or refused (with the file's reason). */
const reloadText = (r: InstanceReload) =>
  r === null ? "none since its start" : r.reloaded ? `${when(r.at)}: applied, catalog ${r.catalog_version}` : `${when(r.at)}: refused, running config kept: ${r.error}`;

/**
 * With several instances (PostgreSQL), route health is each instance's own: the panel names the one
 * that answered, and lists every instance with the money its requests in flight hold.
 */
function instancesPart(status: AdminStatus): HTMLElement[] {
  if (status.instance === null) return [];
  const rows = status.instances.map((i) => [h("code", {}, i.id), when(i.heartbeat_at), String(i.holds), usd(i.held_usd), reloadText(i.last_reload)]);
  return [
    h("p", { "data-testid": "answering-instance" }, "Route health below is instance ", h("code", {}, status.instance), "'s own."),
    table("Instances", ["Instance", "Last heartbeat", "Holds", "Held", "Last reload"], rows, "No instance is heartbeating."),
  ];
}

/** Fills itself once the status comes: the page around it does not wait for it. */
export function upstreamsPanel(): HTMLElement {
  const el = h("div", { "aria-label": "Upstream keys" }, h("p", {}, "Loading upstream keys…"));
  api<AdminStatus>("GET", "/api/admin/status").then(
    (status) =>
      el.replaceChildren(
        ...instancesPart(status),
        table("Upstream keys", ["Model", "Route", "Weight", "Route state", "Key", "Key state", "In flight", "Overloads"], rows(status), "No routes."),
      ),
    (e) => el.replaceChildren(h("p", { role: "alert" }, `Upstream keys could not be read: ${(e as Error).message ?? e}`)),
  );
  return el;
}
