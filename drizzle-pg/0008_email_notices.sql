CREATE TABLE "email_verifications" (
	"account_id" bigint NOT NULL,
	"token_hash" text NOT NULL,
	"expires_at" bigint NOT NULL,
	"sent_at" bigint NOT NULL,
	"verified_at" bigint,
	CONSTRAINT "email_verifications_account_id_pk" PRIMARY KEY("account_id")
);
--> statement-breakpoint
ALTER TABLE "accounts" ADD COLUMN "low_balance_notified_at" bigint;--> statement-breakpoint
ALTER TABLE "email_verifications" ADD CONSTRAINT "email_verifications_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "email_verifications_token" ON "email_verifications" USING btree ("token_hash");