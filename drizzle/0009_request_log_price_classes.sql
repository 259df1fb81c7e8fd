ALTER TABLE `request_logs` ADD `cache_write_1h_tokens` integer;--> statement-breakpoint
ALTER TABLE `request_logs` ADD `web_searches` integer;--> statement-breakpoint
ALTER TABLE `request_logs` ADD `service_tier` text;