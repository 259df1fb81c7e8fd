-- Invariants a CHECK cannot hold (docs/database.md): ledger rows are facts, never edited or removed
-- (a mistake is fixed by a correcting entry); a balance never goes below zero.
CREATE TRIGGER `ledger_entries_no_update` BEFORE UPDATE ON `ledger_entries`
BEGIN SELECT RAISE(ABORT, 'ledger entries are append-only: write a correcting entry instead'); END;
--> statement-breakpoint
CREATE TRIGGER `ledger_entries_no_delete` BEFORE DELETE ON `ledger_entries`
BEGIN SELECT RAISE(ABORT, 'ledger entries are append-only: write a correcting entry instead'); END;
--> statement-breakpoint
CREATE TRIGGER `accounts_balance_not_negative` BEFORE UPDATE OF `balance_nano` ON `accounts` WHEN NEW.`balance_nano` < 0
BEGIN SELECT RAISE(ABORT, 'a balance never goes below zero'); END;
--> statement-breakpoint
CREATE TRIGGER `api_keys_spent_not_negative` BEFORE UPDATE OF `spent_nano` ON `api_keys` WHEN NEW.`spent_nano` < 0
BEGIN SELECT RAISE(ABORT, 'a key''s spend never goes below zero'); END;
