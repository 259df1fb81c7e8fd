ALTER TABLE "instances" ADD COLUMN "run_id" text;--> statement-breakpoint
ALTER TABLE "instances" ADD COLUMN "reloaded_at" bigint;--> statement-breakpoint
ALTER TABLE "instances" ADD COLUMN "last_reload" text;