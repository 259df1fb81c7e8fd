-- Hand-written: a key's budget (budget_nano, budget_period) is in every instance's copy of the key,
-- so a change of it announces itself like the key's other rules; the budget's counters
-- (period_start, period_spent_nano, budget_reached_at) are money, written by every request, and
-- stay out, as spent_nano does.
DROP TRIGGER "api_keys_changed" ON "api_keys";
--> statement-breakpoint
CREATE TRIGGER "api_keys_changed" AFTER INSERT OR DELETE OR UPDATE OF "account_id", "name", "prefix", "key_hash", "quota_nano", "budget_nano", "budget_period", "models", "ip_allow", "rpm", "expires_at", "revoked_at" ON "api_keys"
FOR EACH STATEMENT EXECUTE FUNCTION "gateway_changed"();
