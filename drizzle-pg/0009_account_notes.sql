CREATE TABLE "account_notes" (
	"account_id" bigint PRIMARY KEY NOT NULL,
	"note" text NOT NULL,
	"updated_at" bigint NOT NULL,
	"updated_by" bigint
);
