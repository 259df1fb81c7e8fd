// CSV as the CLI's --csv and the dashboard's export write it: one format for both.

/** RFC 4180: every field with a comma, quote or line break is quoted, quotes doubled; CRLF line ends. */
export function csv(header: string[], rows: (string | number | null)[][]): string {
  const field = (v: string | number | null) => {
    const s = v === null ? "" : String(v);
    return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
  };
  return [header, ...rows].map((r) => r.map(field).join(",")).join("\r\n") + "\r\n";
}
