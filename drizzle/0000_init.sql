CREATE TABLE `accounts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`email` text NOT NULL,
	`password_hash` text,
	`balance_nano` integer DEFAULT 0 NOT NULL,
	`reserved_nano` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `accounts_email_unique` ON `accounts` (`email`);--> statement-breakpoint
CREATE TABLE `api_keys` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account_id` integer NOT NULL,
	`name` text DEFAULT '' NOT NULL,
	`prefix` text NOT NULL,
	`key_hash` text NOT NULL,
	`quota_nano` integer,
	`spent_nano` integer DEFAULT 0 NOT NULL,
	`reserved_nano` integer DEFAULT 0 NOT NULL,
	`models` text,
	`ip_allow` text,
	`rpm` integer,
	`expires_at` integer,
	`revoked_at` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_key_hash` ON `api_keys` (`key_hash`);--> statement-breakpoint
CREATE INDEX `api_keys_account` ON `api_keys` (`account_id`);--> statement-breakpoint
CREATE TABLE `idempotency_records` (
	`key_id` integer NOT NULL,
	`idempotency_key` text NOT NULL,
	`body_sha256` text NOT NULL,
	`state` text NOT NULL,
	`status` integer,
	`content_type` text,
	`response_body` text,
	`request_id` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`key_id`, `idempotency_key`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_time` ON `idempotency_records` (`created_at`);--> statement-breakpoint
CREATE TABLE `ledger_entries` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
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
CREATE INDEX `ledger_account_time` ON `ledger_entries` (`account_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `ledger_key_time` ON `ledger_entries` (`key_id`,`created_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `ledger_external_ref` ON `ledger_entries` (`external_ref`);--> statement-breakpoint
CREATE TABLE `request_logs` (
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
);
--> statement-breakpoint
CREATE INDEX `request_logs_time` ON `request_logs` (`created_at`);--> statement-breakpoint
CREATE INDEX `request_logs_key_time` ON `request_logs` (`key_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `reservations` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
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
CREATE INDEX `reservations_owner` ON `reservations` (`owner_pid`);--> statement-breakpoint
CREATE TABLE `settings` (
	`name` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL
);
