import { ApiError } from "./api.ts";

// A few DOM builders, so a view reads as the markup it makes. Every input gets a <label>, every
// message a live region, every table a caption and header cells: the page works with a keyboard
// and a screen reader.

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | ((e: Event) => void)>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (typeof v === "function") el.addEventListener(k.replace(/^on/, ""), v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(typeof c === "object" ? c : String(c));
  return el;
}

let ids = 0;
/** An input with its label; `hint` is read out with it (aria-describedby). */
export function field(label: string, input: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, hint?: string): HTMLElement {
  input.id ||= `f${++ids}`;
  const hintEl = hint ? h("small", { id: `${input.id}-hint`, class: "hint" }, hint) : null;
  if (hintEl) input.setAttribute("aria-describedby", hintEl.id);
  return h("div", { class: "field" }, h("label", { for: input.id }, label), input, hintEl);
}

export const input = (attrs: Attrs) => h("input", attrs);

export function select(name: string, options: [value: string, label: string][], value = ""): HTMLSelectElement {
  const s = h("select", { name });
  for (const [v, l] of options) s.append(h("option", { value: v, selected: v === value }, l));
  return s;
}

/** How a table lays out: `oneLine` keeps each row one line high; `numeric` columns (by index) align right in tabular figures. */
export interface TableLayout {
  oneLine?: boolean;
  numeric?: number[];
}

/** A column's header; with `optional`, a phone's narrow screen leaves the column out. */
export type Column = string | { label: string; optional: true };
/** A row of cells; with `class`, the row's own look (a revoked key). */
export type Row = Child[] | { cells: Child[]; class?: string };

const classes = (...names: (string | null | false | undefined)[]) => names.filter(Boolean).join(" ") || null;

/**
 * A table with a caption and column headers; rows of cells. On a phone each row becomes a card of
 * "label: value" lines (every cell carries its column's label), without the optional columns.
 */
export function table(caption: string, head: Column[], rows: Row[], empty = "Nothing yet.", layout: TableLayout = {}): HTMLElement {
  if (rows.length === 0) return h("section", { class: "table" }, h("h3", {}, caption), h("p", { class: "muted" }, empty));
  const cols = head.map((c) => (typeof c === "string" ? { label: c, optional: false } : c));
  const colClass = (i: number) => classes(cols[i]?.optional && "opt", layout.numeric?.includes(i) && "num");
  const cell = (c: Child, i: number) => h("td", { "data-label": cols[i]?.label ?? "", class: colClass(i) }, c);
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: classes("cards", layout.oneLine && "one-line") },
      h("caption", {}, caption),
      h("thead", {}, h("tr", {}, ...cols.map((c, i) => h("th", { scope: "col", class: colClass(i) }, c.label)))),
      h(
        "tbody",
        {},
        ...rows.map((r) => (Array.isArray(r) ? h("tr", {}, ...r.map(cell)) : h("tr", { class: r.class ?? null }, ...r.cells.map(cell)))),
      ),
    ),
  );
}

/** A text cut to the cell's width with an ellipsis; the whole text is its title (a long email). */
export const truncated = (text: string, child: Node | string = text) => h("span", { class: "trunc", title: text }, child);

/** A message area: errors are alerts (read at once), the rest polite status updates. */
export function messages(): { el: HTMLElement; ok(text: string): void; fail(e: unknown): void; clear(): void } {
  const el = h("div", { class: "messages", role: "status", "aria-live": "polite" });
  return {
    el,
    ok(text) {
      el.replaceChildren(h("p", { class: "ok" }, text));
    },
    fail(e) {
      // Only the message changes: the form above keeps what was typed, to correct and send again.
      el.replaceChildren(h("div", { class: "error", role: "alert" }, ...whatFailed(e)));
    },
    clear() {
      el.replaceChildren();
    },
  };
}

/**
 * What failed, in the words of the failure panel and the forms alike: the call and its status, the
 * server's message, and its request id to quote to the operator.
 */
export function whatFailed(e: unknown): HTMLElement[] {
  if (!(e instanceof ApiError)) return [h("p", {}, errorText(e))];
  const what = h("p", {}, `${e.call} failed${e.status ? ` (HTTP ${e.status})` : ""}: ${e.message}`);
  if (!e.requestId) return [what];
  return [what, h("p", { class: "muted" }, "Request id ", h("code", { "data-testid": "failed-request-id" }, e.requestId), " (quote it to the operator)")];
}

export function errorText(e: unknown): string {
  if (e instanceof ApiError) return e.requestId ? `${e.message} (request ${e.requestId})` : e.message;
  return e instanceof Error ? e.message : String(e);
}

/** What a submit is about to do, asked with `confirmed` before it runs: the question and the button that agrees. */
export type Ask = (data: FormData) => { question: string; yes: string };

/**
 * Wires a form's submit: the button is disabled while `run` works, and a failure is shown in `msg`
 * instead of escaping to the console. With `ask`, `run` waits for a yes in a dialog first.
 */
export function onSubmit(form: HTMLFormElement, msg: ReturnType<typeof messages>, run: (data: FormData) => Promise<void>, ask?: Ask): HTMLFormElement {
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    // Read before the buttons are disabled: FormData leaves out disabled fields, the submitter's
    // name=value among them (a Debit button once arrived as no op at all).
    const data = new FormData(form, (e as SubmitEvent).submitter);
    const buttons = [...form.querySelectorAll("button")];
    msg.clear();
    try {
      // Asked while the buttons still work: the modal dialog keeps the page inert meanwhile, and
      // closing it can give the focus back to the button that opened it.
      if (ask) {
        const { question, yes } = ask(data);
        if (!(await confirmed(question, yes))) return msg.ok("Cancelled: nothing changed.");
      }
      buttons.forEach((b) => (b.disabled = true));
      await run(data);
    } catch (err) {
      msg.fail(err);
    } finally {
      buttons.forEach((b) => (b.disabled = false));
    }
  });
  return form;
}

/**
 * Asks before what cannot be taken back, in a modal <dialog> that states it: focus moves to Cancel
 * (the harmless answer), Escape cancels, and focus returns where it was when it closes. True only
 * when `yes` is pressed.
 */
export function confirmed(question: string, yes: string): Promise<boolean> {
  const q = h("p", { id: `q${++ids}` }, question);
  const dialog = h(
    "dialog",
    { role: "alertdialog", "aria-labelledby": q.id, class: "confirm" },
    q,
    h("form", { method: "dialog" }, h("button", { value: "yes" }, yes), " ", h("button", { value: "no", class: "link", autofocus: true }, "Cancel")),
  );
  document.body.append(dialog);
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      dialog.remove();
      resolve(dialog.returnValue === "yes");
    });
    dialog.showModal();
  });
}

/**
 * Says `text` to a screen reader without moving the focus: one polite live region for the whole
 * page, in the document from the start (a region added with its text is often not read).
 */
export function announce(text: string): void {
  let region = document.getElementById("announcer");
  if (!region) {
    region = h("div", { id: "announcer", class: "sr-only", role: "status", "aria-live": "polite" });
    document.body.append(region);
  }
  // Emptied first, so the same words twice (two copies) are read twice.
  region.textContent = "";
  setTimeout(() => (region.textContent = text), 50);
}

/** A button that copies `text`; it says so, on the button and aloud, when it has. */
export function copyButton(text: string, label = "Copy"): HTMLButtonElement {
  const b = h("button", { type: "button", class: "copy", "aria-label": `${label} to the clipboard` }, label);
  b.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(text);
      b.textContent = "Copied";
      announce(`Copied: ${label.replace(/^Copy /, "")}`);
    } catch {
      // No clipboard permission (plain http on another host): the text is selectable beside the button.
      b.textContent = "Select and copy by hand";
      announce("Not copied: select the text and copy it by hand");
    }
  });
  return b;
}

/** What a view shows while its data loads: a spinner, and words a screen reader reads (a status). */
export const loading = (text = "Loading…") => h("div", { class: "loading", role: "status" }, h("span", { class: "spinner", "aria-hidden": "true" }), text);

/**
 * A view that could not load: what failed (the call, the server's message, its request id) and a
 * Retry that loads just this view again. An alert, so it is read at once.
 */
export function failure(title: string, e: unknown, retry: () => void): HTMLElement {
  return h("section", { class: "failed", role: "alert" }, heading(`${title}: not loaded`), ...whatFailed(e), h("button", { type: "button", onclick: retry }, "Retry"));
}

/** A block of text to copy: code, and its button. */
export function copyBlock(text: string, label: string): HTMLElement {
  return h("div", { class: "copy-block" }, h("pre", { tabindex: 0, "aria-label": label }, h("code", {}, text)), copyButton(text, `Copy ${label}`));
}

const USD = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 6 });
export const usd = (n: number | null | undefined) => (n === null || n === undefined ? "—" : USD.format(n));

// The browser's own time, with its zone named: the pages' days (the chart, the ledger's charges, the
// date filters) are UTC days, and a bare local time beside them reads as if it were one.
export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString(undefined, { timeZoneName: "short" }) : "—");

/** The page's heading: focused when the view opens, so a screen reader announces where it is. */
export const heading = (text: string) => h("h1", { tabindex: -1 }, text);
