import { Type as T } from "@sinclair/typebox";
import { hashVerifyToken, newVerification, RESEND_INTERVAL_MS } from "../../auth/email-verification.ts";
import { GatewayError } from "../../core/errors.ts";
import { nanoToUsd } from "../../core/money.ts";
import type { VerificationSent, Verified } from "../api-schemas.ts";
import { json } from "../exchange.ts";
import type { SessionCall } from "../session-guard.ts";

// Address verification under [email] (docs/dashboard.md#address-verification). The link in the email
// opens a page (GET /verify) whose button POSTs the token here: a mail scanner or a browser that
// prefetches the link only loads the page, and verifies nothing.

export const VerifyBody = T.Object({ token: T.String({ minLength: 1, maxLength: 200 }) });

/** POST /api/verify: the token's account is verified and granted its starting credit, once. */
export async function verify(c: SessionCall): Promise<Response> {
  const { svc } = c;
  const { token } = c.json as { token: string };
  const { startingCreditNano, startingCreditDailyNano } = svc.config.dashboard;
  const done = await svc.accounts.verifyEmail(hashVerifyToken(token), Date.now(), startingCreditNano, startingCreditDailyNano);
  if (!done) {
    throw new GatewayError("invalid_verification", "This verification link is not valid: it was used already, replaced by a newer one, or is more than 24 hours old. Log in and ask for a new link.");
  }
  svc.notices.verified(done);
  const limited = startingCreditNano > 0 && done.creditedNano === 0;
  return json<Verified>({ verified: true, starting_credit_usd: nanoToUsd(done.creditedNano), starting_credit_limited: limited });
}

/** POST /api/verify/resend: a new link replacing the last, at most once a minute. */
export async function resendVerification(c: SessionCall): Promise<Response> {
  const { svc } = c;
  const accountId = c.session!.accountId;
  const state = await svc.accounts.verificationOf(accountId);
  if (!state || state.verified || !svc.notices.verifiesEmail) throw new GatewayError("already_verified", "This account's address needs no verification.");
  const now = Date.now();
  const { token, stored } = newVerification(now);
  if (!(await svc.accounts.renewVerification(accountId, stored, now, now - RESEND_INTERVAL_MS))) {
    const retryAfter = Math.max(1, Math.ceil((state.sentAt + RESEND_INTERVAL_MS - now) / 1000));
    throw new GatewayError("rate_limit", `A link was sent less than a minute ago; ask again in ${retryAfter} s.`, { retryAfter });
  }
  const profile = (await svc.accounts.profileOf(accountId))!;
  svc.notices.verificationLink(accountId, profile.email, token, svc.config.dashboard.startingCreditNano);
  return json<VerificationSent>({ sent: true });
}
