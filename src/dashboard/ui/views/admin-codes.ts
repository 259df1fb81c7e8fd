import { api } from "../api.ts";
import { copyBlock, field, h, input, messages, onSubmit, table, usd, when } from "../dom.ts";
import type { CodeBatchList, NewCodeBatch } from "../../../http/api-schemas.ts";

// The admin page's redemption codes: the batches and their use, and a form that mints a batch whose
// codes are shown here once (the gateway keeps only their hashes).

const batchTable = (batches: CodeBatchList) =>
  table(
    "Code batches",
    ["Batch", "Value", "Used", "Unused", "Expires", "Note", "Created"],
    batches.data.map((b) => [String(b.id), usd(b.usd), `${b.used} of ${b.count}`, String(b.unused), b.expires_at ? `${when(b.expires_at)}${b.expired ? " (expired)" : ""}` : "never", b.note ?? "", when(b.created_at)]),
    "No codes yet.",
  );

export async function codesSection(): Promise<HTMLElement> {
  const list = h("div", {}, batchTable(await api<CodeBatchList>("GET", "/api/admin/codes")));
  const msg = messages();
  const shown = h("div", {});
  const form = h(
    "form",
    { "aria-label": "Create codes", class: "inline" },
    field("USD each", input({ type: "number", name: "usd", min: "0.01", step: "0.01", required: true, inputmode: "decimal", size: 6 })),
    field("Count", input({ type: "number", name: "count", min: 1, max: 10000, value: 1, required: true, size: 5 })),
    field("Expires", input({ type: "date", name: "expires" })),
    field("Note", input({ name: "note", maxlength: 200, size: 14 })),
    h("button", { type: "submit" }, "Create codes"),
  );
  onSubmit(form, msg, async (d) => {
    const made = await api<NewCodeBatch>("POST", "/api/admin/codes", {
      usd: String(d.get("usd")),
      count: Number(d.get("count")),
      expires: String(d.get("expires") ?? "") || null,
      note: String(d.get("note") ?? "") || null,
    });
    form.reset();
    shown.replaceChildren(h("p", { role: "status" }, `Batch ${made.id}: ${made.count} codes of ${usd(made.usd)}, shown only now.`), copyBlock(made.codes.join("\n"), "Copy codes"));
    // The list again, in place: a reload of the view would take the codes off the screen.
    list.replaceChildren(batchTable(await api<CodeBatchList>("GET", "/api/admin/codes")));
  });
  return h(
    "div",
    {},
    h("h2", {}, "Redemption codes"),
    form,
    msg.el,
    shown,
    list,
  );
}
