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
	CONSTRAINT "ledger_kind_sign" CHECK(("__new_ledger_entries"."kind" IN ('registration_credit', 'top_up', 'operator_credit') AND "__new_ledger_entries"."amount_nano" > 0)
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
CREATE UNIQUE INDEX `ledger_external_ref` ON `ledger_entries` (`external_ref`) WHERE "ledger_entries"."external_ref" IS NOT NULL;