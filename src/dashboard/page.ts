import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DashboardPage } from "../http/app.ts";
import index from "./index.html";

// The dashboard's page, an HTML import: Bun bundles it with its scripts and styles (at start from a
// checkout, at `bun build --compile` into the binary). Nothing comes from a CDN, so the page works
// offline. Its views talk to /api/ only.
//
// Bun serves an HTML import only as a static route, and a static route takes no headers of ours, so
// the page could not say that no other site may frame it. So Bun serves the bundle on a private
// server of this process, the gateway reads the page and its files from it once, and answers them
// itself, with the headers below (docs/dashboard.md#the-pages).

/**
 * What the page may load and run: its own bundled files only. A script that found its way into the
 * page (text of a key name, a note or an email, should a view ever write one as markup) does not run,
 * inline or from another host, and could send nothing elsewhere. The one inline thing is the favicon,
 * a `data:` image. No other site may show the dashboard in a frame: a page that frames a logged-in
 * holder's dashboard under a decoy could steer their clicks (create a key, top up).
 */
export const PAGE_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/** The page's and its files' headers: the policy above, X-Frame-Options for browsers older than CSP, no type sniffing. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  "x-frame-options": "DENY",
  "content-security-policy": PAGE_POLICY,
  "x-content-type-options": "nosniff",
};

/** Bun's own headers of a file worth keeping: its type and caching (the page `no-cache`, the hashed files immutable). */
const KEPT_HEADERS = ["content-type", "cache-control", "etag"];

interface PageFile {
  body: Uint8Array;
  headers: Record<string, string>;
}

// One build per bundle for the whole process: every gateway a process starts (tests start many) shares it.
const built = new Map<Bun.HTMLBundle, Promise<Map<string, PageFile>>>();

export function bundledPage(bundle: Bun.HTMLBundle): DashboardPage {
  return {
    async answer(request, pathname) {
      if (request.method !== "GET" && request.method !== "HEAD") return null;
      let files = built.get(bundle);
      if (!files) {
        files = readBundle(bundle);
        built.set(bundle, files);
        // A failed build is tried again on the next request rather than remembered.
        files.catch(() => built.delete(bundle));
      }
      // The emailed verification link's page is the dashboard's: its button POSTs the token (docs/dashboard.md#address-verification).
      const file = (await files).get(pathname === "/verify" ? "/" : pathname);
      if (!file) return null;
      if (request.headers.get("if-none-match") === file.headers.etag) return new Response(null, { status: 304, headers: file.headers });
      return new Response(request.method === "HEAD" ? null : file.body, { headers: file.headers });
    },
  };
}

/** The dashboard as the gateway serves it. */
export const dashboardPage = bundledPage(index);

/**
 * The page and every file it names, as Bun's static route serves them, read from a server on a unix
 * socket (no port, and no HTTP_PROXY in the way, which Bun's fetch would use even for loopback),
 * stopped once read.
 */
async function readBundle(bundle: Bun.HTMLBundle): Promise<Map<string, PageFile>> {
  const name = `gateway-dashboard-${process.pid}-${crypto.randomUUID()}`;
  // Linux's abstract sockets leave no file behind; elsewhere a file in the temporary folder.
  const unix = process.platform === "linux" ? `\0${name}` : join(tmpdir(), `${name}.sock`);
  const server = Bun.serve({ unix, development: false, routes: { "/": bundle }, fetch: () => new Response(null, { status: 404 }) });
  const files = new Map<string, PageFile>();
  const read = async (path: string): Promise<string> => {
    const res = await fetch(`http://localhost${path}`, { unix });
    if (!res.ok) throw new Error(`the dashboard's bundle did not serve ${path}: HTTP ${res.status}`);
    const body = new Uint8Array(await res.arrayBuffer());
    const headers: Record<string, string> = { ...PAGE_HEADERS };
    for (const h of KEPT_HEADERS) {
      const v = res.headers.get(h);
      if (v !== null) headers[h] = v;
    }
    files.set(path, { body, headers });
    return new TextDecoder().decode(body);
  };
  try {
    const html = await read("/");
    for (const ref of filesNamedBy(html)) {
      const text = await read(ref);
      if (ref.endsWith(".css")) for (const inner of filesNamedByCss(text)) if (!files.has(inner)) await read(inner);
    }
  } finally {
    await server.stop(true);
  }
  return files;
}

/** The page's own scripts and stylesheets: root-relative `src` and `href` of script and link tags. */
const filesNamedBy = (html: string) =>
  [...html.matchAll(/<(?:script|link)\b[^>]*?\s(?:src|href)="(\/[^"/][^"]*)"/g)].map((m) => m[1]!);

/** Fonts and images a stylesheet names by a root-relative url(). */
const filesNamedByCss = (css: string) => [...css.matchAll(/url\(\s*["']?(\/[^"')/][^"')]*)["']?\s*\)/g)].map((m) => m[1]!);
