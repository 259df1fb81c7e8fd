import { sql } from "drizzle-orm";
import { bigint, boolean, check, index, integer, pgEnum, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";

// The PostgreSQL twin of schema.ts (`[database] url`, docs/scaling.md): the same
// tables, columns, indexes and invariants, read there for the reasons; this file says only where
// PostgreSQL differs. tests/db/pg-schema.test.ts holds the two side by side.
//
// Money (_nano) and times (_at, unix ms) are bigint in "number" mode: JavaScript numbers, as on
// SQLite, exact below 2^53, which the ledger already caps every cost at (MAX_COST_NANO) and which
// no balance of ~9 million USD reaches. Token counts are bigint too: an upstream may report absurd
// counts (10^12) that int4 would refuse, failing the log row of a request already answered.
// Ids are bigint identities "by default", so that a copy from SQLite (migrate-db) keeps its ids.

const money = (name: string) => bigint(name, { mode: "number" });
const time = (name: string) => bigint(name, { mode: "number" });
const id = (name: string) => bigint(name, { mode: "number" });

export const accounts = pgTable(
  "accounts",
  {
    id: id("id").primaryKey().generatedByDefaultAsIdentity(),
    email: text("email").notNull().unique(),
    passwordHash: text("password_hash"),
    balanceNano: money("balance_nano").notNull().default(0),
    // PostgreSQL only: what the holds of running requests on every instance take from the balance,
    // so that a reserve is one conditional UPDATE (balance_nano - held_nano >= amount), never a
    // read-then-write across instances. SQLite keeps holds in the one serving process.
    heldNano: money("held_nano").notNull().default(0),
    disabledAt: time("disabled_at"),
    createdAt: time("created_at").notNull(),
    admin: boolean("admin").notNull().default(false),
    lowBalanceNano: money("low_balance_nano"),
    lowBalanceNotifiedAt: time("low_balance_notified_at"),
    // Set when the holder closed the account (docs/dashboard.md#closing-the-account): final.
    closedAt: time("closed_at"),
  },
  (t) => [
    // SQLite refuses a negative balance with an UPDATE trigger; a CHECK also covers INSERT and copies.
    check("accounts_balance_not_negative", sql`${t.balanceNano} >= 0`),
    check("accounts_held_not_negative", sql`${t.heldNano} >= 0`),
  ],
);

export const emailVerifications = pgTable(
  "email_verifications",
  {
    accountId: id("account_id").notNull().references(() => accounts.id),
    tokenHash: text("token_hash").notNull(),
    expiresAt: time("expires_at").notNull(),
    sentAt: time("sent_at").notNull(),
    verifiedAt: time("verified_at"),
  },
  (t) => [primaryKey({ columns: [t.accountId] }), uniqueIndex("email_verifications_token").on(t.tokenHash)],
);

export const accountLinks = pgTable(
  "account_links",
  {
    accountId: id("account_id").notNull().references(() => accounts.id),
    purpose: text("purpose").notNull(),
    tokenHash: text("token_hash").notNull(),
    newEmail: text("new_email"),
    expiresAt: time("expires_at").notNull(),
    sentAt: time("sent_at").notNull(),
    usedAt: time("used_at"),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.purpose] }), uniqueIndex("account_links_token").on(t.tokenHash)],
);

export const sessions = pgTable(
  "sessions",
  {
    id: text("id").primaryKey(),
    accountId: id("account_id").notNull().references(() => accounts.id),
    createdAt: time("created_at").notNull(),
    expiresAt: time("expires_at").notNull(),
    lastSeenAt: time("last_seen_at").notNull(),
    revokedAt: time("revoked_at"),
  },
  (t) => [index("sessions_account").on(t.accountId)],
);

export const twoFactor = pgTable(
  "two_factor",
  {
    accountId: id("account_id").notNull().references(() => accounts.id),
    secret: text("secret").notNull(),
    enabledAt: time("enabled_at"),
    // A TOTP time step (unix seconds / 30): bigint as the times are.
    lastStep: bigint("last_step", { mode: "number" }),
    createdAt: time("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId] })],
);

export const recoveryCodes = pgTable(
  "recovery_codes",
  {
    codeHash: text("code_hash").primaryKey(),
    accountId: id("account_id").notNull().references(() => accounts.id),
    createdAt: time("created_at").notNull(),
    usedAt: time("used_at"),
  },
  (t) => [index("recovery_codes_account").on(t.accountId)],
);

export const loginChallenges = pgTable(
  "login_challenges",
  {
    id: text("id").primaryKey(),
    accountId: id("account_id").notNull().references(() => accounts.id),
    createdAt: time("created_at").notNull(),
    expiresAt: time("expires_at").notNull(),
    usedAt: time("used_at"),
  },
  (t) => [index("login_challenges_expiry").on(t.expiresAt)],
);

export const auditLog = pgTable(
  "audit_log",
  {
    id: id("id").primaryKey().generatedByDefaultAsIdentity(),
    actorAccountId: id("actor_account_id"),
    action: text("action").notNull(),
    targetAccountId: id("target_account_id"),
    detail: text("detail"),
    createdAt: time("created_at").notNull(),
  },
  (t) => [index("audit_log_time").on(t.createdAt)],
);

export const accountNotes = pgTable(
  "account_notes",
  {
    accountId: id("account_id").notNull(),
    note: text("note").notNull(),
    updatedAt: time("updated_at").notNull(),
    updatedBy: id("updated_by"),
  },
  (t) => [uniqueIndex("account_notes_account").on(t.accountId)],
);

export const apiKeys = pgTable(
  "api_keys",
  {
    id: id("id").primaryKey().generatedByDefaultAsIdentity(),
    accountId: id("account_id").notNull().references(() => accounts.id),
    name: text("name").notNull().default(""),
    prefix: text("prefix").notNull(),
    keyHash: text("key_hash").notNull(),
    quotaNano: money("quota_nano"),
    spentNano: money("spent_nano").notNull().default(0),
    // PostgreSQL only: the key's share of running holds, for the quota's conditional UPDATE (as accounts.held_nano).
    heldNano: money("held_nano").notNull().default(0),
    models: text("models"),
    ipAllow: text("ip_allow"),
    rpm: integer("rpm"),
    expiresAt: time("expires_at"),
    revokedAt: time("revoked_at"),
    createdAt: time("created_at").notNull(),
    // As on SQLite (schema/sqlite.ts): the budget, and the ledger's counter of the period's spend.
    budgetNano: money("budget_nano"),
    budgetPeriod: text("budget_period"),
    periodStart: time("period_start").notNull().default(0),
    periodSpentNano: money("period_spent_nano").notNull().default(0),
    budgetReachedAt: time("budget_reached_at"),
  },
  (t) => [
    uniqueIndex("api_keys_key_hash").on(t.keyHash),
    index("api_keys_account").on(t.accountId),
    check("api_keys_spent_not_negative", sql`${t.spentNano} >= 0`),
    check("api_keys_held_not_negative", sql`${t.heldNano} >= 0`),
    check("api_keys_budget", sql`(${t.budgetNano} IS NULL) = (${t.budgetPeriod} IS NULL) AND (${t.budgetPeriod} IS NULL OR ${t.budgetPeriod} IN ('day', 'week', 'month'))`),
  ],
);

// An enum where SQLite has a text column and a CHECK: an unknown kind is refused by the type itself.
export const ledgerKind = pgEnum("ledger_kind", ["registration_credit", "top_up", "operator_credit", "charge", "operator_debit", "redemption"]);

// Append-only as on SQLite: the migration's triggers refuse UPDATE, DELETE and also TRUNCATE (a
// statement SQLite does not have).
export const ledgerEntries = pgTable(
  "ledger_entries",
  {
    id: id("id").primaryKey().generatedByDefaultAsIdentity(),
    accountId: id("account_id").notNull().references(() => accounts.id),
    kind: ledgerKind("kind").notNull(),
    amountNano: money("amount_nano").notNull(),
    shortfallNano: money("shortfall_nano").notNull().default(0),
    keyId: id("key_id"),
    requestId: text("request_id"),
    note: text("note"),
    externalRef: text("external_ref"),
    createdAt: time("created_at").notNull(),
  },
  (t) => [
    index("ledger_account_time").on(t.accountId, t.createdAt),
    index("ledger_account_credits").on(t.accountId, t.createdAt).where(sql`${t.kind} <> 'charge'`),
    uniqueIndex("ledger_external_ref").on(t.externalRef).where(sql`${t.externalRef} IS NOT NULL`),
    check(
      "ledger_kind_sign",
      // kind as text: a value added to the enum cannot be cast to in the transaction that adds it (migrations run in one).
      sql`(${t.kind}::text IN ('registration_credit', 'top_up', 'operator_credit', 'redemption') AND ${t.amountNano} > 0)
        OR (${t.kind} = 'charge' AND ${t.amountNano} <= 0)
        OR (${t.kind} = 'operator_debit' AND ${t.amountNano} < 0)`,
    ),
    check("ledger_shortfall_non_negative", sql`${t.shortfallNano} >= 0`),
  ],
);

export const checkoutStatus = pgEnum("checkout_status", ["pending", "credited"]);

export const checkoutSessions = pgTable(
  "checkout_sessions",
  {
    id: text("id").primaryKey(),
    accountId: id("account_id").notNull().references(() => accounts.id),
    amountNano: money("amount_nano").notNull(),
    status: checkoutStatus("status").notNull().default("pending"),
    createdAt: time("created_at").notNull(),
    creditedAt: time("credited_at"),
  },
  (t) => [
    index("checkout_sessions_account_time").on(t.accountId, t.createdAt),
    // The enum holds the statuses; this keeps the SQLite constraint's name, and adds that a credited
    // session says when (SQLite leaves it to the code).
    check("checkout_sessions_status", sql`(${t.status} = 'pending') = (${t.creditedAt} IS NULL)`),
    check("checkout_sessions_amount_positive", sql`${t.amountNano} > 0`),
  ],
);

export const codeBatches = pgTable(
  "code_batches",
  {
    id: id("id").primaryKey().generatedByDefaultAsIdentity(),
    amountNano: money("amount_nano").notNull(),
    count: integer("count").notNull(),
    note: text("note"),
    expiresAt: time("expires_at"),
    createdByAccountId: id("created_by_account_id"),
    createdAt: time("created_at").notNull(),
  },
  (t) => [check("code_batches_amount_positive", sql`${t.amountNano} > 0`), check("code_batches_count_positive", sql`${t.count} > 0`)],
);

export const redemptionCodes = pgTable(
  "redemption_codes",
  {
    codeHash: text("code_hash").primaryKey(),
    batchId: id("batch_id").notNull().references(() => codeBatches.id),
    redeemedByAccountId: id("redeemed_by_account_id").references(() => accounts.id),
    redeemedAt: time("redeemed_at"),
  },
  (t) => [
    index("redemption_codes_batch").on(t.batchId),
    check("redemption_codes_redeemed", sql`(${t.redeemedByAccountId} IS NULL) = (${t.redeemedAt} IS NULL)`),
  ],
);

// PostgreSQL only: the gateway processes sharing this database, each writing its heartbeat every few
// seconds; an instance silent for [cluster] hold_timeout_s has its holds released by the others.
export const instances = pgTable("instances", {
  id: text("id").primaryKey(),
  heartbeatAt: time("heartbeat_at").notNull(),
  // Which process holds the id now (random per start): the claim at start and every beat are
  // conditional on it, so two processes started at once under one id cannot both hold it.
  runId: text("run_id"),
  // The instance's last reload of its config (SIGHUP, POST /reload, or a `gateway reload` of the
  // fleet): when, on the database's clock, and its outcome as JSON (GET /api/admin/status).
  reloadedAt: time("reloaded_at"),
  lastReload: text("last_reload"),
});

// PostgreSQL only: the holds of running requests, as rows, since every instance spends the same
// balances (on SQLite they live in the serving process, src/store/ledger/holds.ts). Each one is added to
// accounts.held_nano and api_keys.held_nano in the same transaction that inserts it, and taken off
// when it is posted, voided or released with its silent instance.
export const holds = pgTable(
  "holds",
  {
    id: id("id").primaryKey().generatedByDefaultAsIdentity(),
    accountId: id("account_id").notNull().references(() => accounts.id),
    keyId: id("key_id").notNull().references(() => apiKeys.id),
    amountNano: money("amount_nano").notNull(),
    instanceId: text("instance_id").notNull().references(() => instances.id),
    createdAt: time("created_at").notNull(),
  },
  (t) => [
    // The sweep of a silent instance finds its holds by this.
    index("holds_instance").on(t.instanceId),
    check("holds_amount_non_negative", sql`${t.amountNano} >= 0`),
  ],
);

// request_id starts with the time (gw_ + base-36 ms), so its primary key index is in time order and
// pruning deletes a key range, as on SQLite. PostgreSQL has no WITHOUT ROWID: rows live in the heap
// beside that index, which is what PostgreSQL always does.
export const requestLogs = pgTable(
  "request_logs",
  {
    requestId: text("request_id").primaryKey(),
    accountId: id("account_id"),
    keyId: id("key_id"),
    method: text("method").notNull(),
    path: text("path").notNull(),
    endpoint: text("endpoint"),
    model: text("model"),
    provider: text("provider"),
    upstreamModel: text("upstream_model"),
    stream: boolean("stream").notNull().default(false),
    status: integer("status").notNull(),
    errorCode: text("error_code"),
    inputTokens: bigint("input_tokens", { mode: "number" }),
    outputTokens: bigint("output_tokens", { mode: "number" }),
    cacheReadTokens: bigint("cache_read_tokens", { mode: "number" }),
    cacheWriteTokens: bigint("cache_write_tokens", { mode: "number" }),
    /** 1-hour cache writes (cache_write_tokens holds the 5-minute ones); docs/pricing.md. */
    cacheWrite1hTokens: bigint("cache_write_1h_tokens", { mode: "number" }),
    webSearches: integer("web_searches"),
    /** The service tier the upstream's answer reported. */
    serviceTier: text("service_tier"),
    /** The region the upstream's answer says inference was pinned to (docs/pricing.md#regional-inference); null: global. */
    inferenceGeo: text("inference_geo"),
    images: integer("images"),
    /** Token-priced images (docs/pricing.md#images): edit sources' and output images' tokens; the prompt's are input_tokens. */
    imageInputTokens: bigint("image_input_tokens", { mode: "number" }),
    imageOutputTokens: bigint("image_output_tokens", { mode: "number" }),
    costNano: money("cost_nano").notNull().default(0),
    latencyMs: bigint("latency_ms", { mode: "number" }).notNull(),
    attempts: integer("attempts").notNull().default(0),
    /** The client's address as the key allow-lists see it (trust_proxy applied); null where the peer was not known. */
    clientIp: text("client_ip"),
    createdAt: time("created_at").notNull(),
  },
  (t) => [index("request_logs_key_time").on(t.keyId, t.createdAt)],
);

// SQLite leaves state to the code; here only the two states exist.
export const idempotencyState = pgEnum("idempotency_state", ["in_flight", "done"]);

export const idempotencyRecords = pgTable(
  "idempotency_records",
  {
    // The owning account's id: a record is the account's, whichever key sent it (store/idempotency/contract.ts).
    keyId: id("key_id").notNull(),
    idempotencyKey: text("idempotency_key").notNull(),
    bodySha256: text("body_sha256").notNull(),
    state: idempotencyState("state").notNull(),
    status: integer("status"),
    contentType: text("content_type"),
    responseBody: text("response_body"),
    requestId: text("request_id").notNull(),
    createdAt: time("created_at").notNull(),
    // PostgreSQL only: the instance whose request holds an in_flight claim, so that a start abandons
    // only its own earlier claims and a silent instance's are released with its holds.
    instanceId: text("instance_id"),
  },
  (t) => [primaryKey({ columns: [t.keyId, t.idempotencyKey] }), index("idempotency_time").on(t.createdAt)],
);

export const settings = pgTable("settings", {
  name: text("name").primaryKey(),
  value: text("value").notNull(),
});
