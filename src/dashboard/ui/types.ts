import type { RouteHealth } from "../../relay/health.ts";

// The /api/ answers the views read (docs/dashboard.md). Written out here, since the server's views
// are built inline by their handlers; a type that exists on the server is imported (type-only:
// nothing of the server's modules goes into the browser's bundle).

export interface List<T> {
  object: "list";
  data: T[];
  next?: string | number | null;
}

export interface Account {
  object: "account";
  id: number;
  email: string;
  admin: boolean;
  balance_usd: number;
  held_usd: number;
  spendable_usd: number;
  low_balance: { threshold_usd: number; below: boolean } | null;
  /** False until the emailed link is opened (a registration under [email]). */
  email_verified: boolean;
}

/** What POST /api/register adds to the account: the starting credit given, and whether the day's ceiling withheld it. */
export interface Registered {
  starting_credit_usd: number;
  starting_credit_limited: boolean;
}

export interface Key {
  object: "key";
  id: number;
  name: string | null;
  prefix: string;
  status: "active" | "expired" | "revoked";
  quota_usd: number | null;
  spent_usd: number;
  held_usd: number;
  models: string[] | null;
  ip_allow: string[] | null;
  rpm: number | null;
  expires_at: string | null;
  created_at: string;
  revoked_at: string | null;
  last_used_at?: string | null;
  /** The whole key: only in the answer that created it. */
  key?: string;
}

export interface PricedModel {
  id: string;
  aliases: string[];
  endpoints: string[];
  unit?: string;
  input?: number;
  output?: number;
  cache_read?: number;
  cache_write?: number;
  per_image?: number;
  image_input?: number;
  image_output?: number;
}

export interface Pricing {
  catalog_version: string;
  currency: string;
  minimum_top_up_usd: number;
  models: PricedModel[];
}

export type LedgerEntry =
  | { kind: "charges"; day: string; amount_usd: number; count: number; created_at: string }
  | { kind: string; amount_usd: number; note: string | null; external_ref: string | null; created_at: string };

export interface RequestRow {
  request_id: string;
  created_at: string;
  key_id: number | null;
  key_prefix: string | null;
  key_name: string | null;
  model: string | null;
  endpoint: string | null;
  path: string;
  status: number;
  error_code: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  cost_usd: number | null;
  latency_ms: number | null;
}

export interface DailyUsage {
  object: "usage";
  by: "key" | "model";
  days: string[];
  series: { id: string | number; label: string; cost_usd: number[] }[];
  total_usd: number[];
}

export interface Topup {
  id: string;
  amount_usd: number;
  status: "pending" | "credited";
  created_at: string;
  credited_at: string | null;
}

export interface Topups {
  object: "topups";
  enabled: boolean;
  minimum_usd: number;
  data: Topup[];
}

export interface AdminAccount {
  id: number;
  email: string;
  admin: boolean;
  disabled: boolean;
  balance_usd: number;
  held_usd: number;
  keys: number;
  spent_month_usd: number;
  last_activity_at: string | null;
  created_at: string;
}


export interface AdminStatus {
  paused: boolean;
  routes: { id: string; routes: RouteHealth[] }[];
}

export interface AuditRow {
  /** Null once the account is gone, or for the CLI's actions. */
  actor_email: string | null;
  action: string;
  target: string | null;
  detail: string | null;
  created_at: string;
}
