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
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
INSERT INTO `__new_ledger_entries`("id", "account_id", "kind", "amount_nano", "shortfall_nano", "key_id", "request_id", "note", "external_ref", "created_at") SELECT "id", "account_id", "kind", "amount_nano", "shortfall_nano", "key_id", "request_id", "note", "external_ref", "created_at" FROM `ledger_entries`;--> statement-breakpoint
DROP TABLE `ledger_entries`;--> statement-breakpoint
ALTER TABLE `__new_ledger_entries` RENAME TO `ledger_entries`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `ledger_account_time` ON `ledger_entries` (`account_id`,`created_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `ledger_external_ref` ON `ledger_entries` (`external_ref`) WHERE "ledger_entries"."external_ref" IS NOT NULL;--> statement-breakpoint
DROP INDEX `request_logs_time`;--> statement-breakpoint
CREATE TABLE `__new_reservations` (
	`id` integer PRIMARY KEY NOT NULL,
	`request_id` text NOT NULL,
	`account_id` integer NOT NULL,
	`key_id` integer NOT NULL,
	`amount_nano` integer NOT NULL,
	`owner_pid` integer NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`key_id`) REFERENCES `api_keys`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
INSERT INTO `__new_reservations`("id", "request_id", "account_id", "key_id", "amount_nano", "owner_pid", "created_at") SELECT "id", "request_id", "account_id", "key_id", "amount_nano", "owner_pid", "created_at" FROM `reservations`;--> statement-breakpoint
DROP TABLE `reservations`;--> statement-breakpoint
ALTER TABLE `__new_reservations` RENAME TO `reservations`;--> statement-breakpoint
-- Hand-written (drizzle cannot declare WITHOUT ROWID): request_logs keyed by its time-ordered request_id alone.
CREATE TABLE `__new_request_logs` (
	`request_id` text PRIMARY KEY NOT NULL,
	`account_id` integer,
	`key_id` integer,
	`method` text NOT NULL,
	`path` text NOT NULL,
	`endpoint` text,
	`model` text,
	`provider` text,
	`upstream_model` text,
	`stream` integer DEFAULT false NOT NULL,
	`status` integer NOT NULL,
	`error_code` text,
	`input_tokens` integer,
	`output_tokens` integer,
	`cache_read_tokens` integer,
	`cache_write_tokens` integer,
	`images` integer,
	`cost_nano` integer DEFAULT 0 NOT NULL,
	`latency_ms` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_request_logs` SELECT * FROM `request_logs`;--> statement-breakpoint
DROP TABLE `request_logs`;--> statement-breakpoint
ALTER TABLE `__new_request_logs` RENAME TO `request_logs`;--> statement-breakpoint
CREATE INDEX `request_logs_key_time` ON `request_logs` (`key_id`,`created_at`);
