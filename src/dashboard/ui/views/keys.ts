import { api } from "../api.ts";
import type { Ctx } from "../context.ts";
import { announce, copyButton, h, heading, messages, onSubmit, table, usd, when } from "../dom.ts";
import type { KeyList, KeyView, NewKeyView, PricedModel, Pricing } from "../../../http/api-schemas.ts";
import { keyBody, keyFields } from "./key-form.ts";
import { cheapest, snippetBlocks, snippets, testButton } from "./connect.ts";

// The account's keys: create (the whole key shown once, with a copy button), list, edit in the row,
// revoke; a revoked key stays listed, struck through, until the holder hides it from this browser.

const PER = { day: "today", week: "this week", month: "this month" } as const;

/** Spent against the quota and, with a budget, against the budget of the current UTC period. */
function spending(k: KeyView): HTMLElement {
  const b = k.budget;
  return h(
    "span",
    {},
    `${usd(k.spent_usd)} / ${k.quota_usd === null ? "no quota" : usd(k.quota_usd)}`,
    b ? h("br", {}) : null,
    b ? `${usd(b.spent_usd)} / ${usd(b.limit_usd)} ${PER[b.period]}` : null,
  );
}

/** The "budget reached" notice: keys refused for their budget in this period, and when each resets. */
function budgetNotice(keys: KeyView[]): HTMLElement | null {
  const reached = keys.filter((k) => k.status === "active" && k.budget?.reached);
  if (!reached.length) return null;
  return h(
    "div",
    { class: "low", role: "status", "data-testid": "budget-reached" },
    ...reached.map((k) => h("p", {}, `Budget reached: key ${k.name || k.prefix} has spent its ${usd(k.budget!.limit_usd)} ${PER[k.budget!.period]}; it resets at ${when(k.budget!.resets_at)}.`)),
  );
}

function restrictions(k: KeyView): string {
  const parts = [
    k.models ? `models: ${k.models.join(", ")}` : null,
    k.ip_allow ? `IPs: ${k.ip_allow.join(", ")}` : null,
    k.rpm ? `${k.rpm} rpm` : null,
    k.expires_at ? `expires ${when(k.expires_at)}` : null,
  ].filter(Boolean);
  return parts.length ? parts.join("; ") : "none";
}

/**
 * The panel that shows a new key: the only time its whole text exists outside the caller's hands,
 * so the clients' set-ups are filled in with it here, and the key can be tried at once.
 */
function shownOnce(k: NewKeyView, models: PricedModel[]): HTMLElement {
  const model = k.models?.[0] ?? cheapest(models, "chat.completions") ?? models[0]?.id ?? "";
  const tried = h("div", { "aria-live": "polite", "data-testid": "test-result" });
  return h(
    "div",
    { class: "once", role: "region", "aria-label": "Your new key" },
    h("h2", {}, `Key ${k.name || k.prefix} created`),
    h("p", {}, h("strong", {}, "Copy it now: "), "it is shown this once. The gateway keeps only its hash."),
    h("p", { class: "key-text" }, h("code", { "data-testid": "new-key" }, k.key!), " ", copyButton(k.key!, "Copy key")),
    h("p", {}, testButton(k.key!, models, tried)),
    tried,
    h("h3", {}, "Connect a client"),
    // A live region: the buttons' "Copied" is read out.
    h("div", { "aria-live": "polite", class: "snippets" }, ...snippetBlocks(snippets(location.origin, k.key!, model, models))),
  );
}

function revokeButton(k: KeyView, msg: ReturnType<typeof messages>, refresh: () => Promise<void>): HTMLElement {
  // Two steps instead of a confirm() dialog: the second press is the decision.
  const b = h("button", { type: "button", class: "danger" }, "Revoke");
  b.addEventListener("click", async () => {
    if (b.dataset.armed !== "1") {
      b.dataset.armed = "1";
      b.textContent = `Confirm: revoke ${k.prefix}`;
      return;
    }
    try {
      await api<KeyView>("DELETE", `/api/keys/${k.id}`);
      await refresh();
      announce(`Key ${k.name || k.prefix} revoked`);
    } catch (e) {
      msg.fail(e);
    }
  });
  return b;
}

/**
 * Edits a key in its own row: the row gives way to the form (every restriction), Save writes it and
 * redraws the list, Cancel puts the row back and the focus on its Edit button.
 */
function editInRow(row: HTMLTableRowElement, k: KeyView, pricing: Pricing, defaultRpm: number, refresh: () => Promise<void>): void {
  const msg = messages();
  const cancel = () => {
    editing.replaceWith(row);
    row.querySelector<HTMLButtonElement>("button")?.focus();
  };
  const form = h(
    "form",
    { "aria-label": `Edit key ${k.prefix}`, class: "inline-edit" },
    h("div", { class: "grid" }, ...keyFields(pricing.models, k, defaultRpm)),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Save"), h("button", { type: "button", class: "link", onclick: cancel }, "Cancel")),
  );
  form.addEventListener("keydown", (e) => {
    if (e.key === "Escape") cancel();
  });
  onSubmit(form, msg, async (d) => {
    const saved = await api<KeyView>("PATCH", `/api/keys/${k.id}`, keyBody(d, k));
    const list = editing.closest("table")?.parentElement?.parentElement;
    await refresh();
    const name = saved.name || saved.prefix;
    list?.querySelector<HTMLButtonElement>(`button[aria-label="Edit key ${CSS.escape(name)}"]`)?.focus();
    announce(`Key ${name} saved`);
  });
  const editing = h("tr", { class: "editing" }, h("td", { colspan: row.cells.length }, form, msg.el));
  row.replaceWith(editing);
  form.querySelector("input")?.focus();
}

/** Revoked keys the holder took off the list, in this browser only: the server keeps them. */
const HIDDEN = "gateway.hidden-keys";
const hiddenKeys = (): number[] => {
  try {
    return JSON.parse(localStorage.getItem(HIDDEN) ?? "[]") as number[];
  } catch {
    return [];
  }
};
const setHidden = (ids: number[]) => localStorage.setItem(HIDDEN, JSON.stringify(ids));

export async function keysView(_ctx: Ctx): Promise<HTMLElement> {
  const [keys, pricing] = await Promise.all([api<KeyList>("GET", "/api/keys"), api<Pricing>("GET", "/api/pricing")]);
  const msg = messages();
  const created = h("div", {});
  const form = h("form", { "aria-label": "Create a key", class: "wide", hidden: true }, ...keyFields(pricing.models, null, keys.default_rpm), h("button", { type: "submit" }, "Create key"));
  // The form folds away behind its button: the list is what the page is mostly read for.
  const opener = h("button", { type: "button", "aria-expanded": "false", "aria-controls": (form.id = "new-key-form") }, "New key");
  opener.addEventListener("click", () => {
    form.hidden = !form.hidden;
    opener.setAttribute("aria-expanded", String(!form.hidden));
    if (!form.hidden) form.querySelector("input")?.focus();
  });
  const list = h("div", {});
  const cells = (k: KeyView) => {
    const revoked = k.status === "revoked";
    const actions = revoked
      ? h("button", { type: "button", class: "link", "aria-label": `Hide revoked key ${k.prefix}`, onclick: () => (setHidden([...hiddenKeys(), k.id]), drawList(shownKeys)) }, "Hide")
      : h(
          "span",
          { class: "actions" },
          h("button", { type: "button", "aria-label": `Edit key ${k.name || k.prefix}`, onclick: (e: Event) => editInRow((e.target as HTMLElement).closest("tr")!, k, pricing, keys.default_rpm, refresh) }, "Edit"),
          revokeButton(k, msg, refresh),
        );
    return {
      class: revoked ? "revoked" : undefined,
      cells: [
        h("code", { class: "was" }, k.prefix),
        h("span", { class: "was" }, k.name ?? ""),
        h("span", { class: `badge ${k.status}` }, k.status),
        restrictions(k),
        spending(k),
        when(k.created_at),
        when(k.last_used_at ?? null),
        actions,
      ],
    };
  };
  let shownKeys: KeyView[] = keys.data;
  const drawList = (data: KeyView[]) => {
    shownKeys = data;
    const hidden = new Set(hiddenKeys());
    const visible = data.filter((k) => !(k.status === "revoked" && hidden.has(k.id)));
    const away = data.length - visible.length;
    list.replaceChildren(
      budgetNotice(data) ?? "",
      table(
        "Your keys",
        ["Prefix", "Name", "Status", { label: "Restrictions", optional: true }, "Spent / quota", { label: "Created", optional: true }, { label: "Last used", optional: true }, "Actions"],
        visible.map(cells),
        "No keys yet: press New key above.",
      ),
      away ? h("button", { type: "button", class: "link", onclick: () => (setHidden([]), drawList(shownKeys)) }, `Show ${away} hidden revoked key${away === 1 ? "" : "s"}`) : "",
    );
  };
  const refresh = async () => drawList((await api<KeyList>("GET", "/api/keys")).data);
  onSubmit(form, msg, async (d) => {
    const k = await api<NewKeyView>("POST", "/api/keys", keyBody(d, null));
    form.reset();
    form.hidden = true;
    opener.setAttribute("aria-expanded", "false");
    created.replaceChildren(shownOnce(k, pricing.models));
    await refresh();
    created.querySelector<HTMLButtonElement>("button")?.focus();
  });
  drawList(keys.data);
  return h("section", {}, heading("Keys"), created, opener, form, msg.el, list);
}
