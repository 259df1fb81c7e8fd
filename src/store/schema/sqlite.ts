import { sql } from "drizzle-orm";
import { sqliteTable, text, integer, index, primaryKey, uniqueIndex, check } from "drizzle-orm/sqlite-core";

// Money columns end in _nano: integer nano-dollars (1 USD = 1e9). Times are unix milliseconds.
// Balances are denormalised onto accounts so the hot path never sums the ledger;
// docs/database.md shows the query that proves balance_nano = SUM(ledger_entries.amount_nano).

export const accounts = sqliteTable("accounts", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  email: text("email").notNull().unique(),
  passwordHash: text("password_hash"),
  balanceNano: integer("balance_nano").notNull().default(0),
  // Set by `gateway account disable`: the account's keys are refused (403 inactive) until enabled.
  disabledAt: integer("disabled_at"),
  createdAt: integer("created_at").notNull(),
  // Sees the admin page of the dashboard (`gateway account create --admin`).
  admin: integer("admin", { mode: "boolean" }).notNull().default(false),
  // The dashboard's low-balance notice shows while spendable is below this; null: no notice.
  lowBalanceNano: integer("low_balance_nano"),
  // When the low-balance notice was sent (email, webhook); cleared once the balance is back at or
  // above the threshold, so that each crossing sends one notice, not each request below it.
  lowBalanceNotifiedAt: integer("low_balance_notified_at"),
  // Set when the holder closed the account (docs/dashboard.md#closing-the-account): final, with
  // disabled_at set in the same write; the row and its ledger stay, its address is anonymised.
  closedAt: integer("closed_at"),
});

// A registration's address check under [email] (docs/dashboard.md#address-verification): one row per
// account that registered while it was on; the starting credit is granted when verified_at is set.
// token_hash is the SHA-256 of the link's random token (a copy of the file opens nothing); a resend
// replaces it, so only the newest link works, and using it sets verified_at, so it works once.
export const emailVerifications = sqliteTable(
  "email_verifications",
  {
    accountId: integer("account_id").notNull().references(() => accounts.id),
    tokenHash: text("token_hash").notNull(),
    expiresAt: integer("expires_at").notNull(),
    sentAt: integer("sent_at").notNull(),
    verifiedAt: integer("verified_at"),
  },
  (t) => [primaryKey({ columns: [t.accountId] }), uniqueIndex("email_verifications_token").on(t.tokenHash)],
);

// The single-use emailed links other than a registration's (docs/dashboard.md#password-reset and
// #change-of-email): one row per account and purpose, so a new request replaces the old link.
// token_hash is the SHA-256 of the link's random token, as for email_verifications; used_at set
// means used, so a link works once. new_email: the address an email change confirms (null for a reset).
export const accountLinks = sqliteTable(
  "account_links",
  {
    accountId: integer("account_id").notNull().references(() => accounts.id),
    purpose: text("purpose").notNull(),
    tokenHash: text("token_hash").notNull(),
    newEmail: text("new_email"),
    expiresAt: integer("expires_at").notNull(),
    sentAt: integer("sent_at").notNull(),
    usedAt: integer("used_at"),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.purpose] }), uniqueIndex("account_links_token").on(t.tokenHash)],
);

// Dashboard sessions. The id is the SHA-256 of the cookie's random token, so a copy of the file
// opens no session; a row is revoked (logout, password change), never reused.
export const sessions = sqliteTable(
  "sessions",
  {
    id: text("id").primaryKey(),
    accountId: integer("account_id").notNull().references(() => accounts.id),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
    revokedAt: integer("revoked_at"),
  },
  (t) => [index("sessions_account").on(t.accountId)],
);

// Two-factor login (docs/dashboard.md#two-factor-login): one row per account that set it up. While
// enabled_at is null the secret awaits its first code and a login asks for none. last_step is the
// TOTP time step of the newest code accepted: a code of that step or older is refused (replay).
// The secret is stored as the authenticator app holds it (base32): no key in the config could
// encrypt it, so a copy of the database holds it; docs/database.md#the-two-factor-secret says what that means.
export const twoFactor = sqliteTable(
  "two_factor",
  {
    accountId: integer("account_id").notNull().references(() => accounts.id),
    secret: text("secret").notNull(),
    enabledAt: integer("enabled_at"),
    lastStep: integer("last_step"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId] })],
);

// The single-use recovery codes of an account with two-factor login: their SHA-256 (80 random bits
// each, so a hash opens nothing), shown once at enabling; used_at set by the login that used one.
export const recoveryCodes = sqliteTable(
  "recovery_codes",
  {
    codeHash: text("code_hash").primaryKey(),
    accountId: integer("account_id").notNull().references(() => accounts.id),
    createdAt: integer("created_at").notNull(),
    usedAt: integer("used_at"),
  },
  (t) => [index("recovery_codes_account").on(t.accountId)],
);

// A login whose password was right, waiting for its second factor: the SHA-256 of the token handed
// to the browser, good for 5 minutes and for one completed login (used_at).
export const loginChallenges = sqliteTable(
  "login_challenges",
  {
    id: text("id").primaryKey(),
    accountId: integer("account_id").notNull().references(() => accounts.id),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    usedAt: integer("used_at"),
  },
  (t) => [index("login_challenges_expiry").on(t.expiresAt)],
);

// Who did what to whom from the admin side: actions that are not money (money is a ledger row).
// actor_account_id is null for the operator's CLI.
export const auditLog = sqliteTable(
  "audit_log",
  {
    id: integer("id").primaryKey(),
    actorAccountId: integer("actor_account_id"),
    action: text("action").notNull(),
    targetAccountId: integer("target_account_id"),
    detail: text("detail"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("audit_log_time").on(t.createdAt)],
);

// The operator's note on an account (docs/dashboard.md#an-accounts-page): one row per account that
// has one, beside accounts so that the hot path's account rows stay as they are. Each change is an
// audit row too (account_note_set).
export const accountNotes = sqliteTable(
  "account_notes",
  {
    accountId: integer("account_id").notNull(),
    note: text("note").notNull(),
    updatedAt: integer("updated_at").notNull(),
    updatedBy: integer("updated_by"),
  },
  // A unique index rather than a primary key: SQLite's integer primary key is the rowid, which the
  // schemas' comparison reads as a default PostgreSQL's would not have.
  (t) => [uniqueIndex("account_notes_account").on(t.accountId)],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    accountId: integer("account_id").notNull().references(() => accounts.id),
    name: text("name").notNull().default(""),
    // First characters of the key, enough for an operator to recognise it; never the secret part.
    prefix: text("prefix").notNull(),
    keyHash: text("key_hash").notNull(),
    quotaNano: integer("quota_nano"),
    spentNano: integer("spent_nano").notNull().default(0),
    // JSON arrays; null means no restriction.
    models: text("models"),
    ipAllow: text("ip_allow"),
    rpm: integer("rpm"),
    expiresAt: integer("expires_at"),
    revokedAt: integer("revoked_at"),
    createdAt: integer("created_at").notNull(),
    // A budget that resets (ledger/budget.ts): both set or both null.
    budgetNano: integer("budget_nano"),
    budgetPeriod: text("budget_period"),
    // The ledger's: what the key spent since period_start (a period's start, unix ms; 0: never),
    // written with spent_nano; a counter of an earlier period reads as 0.
    periodStart: integer("period_start").notNull().default(0),
    periodSpentNano: integer("period_spent_nano").notNull().default(0),
    // The ledger's: when a request was first refused for the budget in its period (the "budget reached" notice).
    budgetReachedAt: integer("budget_reached_at"),
  },
  // No CHECK on the budget here: adding one rebuilds SQLite's table; keys/rows.ts refuses what PostgreSQL's CHECK refuses.
  (t) => [uniqueIndex("api_keys_key_hash").on(t.keyHash), index("api_keys_account").on(t.accountId)],
);

// Append-only: a row is never updated or deleted. kind is one of
// registration_credit, top_up, operator_credit, redemption (positive: a redemption code's value),
// charge, operator_debit (negative: a correction by `gateway account debit`, never below a zero balance).
// Every index here is written by every charge, so only the ones an operator needs exist: the rowid
// grows without AUTOINCREMENT (rows are never deleted, so ids are never reused) and external_ref is
// indexed only where it is set (payments), not on the millions of charge rows.
export const ledgerEntries = sqliteTable(
  "ledger_entries",
  {
    id: integer("id").primaryKey(),
    accountId: integer("account_id").notNull().references(() => accounts.id),
    kind: text("kind").notNull(),
    amountNano: integer("amount_nano").notNull(),
    // What the request cost but could not be charged because the balance would have gone negative.
    shortfallNano: integer("shortfall_nano").notNull().default(0),
    keyId: integer("key_id"),
    requestId: text("request_id"),
    note: text("note"),
    externalRef: text("external_ref"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    index("ledger_account_time").on(t.accountId, t.createdAt),
    // The account's statement (GET /api/ledger) lists the few credits and debits among its charges;
    // partial, so a charge writes nothing here (measured: 40-70 ms a page at 200 000 charges without it).
    index("ledger_account_credits").on(t.accountId, t.createdAt).where(sql`${t.kind} <> 'charge'`),
    uniqueIndex("ledger_external_ref").on(t.externalRef).where(sql`${t.externalRef} IS NOT NULL`),
    // The invariants the schema can hold (docs/database.md): known kinds only, each with its sign;
    // a charge may be 0 (all shortfall), never positive; shortfall is never negative.
    check(
      "ledger_kind_sign",
      sql`(${t.kind} IN ('registration_credit', 'top_up', 'operator_credit', 'redemption') AND ${t.amountNano} > 0)
        OR (${t.kind} = 'charge' AND ${t.amountNano} <= 0)
        OR (${t.kind} = 'operator_debit' AND ${t.amountNano} < 0)`,
    ),
    check("ledger_shortfall_non_negative", sql`${t.shortfallNano} >= 0`),
  ],
);

// Stripe Checkout Sessions this gateway created for top-ups (src/payments/). A webhook credits only
// a session found here, for the amount stored here; status goes pending → credited once, in the same
// transaction as the top_up ledger entry (whose external_ref is the payment's id).
export const checkoutSessions = sqliteTable(
  "checkout_sessions",
  {
    // Stripe's id, cs_…
    id: text("id").primaryKey(),
    accountId: integer("account_id").notNull().references(() => accounts.id),
    amountNano: integer("amount_nano").notNull(),
    status: text("status", { enum: ["pending", "credited"] }).notNull().default("pending"),
    createdAt: integer("created_at").notNull(),
    creditedAt: integer("credited_at"),
  },
  (t) => [
    index("checkout_sessions_account_time").on(t.accountId, t.createdAt),
    check("checkout_sessions_status", sql`${t.status} IN ('pending', 'credited')`),
    check("checkout_sessions_amount_positive", sql`${t.amountNano} > 0`),
  ],
);

// Redemption codes (docs/dashboard.md#redemption-codes): a batch the operator minted, each code kept
// only as the SHA-256 of its text (a copy of the file redeems nothing). A code is redeemed once: its
// row marked in the same transaction as the redemption ledger entry (external_ref `code:<hash>`).
export const codeBatches = sqliteTable(
  "code_batches",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    amountNano: integer("amount_nano").notNull(),
    count: integer("count").notNull(),
    note: text("note"),
    expiresAt: integer("expires_at"),
    // The admin account that minted it in the dashboard; null for the operator's CLI.
    createdByAccountId: integer("created_by_account_id"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [check("code_batches_amount_positive", sql`${t.amountNano} > 0`), check("code_batches_count_positive", sql`${t.count} > 0`)],
);

export const redemptionCodes = sqliteTable(
  "redemption_codes",
  {
    codeHash: text("code_hash").primaryKey(),
    batchId: integer("batch_id").notNull().references(() => codeBatches.id),
    redeemedByAccountId: integer("redeemed_by_account_id").references(() => accounts.id),
    redeemedAt: integer("redeemed_at"),
  },
  (t) => [
    index("redemption_codes_batch").on(t.batchId),
    check("redemption_codes_redeemed", sql`(${t.redeemedByAccountId} IS NULL) = (${t.redeemedAt} IS NULL)`),
  ],
);

// Holds of running requests are not a table: they live in the serving process (src/store/ledger/holds.ts).

// One row per /v1 request. No prompt, completion or key material. Request ids start with the time
// (gw_ + base-36 milliseconds), so the primary key is in time order: pruning deletes a key range and
// no created_at index is written per request. The migration makes the table WITHOUT ROWID, which
// drizzle cannot declare: the rows live in the key's own b-tree.
export const requestLogs = sqliteTable(
  "request_logs",
  {
    requestId: text("request_id").primaryKey(),
    accountId: integer("account_id"),
    keyId: integer("key_id"),
    method: text("method").notNull(),
    path: text("path").notNull(),
    endpoint: text("endpoint"),
    model: text("model"),
    provider: text("provider"),
    upstreamModel: text("upstream_model"),
    stream: integer("stream", { mode: "boolean" }).notNull().default(false),
    status: integer("status").notNull(),
    errorCode: text("error_code"),
    inputTokens: integer("input_tokens"),
    outputTokens: integer("output_tokens"),
    cacheReadTokens: integer("cache_read_tokens"),
    cacheWriteTokens: integer("cache_write_tokens"),
    /** 1-hour cache writes (cache_write_tokens holds the 5-minute ones); docs/pricing.md. */
    cacheWrite1hTokens: integer("cache_write_1h_tokens"),
    webSearches: integer("web_searches"),
    /** The service tier the upstream's answer reported. */
    serviceTier: text("service_tier"),
    /** The region the upstream's answer says inference was pinned to (docs/pricing.md#regional-inference); null: global. */
    inferenceGeo: text("inference_geo"),
    images: integer("images"),
    /** Token-priced images (docs/pricing.md#images): edit sources' and output images' tokens; the prompt's are input_tokens. */
    imageInputTokens: integer("image_input_tokens"),
    imageOutputTokens: integer("image_output_tokens"),
    costNano: integer("cost_nano").notNull().default(0),
    latencyMs: integer("latency_ms").notNull(),
    attempts: integer("attempts").notNull().default(0),
    /** The client's address as the key allow-lists see it (trust_proxy applied); null where the peer was not known. */
    clientIp: text("client_ip"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("request_logs_key_time").on(t.keyId, t.createdAt)],
);

// Stored answers for Idempotency-Key replays: the one place response content is kept (24 h).
export const idempotencyRecords = sqliteTable(
  "idempotency_records",
  {
    // The owning account's id: a record is the account's, whichever key sent it (store/idempotency/contract.ts).
    keyId: integer("key_id").notNull(),
    idempotencyKey: text("idempotency_key").notNull(),
    bodySha256: text("body_sha256").notNull(),
    state: text("state").notNull(), // in_flight | done
    status: integer("status"),
    contentType: text("content_type"),
    responseBody: text("response_body"),
    requestId: text("request_id").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.keyId, t.idempotencyKey] }), index("idempotency_time").on(t.createdAt)],
);

export const settings = sqliteTable("settings", {
  name: text("name").primaryKey(),
  value: text("value").notNull(),
});
