CREATE TABLE `account_notes` (
	`account_id` integer PRIMARY KEY NOT NULL,
	`note` text NOT NULL,
	`updated_at` integer NOT NULL,
	`updated_by` integer
);
