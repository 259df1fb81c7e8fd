// Small helpers for tests of key routes: requests with the key in x-api-key, bodies, SQL look-ups.
import type { TestGateway } from "./gateway.ts";
import { postBody, send, type Target } from "./http.ts";

/** POSTs a JSON body with the key in x-api-key (null: no key at all); http.ts's postJson sends it as Bearer. */
export function postWithApiKey(
  gw: Target,
  path: string,
  body: unknown,
  key: string | null,
  headers: Record<string, string> = {},
): Promise<Response> {
  return postBody(gw, path, body, { "content-type": "application/json", ...(key === null ? {} : { "x-api-key": key }), ...headers });
}

export function getWithKey(gw: Target, path: string, key: string | null, headers: Record<string, string> = {}): Promise<Response> {
  return send(gw, path, { headers: { ...(key === null ? {} : { "x-api-key": key }), ...headers } });
}

export function sqlAll<T = Record<string, unknown>>(gw: TestGateway, sql: string, ...params: (string | number | null)[]): T[] {
  return gw.services.db.$client.query(sql).all(...params) as T[];
}

export function sqlGet<T = Record<string, unknown>>(gw: TestGateway, sql: string, ...params: (string | number | null)[]): T {
  return gw.services.db.$client.query(sql).get(...params) as T;
}

/** The ledger rows of one account, oldest first. */
export const ledgerRows = (gw: TestGateway, accountId: number) =>
  sqlAll<{ kind: string; amount_nano: number; shortfall_nano: number; key_id: number | null; request_id: string | null }>(
    gw,
    "SELECT kind, amount_nano, shortfall_nano, key_id, request_id FROM ledger_entries WHERE account_id = ? ORDER BY id",
    accountId,
  );

/** A Messages body whose byte length (and so the reservation) is the same on every call. */
export const messagesBody = (maxTokens: number, model: string, text = "hi") => ({
  model,
  max_tokens: maxTokens,
  messages: [{ role: "user", content: text }],
});

/** The gateway's byte estimate of a JSON body: one token per 4 bytes, rounded up. */
export const estimateOf = (body: unknown) => Math.ceil(new TextEncoder().encode(JSON.stringify(body)).length / 4);
