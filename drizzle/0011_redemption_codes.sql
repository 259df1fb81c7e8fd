CREATE TABLE `code_batches` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`amount_nano` integer NOT NULL,
	`count` integer NOT NULL,
	`note` text,
	`expires_at` integer,
	`created_by_account_id` integer,
	`created_at` integer NOT NULL,
	CONSTRAINT "code_batches_amount_positive" CHECK("code_batches"."amount_nano" > 0),
	CONSTRAINT "code_batches_count_positive" CHECK("code_batches"."count" > 0)
);
--> statement-breakpoint
CREATE TABLE `redemption_codes` (
	`code_hash` text PRIMARY KEY NOT NULL,
	`batch_id` integer NOT NULL,
	`redeemed_by_account_id` integer,
	`redeemed_at` integer,
	FOREIGN KEY (`batch_id`) REFERENCES `code_batches`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`redeemed_by_account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action,
	CONSTRAINT "redemption_codes_redeemed" CHECK(("redemption_codes"."redeemed_by_account_id" IS NULL) = ("redemption_codes"."redeemed_at" IS NULL))
);
--> statement-breakpoint
CREATE INDEX `redemption_codes_batch` ON `redemption_codes` (`batch_id`);--> statement-breakpoint
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_ledger_entries` (
	`id` integer PRIMARY KEY NOT NULL,
	`account_id` integer NOT NULL,
	`kind` text NOT NULL,
	`amount_nano` integer NOT NULL,
	`shortfall_nano` integer DEFAULT 0 NOT NULL,
	`key_id` integer,
	`request_id` text,
	`note` text,
	`external_ref` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action,
	CONSTRAINT "ledger_kind_sign" CHECK(("__new_ledger_entries"."kind" IN ('registration_credit', 'top_up', 'operator_credit', 'redemption') AND "__new_ledger_entries"."amount_nano" > 0)
        OR ("__new_ledger_entries"."kind" = 'charge' AND "__new_ledger_entries"."amount_nano" <= 0)
        OR ("__new_ledger_entries"."kind" = 'operator_debit' AND "__new_ledger_entries"."amount_nano" < 0)),
	CONSTRAINT "ledger_shortfall_non_negative" CHECK("__new_ledger_entries"."shortfall_nano" >= 0)
);
--> statement-breakpoint
INSERT INTO `__new_ledger_entries`("id", "account_id", "kind", "amount_nano", "shortfall_nano", "key_id", "request_id", "note", "external_ref", "created_at") SELECT "id", "account_id", "kind", "amount_nano", "shortfall_nano", "key_id", "request_id", "note", "external_ref", "created_at" FROM `ledger_entries`;--> statement-breakpoint
DROP TABLE `ledger_entries`;--> statement-breakpoint
ALTER TABLE `__new_ledger_entries` RENAME TO `ledger_entries`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `ledger_account_time` ON `ledger_entries` (`account_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `ledger_account_credits` ON `ledger_entries` (`account_id`,`created_at`) WHERE "ledger_entries"."kind" <> 'charge';--> statement-breakpoint
CREATE UNIQUE INDEX `ledger_external_ref` ON `ledger_entries` (`external_ref`) WHERE "ledger_entries"."external_ref" IS NOT NULL;--> statement-breakpoint
-- Hand-written: the rebuild above (SQLite changes a CHECK only by copying the table) dropped 0005's
-- triggers with the old table; ledger rows stay facts, never edited or removed.
CREATE TRIGGER `ledger_entries_no_update` BEFORE UPDATE ON `ledger_entries`
BEGIN SELECT RAISE(ABORT, 'ledger entries are append-only: write a correcting entry instead'); END;
--> statement-breakpoint
CREATE TRIGGER `ledger_entries_no_delete` BEFORE DELETE ON `ledger_entries`
BEGIN SELECT RAISE(ABORT, 'ledger entries are append-only: write a correcting entry instead'); END;
