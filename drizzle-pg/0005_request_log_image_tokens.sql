ALTER TABLE "request_logs" ADD COLUMN "image_input_tokens" bigint;--> statement-breakpoint
ALTER TABLE "request_logs" ADD COLUMN "image_output_tokens" bigint;