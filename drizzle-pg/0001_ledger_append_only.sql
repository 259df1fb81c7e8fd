-- Hand-written (drizzle cannot declare triggers), as SQLite's 0005: ledger rows are facts, never
-- edited or removed; a mistake is fixed by a correcting entry. PostgreSQL also has TRUNCATE, which
-- fires no row trigger: refused by a statement trigger. (A negative balance or spend is refused by
-- CHECK constraints in 0000, which PostgreSQL applies to inserts too.)
CREATE FUNCTION "ledger_entries_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger entries are append-only: write a correcting entry instead' USING ERRCODE = 'restrict_violation';
END;
$$;
--> statement-breakpoint
CREATE TRIGGER "ledger_entries_no_update" BEFORE UPDATE ON "ledger_entries"
FOR EACH ROW EXECUTE FUNCTION "ledger_entries_append_only"();
--> statement-breakpoint
CREATE TRIGGER "ledger_entries_no_delete" BEFORE DELETE ON "ledger_entries"
FOR EACH ROW EXECUTE FUNCTION "ledger_entries_append_only"();
--> statement-breakpoint
CREATE TRIGGER "ledger_entries_no_truncate" BEFORE TRUNCATE ON "ledger_entries"
FOR EACH STATEMENT EXECUTE FUNCTION "ledger_entries_append_only"();
