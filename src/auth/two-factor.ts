import { randomBytes } from "node:crypto";
import { generateSecret, generateURI, verify } from "otplib";
import QRCode from "qrcode";
import { GatewayError } from "../core/errors.ts";
import type { TwoFactorState, TwoFactorStore } from "../store/two-factor/contract.ts";

// Two-factor login's codes (docs/dashboard.md#two-factor-login), below HTTP: TOTP as RFC 6238 and
// every authenticator app have it (SHA-1, 6 digits, 30 s), through otplib rather than by hand (its
// verify checks the window, gives the time step to spend and compares in constant time), and the
// single-use recovery codes. The throttles and the login's steps are http/handlers/dashboard-two-factor.ts's.

/** How long a login whose password was right waits for its code. */
export const CHALLENGE_TTL_MS = 5 * 60_000;
export const RECOVERY_CODES = 10;
const STEP_SECONDS = 30;

/** A new secret: 20 random bytes (160 bits, RFC 4226's recommendation), base32 as the apps take it. */
export const newSecret = (): string => generateSecret({ length: 20 });

/** The otpauth:// URI an authenticator app reads (as a QR code or pasted); `site` names the gateway in the app. */
export const otpauthUri = (site: string, email: string, secret: string): string => generateURI({ issuer: site, label: email, secret });

/**
 * The URI as a QR code the app scans: an SVG as a `data:` URL, which the page's policy lets an <img>
 * show (img-src data:) and in which no script runs. Drawn by the qrcode package, not by hand.
 */
export async function qrCodeOf(uri: string): Promise<string> {
  const svg = await QRCode.toString(uri, { type: "svg", errorCorrectionLevel: "M", margin: 2 });
  return `data:image/svg+xml;base64,${Buffer.from(svg).toString("base64")}`;
}

/** The gateway's name in an authenticator app: its public host. */
export function issuerOf(publicUrl: string): string {
  try {
    return `gateway ${new URL(publicUrl).host}`;
  } catch {
    return "gateway";
  }
}

/**
 * The time step of `code` if it is the secret's code of the step before, at or after now (±30 s of
 * clock drift) and after `lastStep` (a code already used is refused); null otherwise.
 */
export async function totpStep(secret: string, code: string, lastStep: number | null, now = Date.now()): Promise<number | null> {
  if (!/^\d{6}$/.test(code)) return null;
  const r = await verify({ secret, token: code, epoch: Math.floor(now / 1000), epochTolerance: STEP_SECONDS, afterTimeStep: lastStep ?? undefined });
  return r.valid && "timeStep" in r ? r.timeStep : null;
}

/** Ten new recovery codes as shown once (xxxx-xxxx-xxxx-xxxx: 80 random bits each) and their hashes as stored. */
export function newRecoveryCodes(): { codes: string[]; hashes: string[] } {
  const codes = Array.from({ length: RECOVERY_CODES }, () => base32(randomBytes(10)).match(/.{4}/g)!.join("-"));
  return { codes, hashes: codes.map(recoveryHash) };
}

/** The stored form of a recovery code as typed: case, spaces and dashes do not matter. */
export const recoveryHash = (code: string): string => Bun.SHA256.hash(code.toUpperCase().replace(/[\s-]/g, ""), "hex");

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

function base32(bytes: Uint8Array): string {
  let out = "";
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out;
}

export const wrongCode = () => new GatewayError("invalid_second_factor", "That code is not right, or was already used. Enter the current code from your authenticator app, or an unused recovery code.");

/** What a second factor proved: a TOTP code, or a recovery code (with how many are left). */
export type FactorUsed = { kind: "totp" } | { kind: "recovery"; left: number };

/**
 * Checks and spends a second factor of an account with two-factor login on: six digits are a TOTP
 * code (spent by its time step, so it works once), anything else a recovery code (spent once; its
 * 16 base32 characters are never six digits).
 * Throws invalid_second_factor when it opens nothing.
 */
export async function spendFactor(store: TwoFactorStore, accountId: number, state: TwoFactorState, given: string, now = Date.now()): Promise<FactorUsed> {
  const code = given.replace(/\s/g, "");
  if (/^\d{6}$/.test(code)) {
    const step = await totpStep(state.secret, code, state.lastStep, now);
    if (step === null || !(await store.spendStep(accountId, step))) throw wrongCode();
    return { kind: "totp" };
  }
  if (!(await store.spendRecoveryCode(accountId, recoveryHash(code), now))) throw wrongCode();
  return { kind: "recovery", left: await store.recoveryCodesLeft(accountId) };
}
