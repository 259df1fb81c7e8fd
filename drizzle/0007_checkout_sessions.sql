CREATE TABLE `checkout_sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` integer NOT NULL,
	`amount_nano` integer NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`created_at` integer NOT NULL,
	`credited_at` integer,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action,
	CONSTRAINT "checkout_sessions_status" CHECK("checkout_sessions"."status" IN ('pending', 'credited')),
	CONSTRAINT "checkout_sessions_amount_positive" CHECK("checkout_sessions"."amount_nano" > 0)
);
--> statement-breakpoint
CREATE INDEX `checkout_sessions_account_time` ON `checkout_sessions` (`account_id`,`created_at`);