import { field, h, input, select } from "../dom.ts";
import type { KeyView, PricedModel } from "../../../http/api-schemas.ts";

// The form of a key's restrictions, for creating and for editing. The server applies the CLI's rules
// (one implementation); the form only turns fields into the body, and its refusals name the field.

const pad = (n: number) => String(n).padStart(2, "0");
/** An ISO time as a datetime-local input's value, in the browser's zone. */
function localValue(iso: string | null): string {
  if (!iso) return "";
  const d = new Date(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function modelChoices(models: PricedModel[], chosen: string[] | null): HTMLElement {
  const text = models.filter((m) => m.endpoints.length > 0);
  return h(
    "fieldset",
    { class: "models" },
    h("legend", {}, "Allowed models (none ticked: every model)"),
    ...text.map((m) =>
      h(
        "label",
        { class: "check" },
        input({ type: "checkbox", name: "models", value: m.id, checked: chosen?.includes(m.id) ?? false }),
        " ",
        m.id,
        m.aliases.length ? h("small", { class: "muted" }, ` (also ${m.aliases.join(", ")})`) : null,
      ),
    ),
  );
}

export function keyFields(models: PricedModel[], key: KeyView | null, defaultRpm: number): HTMLElement[] {
  // A holder may lower a key's limit, not raise it past the default (or past what the operator gave it).
  const most = Math.max(defaultRpm, key?.rpm ?? 0);
  return [
    field("Name", input({ name: "name", maxlength: 100, value: key?.name ?? "", autocomplete: "off" })),
    field("Quota (USD)", input({ type: "number", name: "quota_usd", min: 0, step: "0.01", inputmode: "decimal", value: key?.quota_usd ?? "" }), "Empty: no quota; the balance is the limit."),
    field("Budget (USD)", input({ type: "number", name: "budget_usd", min: 0, step: "0.01", inputmode: "decimal", value: key?.budget_usd ?? "" }), "With a period: refused until it resets. Empty: no budget."),
    field("Budget resets", select("budget_period", [["day", "each day (UTC)"], ["week", "each week (Monday, UTC)"], ["month", "each month (the 1st, UTC)"]], key?.budget_period ?? "day")),
    modelChoices(models, key?.models ?? null),
    field("Expires", input({ type: "datetime-local", name: "expires_at", value: localValue(key?.expires_at ?? null) }), "Empty: never."),
    field("IP allow-list", input({ name: "ip_allow", value: key?.ip_allow?.join(", ") ?? "", placeholder: "203.0.113.7, 10.0.0.0/8", autocomplete: "off" }), "Addresses or CIDRs, comma-separated. Empty: any address."),
    field("Requests per minute", input({ type: "number", name: "rpm", min: 1, max: most, step: 1, inputmode: "numeric", value: key?.rpm ?? "" }), `Empty: the gateway's default, ${defaultRpm} per minute. At most ${most}.`),
  ];
}

/**
 * The body of POST or PATCH /api/keys. Creating (`edited` null) leaves empty fields out; editing
 * sends them as null, which removes that restriction, and leaves out an expiry left as it was: sent
 * again it would be refused once past (an expired key could not be renamed), and the field's
 * minutes would drop the stored seconds.
 */
export function keyBody(d: FormData, edited: KeyView | null): Record<string, unknown> {
  const editing = edited !== null;
  const empty = editing ? null : undefined;
  const text = (k: string) => String(d.get(k) ?? "").trim();
  const list = (s: string) => s.split(/[\s,]+/).filter(Boolean);
  const models = d.getAll("models").map(String);
  const body: Record<string, unknown> = {
    name: text("name") || (editing ? "" : undefined),
    quota_usd: text("quota_usd") === "" ? empty : text("quota_usd"),
    // Amount and period together; emptied in an edit, the budget is removed (null, no period).
    budget_usd: text("budget_usd") === "" ? empty : text("budget_usd"),
    budget_period: text("budget_usd") === "" ? undefined : text("budget_period"),
    models: models.length ? models : empty,
    expires_at:
      editing && text("expires_at") === localValue(edited.expires_at) ? undefined : text("expires_at") === "" ? empty : new Date(text("expires_at")).toISOString(),
    ip_allow: text("ip_allow") === "" ? empty : list(text("ip_allow")),
    rpm: text("rpm") === "" ? empty : Number(text("rpm")),
  };
  for (const k of Object.keys(body)) if (body[k] === undefined) delete body[k];
  return body;
}
