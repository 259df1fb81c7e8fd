import type { Config } from "../config/load.ts";
import { NANO_PER_USD } from "../core/money.ts";
import type { TopUpReceipt } from "../store/checkouts/contract.ts";

// A card top-up's receipt (docs/dashboard.md#receipts): one page the holder opens or prints from the
// dashboard, and the same lines as the email sent when the top-up is credited under [email]. Only
// card top-ups get one: the gateway took that payment; an operator's credit or a code is the
// operator's to document.

/** Who issued the receipt: the dashboard's address (`[server] public_url`) and `[dashboard] support_contact`. */
export interface Issuer {
  site: string;
  contact: string | null;
}

/** The issuer from the config; `origin` stands in for an unset public_url (the request's, on the page). */
export const issuerOf = (config: Pick<Config, "publicUrl" | "dashboard">, origin = ""): Issuer => ({
  site: config.publicUrl ? config.publicUrl.replace(/\/+$/, "") : origin,
  contact: config.dashboard.supportContact,
});

/** The receipt's number: its top_up entry's id, so the books find it and no two receipts share one. */
export const receiptNumber = (r: TopUpReceipt) => `R-${String(r.entryId).padStart(6, "0")}`;

/** A top-up is whole cents: two decimals, as the holder paid it. */
const dollars = (nano: number) => `${Math.floor(nano / NANO_PER_USD)}.${String(Math.round((nano % NANO_PER_USD) / 10_000_000)).padStart(2, "0")}`;

/** The time with its zone named: UTC, the zone of every time on the books. */
const utc = (ms: number) => `${new Date(ms).toISOString().slice(0, 19).replace("T", " ")} UTC`;

/** The receipt's lines, label and value, in order. */
export function receiptLines(r: TopUpReceipt, issuer: Issuer): [string, string][] {
  return [
    ["Receipt number", receiptNumber(r)],
    ["Date", utc(r.creditedAt)],
    ["Amount paid", `${dollars(r.amountNano)} USD`],
    ["For", "Prepaid API credit, added to the account's balance"],
    ["Paid by", "Card, through Stripe Checkout"],
    ["Payment reference", r.paymentRef ?? "(none)"],
    ["Checkout session", r.sessionId],
    ["Account", `${r.email} (account ${r.accountId})`],
    ["Issued by", issuer.site],
    ["Contact", issuer.contact ?? issuer.site],
  ];
}

export function receiptText(r: TopUpReceipt, issuer: Issuer): string {
  const lines = receiptLines(r, issuer);
  const width = Math.max(...lines.map(([label]) => label.length));
  return `Receipt for your top-up\n\n${lines.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join("\n")}\n\nPaid in full. Keep this receipt for your records.\n`;
}

// The page's only style, allowed by its hash: the page runs no script and loads nothing.
const STYLE = "body{font:14px/1.5 system-ui,sans-serif;max-width:40em;margin:2em auto;color:#111}th{text-align:left;padding-right:2em;font-weight:600}td,th{padding:.3em 0;vertical-align:top}";
const STYLE_HASH = new Bun.CryptoHasher("sha256").update(STYLE).digest("base64");

/** What the receipt page may do: show its own text with its one style; no script, no request, no frame. */
export const RECEIPT_POLICY = `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

const escape = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

export function receiptHtml(r: TopUpReceipt, issuer: Issuer): string {
  const rows = receiptLines(r, issuer)
    .map(([label, value]) => `<tr><th scope="row">${escape(label)}</th><td>${escape(value)}</td></tr>`)
    .join("");
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Receipt ${escape(receiptNumber(r))}</title><style>${STYLE}</style></head><body><h1>Receipt</h1><table>${rows}</table><p>Paid in full. Print this page (Ctrl+P or ⌘P) or save it as PDF for your records.</p></body></html>`;
}
