import index from "./index.html";

// The dashboard's page, an HTML import: Bun bundles it with its scripts and styles (at start from a
// checkout, at `bun build --compile` into the binary) and serves them itself, beside Elysia's routes.
// Nothing comes from a CDN, so the page works offline. Its views talk to /api/ only.

/** Bun's static routes of the dashboard: the page at `/`; its hashed chunks come with it. */
export const dashboardPages: Record<string, Bun.HTMLBundle> = { "/": index };
