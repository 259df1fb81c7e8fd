CREATE TABLE "account_links" (
	"account_id" bigint NOT NULL,
	"purpose" text NOT NULL,
	"token_hash" text NOT NULL,
	"new_email" text,
	"expires_at" bigint NOT NULL,
	"sent_at" bigint NOT NULL,
	"used_at" bigint,
	CONSTRAINT "account_links_account_id_purpose_pk" PRIMARY KEY("account_id","purpose")
);
--> statement-breakpoint
ALTER TABLE "account_links" ADD CONSTRAINT "account_links_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "account_links_token" ON "account_links" USING btree ("token_hash");