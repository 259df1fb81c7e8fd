ALTER TABLE "api_keys" ADD COLUMN "budget_nano" bigint;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "budget_period" text;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "period_start" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "period_spent_nano" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "budget_reached_at" bigint;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_budget" CHECK (("api_keys"."budget_nano" IS NULL) = ("api_keys"."budget_period" IS NULL) AND ("api_keys"."budget_period" IS NULL OR "api_keys"."budget_period" IN ('day', 'week', 'month')));