import { api } from "../api.ts";
import type { Ctx } from "../context.ts";
import { copyButton, h, heading, messages, onSubmit, table, usd, when } from "../dom.ts";
import type { KeyList, KeyView, NewKeyView, Pricing } from "../../../http/api-schemas.ts";
import { keyBody, keyFields } from "./key-form.ts";

// The account's keys: create (the whole key shown once, with a copy button), list, edit, revoke.

function restrictions(k: KeyView): string {
  const parts = [
    k.models ? `models: ${k.models.join(", ")}` : null,
    k.ip_allow ? `IPs: ${k.ip_allow.join(", ")}` : null,
    k.rpm ? `${k.rpm} rpm` : null,
    k.expires_at ? `expires ${when(k.expires_at)}` : null,
  ].filter(Boolean);
  return parts.length ? parts.join("; ") : "none";
}

/** The panel that shows a new key: the only time its whole text exists outside the caller's hands. */
function shownOnce(k: NewKeyView): HTMLElement {
  return h(
    "div",
    { class: "once", role: "region", "aria-label": "Your new key" },
    h("h2", {}, `Key ${k.name ?? k.prefix} created`),
    h("p", {}, h("strong", {}, "Copy it now: "), "it is shown this once. The gateway keeps only its hash."),
    h("p", { class: "key-text" }, h("code", { "data-testid": "new-key" }, k.key!), " ", copyButton(k.key!, "Copy key")),
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

function editor(ctx: Ctx, k: KeyView, pricing: Pricing, slot: HTMLElement): void {
  const msg = messages();
  const form = h(
    "form",
    { "aria-label": `Edit key ${k.prefix}`, class: "wide" },
    h("h2", {}, `Edit ${k.name ?? k.prefix}`),
    ...keyFields(pricing.models, k),
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
  const form = h("form", { "aria-label": "Create a key", class: "wide" }, ...keyFields(pricing.models, null), h("button", { type: "submit" }, "Create key"));
  const list = h("div", {});
  const drawList = (data: KeyView[]) =>
    list.replaceChildren(
      table(
        "Your keys",
        ["Prefix", "Name", "Status", "Restrictions", "Spent / quota", "Last used", "Actions"],
        data.map((k) => [
          h("code", {}, k.prefix),
          k.name ?? "",
          k.status,
          restrictions(k),
          `${usd(k.spent_usd)} / ${k.quota_usd === null ? "no quota" : usd(k.quota_usd)}`,
          when(k.last_used_at ?? null),
          k.status === "revoked"
            ? ""
            : h("span", { class: "actions" }, h("button", { type: "button", onclick: () => editor(ctx, k, pricing, editSlot) }, "Edit"), " ", revokeButton(ctx, k, msg)),
        ]),
        "No keys yet: create one above.",
      ),
    );
  onSubmit(form, msg, async (d) => {
    const k = await api<NewKeyView>("POST", "/api/keys", keyBody(d, false));
    form.reset();
    created.replaceChildren(shownOnce(k));
    drawList((await api<KeyList>("GET", "/api/keys")).data);
    created.querySelector<HTMLButtonElement>("button")?.focus();
  });
  drawList(keys.data);
  return h("section", {}, heading("Keys"), created, h("h2", {}, "New key"), form, msg.el, editSlot, list);
}
