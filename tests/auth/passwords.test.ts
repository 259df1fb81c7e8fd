import { describe, expect, it } from "bun:test";
import { checkNewPassword, hashPassword, verifyPassword } from "../../src/auth/passwords.ts";

describe("passwords", () => {
  it("are hashed with Argon2id", async () => {
    expect(await hashPassword("correct horse")).toStartWith("$argon2id$");
  });

  it("verify against their own hash only", async () => {
    const hash = await hashPassword("correct horse");
    expect(await verifyPassword("correct horse", hash)).toBe(true);
    expect(await verifyPassword("correct horsE", hash)).toBe(false);
  });

  it("never verify without a hash (unknown email), after the same Argon2id work", async () => {
    expect(await verifyPassword("anything at all", null)).toBe(false);
  });

  it("never verify against a stored value that is no hash", async () => {
    expect(await verifyPassword("x", "not a hash")).toBe(false);
  });

  it("are refused under 8 characters, naming the field", () => {
    expect(() => checkNewPassword("short", "new_password")).toThrow("new_password: at least 8 characters");
  });

  it("are refused over 1024 characters", () => {
    expect(() => checkNewPassword("x".repeat(1025))).toThrow("password: at most 1024 characters");
  });

  it("are refused when not a string", () => {
    expect(() => checkNewPassword(12345678)).toThrow("password: required, a string");
  });
});
