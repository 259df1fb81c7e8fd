import { api } from "../api.ts";
import type { Ctx } from "../context.ts";
import { field, h, input, type messages, onSubmit } from "../dom.ts";
import type { AdminAccount } from "../../../http/api-schemas.ts";

// The controls of the admin pages that change an account or the product: credit or debit after a
// confirmation, and the switches (disable, enable, pause, resume).

const AMOUNT = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 9 });

type Messages = ReturnType<typeof messages>;

function moveOf(d: FormData): { op: "credit" | "debit"; usd: number; note: string } {
  const op = d.get("op");
  if (op !== "credit" && op !== "debit") throw new Error("Choose Credit or Debit.");
  return { op, usd: Number(d.get("usd")), note: String(d.get("note")) };
}

/** An Idempotency-Key: random hex, from getRandomValues (randomUUID needs HTTPS, which a dashboard on plain HTTP lacks). */
const freshKey = () => Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");

/**
 * Credit or debit: the direction is a required choice of its own, never read from which button was
 * pressed or guessed when absent, and a dialog states amount and direction before the money moves.
 * A closed account offers Debit only: the server refuses its credit (closure is final), while a debit
 * still corrects money that reached it after the closure.
 */
export function moneyForm(ctx: Ctx, a: AdminAccount, msg: Messages): HTMLElement {
  const op = (value: string, label: string) => h("label", { class: "check" }, input({ type: "radio", name: "op", value, required: true, checked: a.closed || null }), ` ${label}`);
  const form = h(
    "form",
    { "aria-label": `${a.closed ? "Debit" : "Credit or debit"} ${a.email}`, class: "inline" },
    h("fieldset", { class: "op" }, h("legend", {}, "Direction"), a.closed ? null : op("credit", "Credit"), op("debit", "Debit")),
    field("USD", input({ type: "number", name: "usd", min: "0.01", step: "0.01", required: true, inputmode: "decimal", size: 6 })),
    field("Note", input({ name: "note", required: true, maxlength: 200, size: 14 })),
    h("button", { type: "submit" }, "Review"),
  );
  // One Idempotency-Key per move (docs/dashboard.md#idempotent-credits-and-debits): sending the same
  // move again (a second click, a retry after "did not answer" when the first did land) reuses it
  // and moves the money once; a changed amount, note or direction is a new move with a new key.
  let pending: { body: string; key: string } | null = null;
  onSubmit(
    form,
    msg,
    async (d) => {
      const move = moveOf(d);
      const body = JSON.stringify(move);
      if (pending?.body !== body) pending = { body, key: freshKey() };
      await api<AdminAccount>("POST", `/api/admin/accounts/${a.id}/${move.op}`, move, { "idempotency-key": pending.key });
      pending = null;
      ctx.reload();
    },
    (d) => {
      const { op, usd, note } = moveOf(d);
      const amount = `${AMOUNT.format(usd)} USD`;
      const [verb, way] = op === "debit" ? ["Debit", "from"] : ["Credit", "to"];
      return { question: `${verb} ${amount} ${way} ${a.email}? Note: ${note}`, yes: `${verb} ${amount}` };
    },
  );
  return form;
}

export function switchButton(ctx: Ctx, label: string, path: string, msg: Messages, danger = false): HTMLButtonElement {
  return h(
    "button",
    {
      type: "button",
      class: danger ? "danger" : null,
      onclick: async () => {
        try {
          await api("POST", path);
          ctx.reload();
        } catch (e) {
          msg.fail(e);
        }
      },
    },
    label,
  );
}

/**
 * Disable or Enable: none on a closed account, nor on the admin's own account, which the server refuses to disable (an admin
 * who disabled itself would be locked out of the page that undoes it).
 */
export function accountSwitch(ctx: Ctx, a: AdminAccount, msg: Messages): HTMLElement | null {
  // Closed by its holder: final, nothing to switch (the server refuses it too).
  if (a.closed) return null;
  if (a.disabled) return switchButton(ctx, "Enable", `/api/admin/accounts/${a.id}/enable`, msg);
  if (a.id === ctx.me?.id) return null;
  return switchButton(ctx, `Disable ${a.email}`, `/api/admin/accounts/${a.id}/disable`, msg, true);
}
