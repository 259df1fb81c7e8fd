CREATE TABLE `account_notes` (
	`account_id` integer NOT NULL,
	`note` text NOT NULL,
	`updated_at` integer NOT NULL,
	`updated_by` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `account_notes_account` ON `account_notes` (`account_id`);