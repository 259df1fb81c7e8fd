ALTER TABLE `api_keys` ADD `budget_nano` integer;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `budget_period` text;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `period_start` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `period_spent_nano` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `budget_reached_at` integer;