import { api } from "../api.ts";
import type { Ctx } from "../context.ts";
import { copyButton, h, heading, messages, onSubmit, table, usd, when } from "../dom.ts";
import type { KeyList, KeyView, NewKeyView, PricedModel, Pricing } from "../../../http/api-schemas.ts";
import { keyBody, keyFields } from "./key-form.ts";
import { cheapest, snippetBlocks, snippets, testButton } from "./connect.ts";

// The account's keys: create (the whole key shown once, with a copy button), list, edit, revoke.

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
    h("h2", {}, `Key ${k.name ?? k.prefix} created`),
    h("p", {}, h("strong", {}, "Copy it now: "), "it is shown this once. The gateway keeps only its hash."),
    h("p", { class: "key-text" }, h("code", { "data-testid": "new-key" }, k.key!), " ", copyButton(k.key!, "Copy key")),
    h("p", {}, testButton(k.key!, models, tried)),
    tried,
    h("h3", {}, "Connect a client"),
    // A live region: the buttons' "Copied" is read out.
    h("div", { "aria-live": "polite", class: "snippets" }, ...snippetBlocks(snippets(location.origin, k.key!, model, models))),
  );
}

function revokeButton(ctx: Ctx, k: KeyView, msg: ReturnType<typeof messages>): HTMLElement {
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
      ctx.reload();
    } catch (e) {
      msg.fail(e);
    }
  });
  return b;
}

function editor(ctx: Ctx, k: KeyView, pricing: Pricing, defaultRpm: number, slot: HTMLElement): void {
  const msg = messages();
  const form = h(
    "form",
    { "aria-label": `Edit key ${k.prefix}`, class: "wide" },
    h("h2", {}, `Edit ${k.name ?? k.prefix}`),
    ...keyFields(pricing.models, k, defaultRpm),
    h("button", { type: "submit" }, "Save"),
    " ",
    h("button", { type: "button", class: "link", onclick: () => slot.replaceChildren() }, "Cancel"),
  );
  onSubmit(form, msg, async (d) => {
    await api<KeyView>("PATCH", `/api/keys/${k.id}`, keyBody(d, true));
    ctx.reload();
  });
  slot.replaceChildren(form, msg.el);
  form.querySelector("input")?.focus();
}

export async function keysView(ctx: Ctx): Promise<HTMLElement> {
  const [keys, pricing] = await Promise.all([api<KeyList>("GET", "/api/keys"), api<Pricing>("GET", "/api/pricing")]);
  const msg = messages();
  const created = h("div", {});
  const editSlot = h("div", {});
  const form = h("form", { "aria-label": "Create a key", class: "wide", hidden: true }, ...keyFields(pricing.models, null, keys.default_rpm), h("button", { type: "submit" }, "Create key"));
  // The form folds away behind its button: the list is what the page is mostly read for.
  const opener = h("button", { type: "button", "aria-expanded": "false", "aria-controls": (form.id = "new-key-form") }, "New key");
  opener.addEventListener("click", () => {
    form.hidden = !form.hidden;
    opener.setAttribute("aria-expanded", String(!form.hidden));
    if (!form.hidden) form.querySelector("input")?.focus();
  });
  const list = h("div", {});
  const drawList = (data: KeyView[]) =>
    list.replaceChildren(
      budgetNotice(data) ?? "",
      table(
        "Your keys",
        ["Prefix", "Name", "Status", "Restrictions", "Spent / quota", "Last used", "Actions"],
        data.map((k) => [
          h("code", {}, k.prefix),
          k.name ?? "",
          k.status,
          restrictions(k),
          spending(k),
          when(k.last_used_at ?? null),
          k.status === "revoked"
            ? ""
            : h("span", { class: "actions" }, h("button", { type: "button", onclick: () => editor(ctx, k, pricing, keys.default_rpm, editSlot) }, "Edit"), " ", revokeButton(ctx, k, msg)),
        ]),
        "No keys yet: press New key above.",
      ),
    );
  onSubmit(form, msg, async (d) => {
    const k = await api<NewKeyView>("POST", "/api/keys", keyBody(d, false));
    form.reset();
    form.hidden = true;
    opener.setAttribute("aria-expanded", "false");
    created.replaceChildren(shownOnce(k, pricing.models));
    drawList((await api<KeyList>("GET", "/api/keys")).data);
    created.querySelector<HTMLButtonElement>("button")?.focus();
  });
  drawList(keys.data);
  return h("section", {}, heading("Keys"), created, opener, form, msg.el, editSlot, list);
}
