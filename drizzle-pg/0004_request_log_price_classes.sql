ALTER TABLE "request_logs" ADD COLUMN "cache_write_1h_tokens" bigint;--> statement-breakpoint
ALTER TABLE "request_logs" ADD COLUMN "web_searches" integer;--> statement-breakpoint
ALTER TABLE "request_logs" ADD COLUMN "service_tier" text;