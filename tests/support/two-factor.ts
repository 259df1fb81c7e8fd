import { generate } from "otplib";
import { body, Browser, holderOn } from "../api/support.ts";

// Two-factor login as a holder goes through it (docs/dashboard.md#two-factor-login), with the codes an
// authenticator app would show, computed by the library the gateway uses.

/** The TOTP code of `secret` at now + `offsetSeconds` (30: the next step's, which a login after enabling may use). */
export const codeAt = (secret: string, offsetSeconds: number): Promise<string> => generate({ secret, epoch: Math.floor(Date.now() / 1000) + offsetSeconds });

/**
 * Waits, if need be, for a 30-second step with at least 12 seconds left: a test whose code must stay
 * at the same distance from the server's step (the step before) while a password is hashed first.
 */
export async function earlyInStep(): Promise<void> {
  const left = 30_000 - (Date.now() % 30_000);
  if (left < 12_000) await Bun.sleep(left + 50);
}

export interface Enrolled {
  b: Browser;
  id: number;
  email: string;
  password: string;
  secret: string;
  /** The code that enabled it: spent, so its step's code opens no login. */
  enablingCode: string;
  recovery: string[];
  sessionsEnded: number;
}

/** A logged-in holder (a fresh one by default, password "correct horse") with two-factor login set up and enabled. */
export async function enrolled(gw: { url: string }, holder?: { b: Browser; id: number; email: string }): Promise<Enrolled> {
  const { b, id, email } = holder ?? (await holderOn(gw));
  const setup = await b.call("POST", "/api/me/2fa/setup");
  if (setup.status !== 200) throw new Error(`setup: ${setup.status} ${await setup.text()}`);
  const { secret } = await body(setup);
  const enablingCode = await codeAt(secret, 0);
  const res = await b.call("POST", "/api/me/2fa/enable", { password: "correct horse", code: enablingCode });
  if (res.status !== 200) throw new Error(`enable: ${res.status} ${await res.text()}`);
  const on = await body(res);
  return { b, id, email, password: "correct horse", secret, enablingCode, recovery: on.recovery_codes, sessionsEnded: on.sessions_ended };
}

/** A browser (a new one by default) past the password of `h`'s login: the token its second step takes. */
export async function loginFirstStep(gw: { url: string }, h: { email: string; password: string }, b = new Browser(gw.url)): Promise<{ b: Browser; token: string }> {
  const res = await b.call("POST", "/api/login", { email: h.email, password: h.password });
  const answer = await body(res);
  if (!answer.second_factor_required) throw new Error(`login asked for no second factor: ${res.status} ${JSON.stringify(answer)}`);
  return { b, token: answer.token };
}
