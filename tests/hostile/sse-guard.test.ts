import { describe, expect, it } from "bun:test";
import { MAX_SSE_EVENT_BYTES, SseSizeGuard } from "../../src/wire/sse.ts";

// Issue 14 item 10: the bytes of one SSE event are counted before they reach the parser, so a line
// or an event that never ends is cut at the limit instead of growing memory without bound.

const bytes = (s: string) => new TextEncoder().encode(s);
const feed = (g: SseSizeGuard, ...parts: string[]) => parts.map((p) => g.push(bytes(p))?.message ?? null);

describe("SseSizeGuard", () => {
  it("caps one event at 16 MiB by default", () => {
    expect(MAX_SSE_EVENT_BYTES).toBe(16 * 1024 * 1024);
  });

  it("fails a line that never ends once it passes the limit", () => {
    const g = new SseSizeGuard(10);
    expect(feed(g, "data: 123", "4")).toEqual([null, null]);
    expect(feed(g, "5")[0]).toBe("the upstream sent an SSE event over 10 bytes without ending it");
  });

  it("fails an event whose lines end but which never does (data lines without a blank line)", () => {
    const g = new SseSizeGuard(20);
    expect(feed(g, "data: 1\n", "data: 2\n")).toEqual([null, null]);
    expect(feed(g, "data: 3\n")[0]).toContain("over 20 bytes");
  });

  it("counts afresh after each blank line, in every line-break style", () => {
    for (const eol of ["\n", "\r\n", "\r"]) {
      const g = new SseSizeGuard(20);
      const event = `data: 123456789${eol}${eol}`;
      expect(feed(g, event, event, event, event)).toEqual([null, null, null, null]);
    }
  });

  it("finds a blank line split across chunks (CRLF torn between them)", () => {
    const g = new SseSizeGuard(16);
    expect(feed(g, "data: 123456\r", "\n\r", "\ndata: 12345678")).toEqual([null, null, null]);
    expect(feed(g, "9")).toEqual([null]);
  });

  it("does not take one CRLF for a blank line", () => {
    const g = new SseSizeGuard(16);
    expect(feed(g, "data: 1234\r\n", "data: 5678\r\n")[1]).toContain("over 16 bytes");
  });

  it("counts only what follows the last blank line of a chunk", () => {
    const g = new SseSizeGuard(12);
    expect(feed(g, "data: a\n\ndata: 1234", "56")).toEqual([null, null]);
    expect(feed(g, "7")[0]).toContain("over 12 bytes");
  });
});
