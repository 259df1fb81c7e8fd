CREATE TABLE "account_notes" (
	"account_id" bigint NOT NULL,
	"note" text NOT NULL,
	"updated_at" bigint NOT NULL,
	"updated_by" bigint
);
--> statement-breakpoint
CREATE UNIQUE INDEX "account_notes_account" ON "account_notes" USING btree ("account_id");