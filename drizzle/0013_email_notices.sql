CREATE TABLE `email_verifications` (
	`account_id` integer PRIMARY KEY NOT NULL,
	`token_hash` text NOT NULL,
	`expires_at` integer NOT NULL,
	`sent_at` integer NOT NULL,
	`verified_at` integer,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `email_verifications_token` ON `email_verifications` (`token_hash`);--> statement-breakpoint
ALTER TABLE `accounts` ADD `low_balance_notified_at` integer;