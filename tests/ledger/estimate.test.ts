import { describe, expect, it } from "bun:test";
import { bodySize, estimateInputTokens, estimateTokens, TextCount } from "../../src/ledger/estimate.ts";

// The plain estimate (ledger/estimate.ts), used before a model is calibrated: bytes and characters,
// so that CJK text counts about a token a character instead of a quarter of one.

const encode = (s: string) => new TextEncoder().encode(s);

describe("the plain estimate", () => {
  it("counts ASCII at 4 bytes a token, as before", () => {
    expect(estimateTokens(4000)).toBe(1000);
    expect(TextCount.of("x".repeat(800))).toMatchObject({ bytes: 800, chars: 800 });
    expect(estimateTokens(800, 800)).toBe(200);
  });

  it("counts CJK text a token a character", () => {
    const t = TextCount.of("数据分析".repeat(19));
    expect(t).toMatchObject({ bytes: 228, chars: 76 });
    expect(estimateTokens(t.bytes, t.chars)).toBe(76);
  });

  it("counts 2-byte scripts and emoji between the two", () => {
    const cyrillic = TextCount.of("привет".repeat(8)); // 48 characters
    expect(estimateTokens(cyrillic.bytes, cyrillic.chars)).toBe(30);
    const emoji = TextCount.of("🦀".repeat(8));
    expect(estimateTokens(emoji.bytes, emoji.chars)).toBe(10);
  });

  it("sizes a CJK prompt's input a token a character, and its JSON around it at 4 bytes a token", () => {
    const prompt = "请总结本季度的财务数据。".repeat(50); // 600 characters
    const body = encode(JSON.stringify({ model: "m", max_tokens: 16, messages: [{ role: "user", content: prompt }] }));
    const size = bodySize(body);
    const ascii = body.byteLength - 3 * prompt.length;
    expect(size).toEqual({ bytes: body.byteLength, chars: ascii + prompt.length });
    expect(estimateInputTokens(size.bytes, size.chars)).toBe(Math.ceil(ascii / 4) + prompt.length);
  });

  it("counts an ASCII body's characters as its bytes", () => {
    const body = encode(JSON.stringify({ model: "m", messages: [{ role: "user", content: "hello ".repeat(100) }] }));
    expect(bodySize(body)).toEqual({ bytes: body.byteLength, chars: body.byteLength });
  });
});
