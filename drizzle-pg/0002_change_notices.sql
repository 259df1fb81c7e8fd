-- Hand-written (drizzle cannot declare triggers): every instance keeps copies of keys, of the
-- accounts' disabled flag and of the pause switch (issue 18: a revoke or a pause applies on every
-- instance within a second). A commit that changes one of them notifies the channel
-- gateway_changes with the table's name, whoever wrote it (an instance, the CLI, psql by hand);
-- src/db/pg-changes.ts listens. The money columns (balance_nano, held_nano, spent_nano) are left
-- out of the column lists: every request writes them, and no instance caches them.
CREATE FUNCTION "gateway_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('gateway_changes', TG_TABLE_NAME);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER "api_keys_changed" AFTER INSERT OR DELETE OR UPDATE OF "account_id", "name", "prefix", "key_hash", "quota_nano", "models", "ip_allow", "rpm", "expires_at", "revoked_at" ON "api_keys"
FOR EACH STATEMENT EXECUTE FUNCTION "gateway_changed"();
--> statement-breakpoint
CREATE TRIGGER "accounts_changed" AFTER UPDATE OF "disabled_at" ON "accounts"
FOR EACH STATEMENT EXECUTE FUNCTION "gateway_changed"();
--> statement-breakpoint
-- The estimator's rows (calibration:<model>) are saved every few seconds by every instance and are
-- nobody's cached copy: they notify nothing.
CREATE TRIGGER "settings_changed" AFTER INSERT OR UPDATE ON "settings"
FOR EACH ROW WHEN (NEW."name" NOT LIKE 'calibration:%') EXECUTE FUNCTION "gateway_changed"();
--> statement-breakpoint
CREATE TRIGGER "settings_removed" AFTER DELETE ON "settings"
FOR EACH STATEMENT EXECUTE FUNCTION "gateway_changed"();
