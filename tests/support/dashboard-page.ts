import { expect } from "bun:test";

// The dashboard's page as a browser first loads it: the HTML at `/` and every script and stylesheet
// it names, each answered by the server itself (nothing from another host: the page works offline).

export interface PageAssets {
  html: string;
  /** Path → body, for every script and stylesheet the page names. */
  assets: Map<string, { type: string; body: string }>;
}

export async function loadDashboardPage(base: string): Promise<PageAssets> {
  const res = await fetch(`${base}/`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toStartWith("text/html");
  const html = await res.text();
  const refs = [...html.matchAll(/<(?:script|link)\b[^>]*?\s(?:src|href)="([^"]+)"/g)].map((m) => m[1]!).filter((r) => !r.startsWith("data:"));
  const assets = new Map<string, { type: string; body: string }>();
  for (const ref of refs) {
    expect(ref).toStartWith("/");
    const a = await fetch(new URL(ref, base));
    expect({ ref, status: a.status }).toEqual({ ref, status: 200 });
    assets.set(ref, { type: a.headers.get("content-type") ?? "", body: await a.text() });
  }
  return { html, assets };
}
