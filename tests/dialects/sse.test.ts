import { describe, expect, it } from "bun:test";
import { encodeSse, SseParser, type SseEvent } from "../../src/wire/sse.ts";
import { fixtureText } from "./stream-fixtures.ts";
import { readSse } from "../support/sse.ts";


describe("SseParser", () => {
  it("reads the event name and data of one event", () => {
    expect(readSse("event: ping\ndata: {\"type\":\"ping\"}\n\n")).toEqual([{ event: "ping", data: '{"type":"ping"}' }]);
  });

  it("leaves event out when the event has no event: line", () => {
    expect(readSse("data: [DONE]\n\n")).toEqual([{ data: "[DONE]" }]);
  });

  it("joins several data lines with \\n", () => {
    expect(readSse("data: a\ndata: b\ndata:\n\n")).toEqual([{ data: "a\nb\n" }]);
  });

  it("accepts \\r\\n line endings", () => {
    expect(readSse("event: x\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n")).toEqual([{ event: "x", data: "1" }, { data: "2" }]);
  });

  it("accepts lone \\r line endings", () => {
    expect(readSse("event: x\rdata: 1\r\rdata: 2\r\r")).toEqual([{ event: "x", data: "1" }, { data: "2" }]);
  });

  it("treats \\r and \\n split across two chunks as one line ending", () => {
    expect(readSse("data: a\r", "\ndata: b\r\n\r\n")).toEqual([{ data: "a\nb" }]);
  });

  it("forgets a pending \\r\\n pairing when the next chunk does not start with \\n", () => {
    expect(readSse("data: a\r", "data: b", "\r\r")).toEqual([{ data: "a\nb" }]);
  });

  it("joins one long line delivered in many chunks", () => {
    const long = "x".repeat(100_000);
    const chunks = ["data: "];
    for (let i = 0; i < long.length; i += 1000) chunks.push(long.slice(i, i + 1000));
    expect(readSse(...chunks, "\n\n")).toEqual([{ data: long }]);
  });

  it("ignores comment lines", () => {
    expect(readSse(": keep-alive\n\ndata: 1\n: mid-event comment\n\n")).toEqual([{ data: "1" }]);
  });

  it("ignores id:, retry: and unknown fields", () => {
    expect(readSse("id: 7\nretry: 100\ndatax: no\nevent: e\ndata: 1\n\n")).toEqual([{ event: "e", data: "1" }]);
  });

  it("strips exactly one space after the colon", () => {
    expect(readSse("data:  two\n\ndata:none\n\n")).toEqual([{ data: " two" }, { data: "none" }]);
  });

  it("reads a field line without a colon as an empty value", () => {
    expect(readSse("data\n\n")).toEqual([{ data: "" }]);
  });

  it("dispatches an event that has a name but no data", () => {
    expect(readSse("event: ping\n\n")).toEqual([{ event: "ping", data: "" }]);
  });

  it("dispatches nothing for blank lines alone", () => {
    expect(readSse("\n\n\r\n\n")).toEqual([]);
  });

  it("yields the same events for every split point of a stream, multi-byte characters included", () => {
    const text = "event: message_start\r\ndata: {\"t\":\"héllo 😀 世界\"}\r\n\r\n: c\n\ndata: é\rdata: ✓\r\r";
    const bytes = new TextEncoder().encode(text);
    const whole = readSse(bytes);
    expect(whole).toEqual([{ event: "message_start", data: '{"t":"héllo 😀 世界"}' }, { data: "é\n✓" }]);
    for (let i = 1; i < bytes.length; i++) {
      expect(readSse(bytes.subarray(0, i), bytes.subarray(i))).toEqual(whole);
    }
  });

  it("yields the same events when fed one byte at a time", () => {
    const bytes = new TextEncoder().encode(fixtureText("messages-text.sse"));
    const oneByOne = readSse(...Array.from(bytes, (_, i) => bytes.subarray(i, i + 1)));
    expect(oneByOne).toEqual(readSse(bytes));
    expect(oneByOne.length).toBe(8);
  });

  it("strips a leading byte-order mark", () => {
    expect(readSse(new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode("data: 1\n\n")]))).toEqual([{ data: "1" }]);
  });

  it("dispatches at EOF an event whose lines ended but that lacks the blank line", () => {
    expect(readSse("data: 1\n\ndata: [DONE]\n")).toEqual([{ data: "1" }, { data: "[DONE]" }]);
  });

  it("drops a half-written last line at EOF", () => {
    expect(readSse('data: 1\n\ndata: {"trunc')).toEqual([{ data: "1" }]);
  });

  it("returns events as soon as their blank line arrives", () => {
    const p = new SseParser();
    expect(p.push("data: 1\n")).toEqual([]);
    expect(p.push("\nda")).toEqual([{ data: "1" }]);
    expect(p.push("ta: 2\n\n")).toEqual([{ data: "2" }]);
  });
});

describe("encodeSse", () => {
  it("writes event and data lines ended by a blank line", () => {
    expect(encodeSse("ping", '{"type":"ping"}')).toBe('event: ping\ndata: {"type":"ping"}\n\n');
  });

  it("writes a data line alone when there is no event name", () => {
    expect(encodeSse(undefined, "[DONE]")).toBe("data: [DONE]\n\n");
  });

  it("splits data with line breaks into several data lines", () => {
    expect(encodeSse(undefined, "a\nb\r\nc")).toBe("data: a\ndata: b\ndata: c\n\n");
  });

  it("round-trips through the parser", () => {
    const events: SseEvent[] = [{ event: "x", data: "1\n2" }, { data: "" }, { data: "{}" }];
    expect(readSse(events.map((e) => encodeSse(e.event, e.data)).join(""))).toEqual(events);
  });
});
