DROP TABLE `reservations`;--> statement-breakpoint
ALTER TABLE `accounts` DROP COLUMN `reserved_nano`;--> statement-breakpoint
ALTER TABLE `api_keys` DROP COLUMN `reserved_nano`;