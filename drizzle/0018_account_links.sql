CREATE TABLE `account_links` (
	`account_id` integer NOT NULL,
	`purpose` text NOT NULL,
	`token_hash` text NOT NULL,
	`new_email` text,
	`expires_at` integer NOT NULL,
	`sent_at` integer NOT NULL,
	`used_at` integer,
	PRIMARY KEY(`account_id`, `purpose`),
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `account_links_token` ON `account_links` (`token_hash`);