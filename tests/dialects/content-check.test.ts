// The text-only gate (spec Rules 7): the first non-text block and its position in the client's request.
import { describe, expect, it } from "bun:test";
import { findNonTextContent, unsupportedContent } from "../../src/dialects/content-check.ts";

const user = (content: unknown) => ({ role: "user", content });
const messages = (...msgs: unknown[]) => ({ model: "m", max_tokens: 10, messages: msgs });

describe("findNonTextContent: messages", () => {
  it("passes a text-only request with tool plumbing and thinking", () => {
    const body = messages(
      user("Hi"),
      { role: "assistant", content: [{ type: "thinking", thinking: "t", signature: "s" }, { type: "redacted_thinking", data: "d" }, { type: "tool_use", id: "t1", name: "f", input: {} }] },
      user([{ type: "tool_result", tool_use_id: "t1", content: [{ type: "text", text: "ok" }] }, { type: "text", text: "more" }]),
    );
    expect(findNonTextContent("messages", body)).toBeNull();
  });

  it("finds an image block at its position", () => {
    const body = messages(user("a"), { role: "assistant", content: "b" }, user([{ type: "text", text: "see" }, { type: "image", source: { type: "url", url: "http://x" } }]));
    expect(findNonTextContent("messages", body)).toEqual({ path: "messages[2].content[1]", kind: "image" });
  });

  it("finds a document block", () => {
    const body = messages(user([{ type: "document", source: { type: "base64", media_type: "application/pdf", data: "AA" } }]));
    expect(findNonTextContent("messages", body)).toEqual({ path: "messages[0].content[0]", kind: "document" });
  });

  it("finds an image nested in tool_result content", () => {
    const body = messages(user("a"), { role: "assistant", content: "b" }, user([{ type: "tool_result", tool_use_id: "t", content: [{ type: "text", text: "x" }, { type: "image", source: {} }] }]));
    expect(findNonTextContent("messages", body)).toEqual({ path: "messages[2].content[0].content[1]", kind: "image" });
  });

  it("finds an unknown block type by its name", () => {
    expect(findNonTextContent("messages", messages(user([{ type: "hologram" }])))).toEqual({ path: "messages[0].content[0]", kind: "hologram" });
  });

  it("finds server-tool history blocks", () => {
    const body = messages({ role: "assistant", content: [{ type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} }] });
    expect(findNonTextContent("messages", body)).toEqual({ path: "messages[0].content[0]", kind: "server_tool_use" });
  });

  it("finds web_search_tool_result and container_upload blocks", () => {
    expect(findNonTextContent("messages", messages(user([{ type: "web_search_tool_result", tool_use_id: "x", content: [] }])))?.kind).toBe("web_search_tool_result");
    expect(findNonTextContent("messages", messages(user([{ type: "container_upload", file_id: "f" }])))?.kind).toBe("container_upload");
  });

  it("finds a non-text block in system", () => {
    const body = { ...messages(user("a")), system: [{ type: "text", text: "s" }, { type: "image", source: {} }] };
    expect(findNonTextContent("messages", body)).toEqual({ path: "system[1]", kind: "image" });
  });

  it("finds a block without a type", () => {
    expect(findNonTextContent("messages", messages(user([{ text: "x" }])))).toEqual({ path: "messages[0].content[0]", kind: "untyped" });
  });
});

describe("findNonTextContent: chat", () => {
  const chat = (...msgs: unknown[]) => ({ model: "m", messages: msgs });

  it("passes text and refusal parts", () => {
    const body = chat(user([{ type: "text", text: "a" }]), { role: "assistant", content: [{ type: "refusal", refusal: "no" }] }, { role: "tool", tool_call_id: "c", content: "x" });
    expect(findNonTextContent("chat", body)).toBeNull();
  });

  it("finds image_url as an image", () => {
    const body = chat(user("a"), { role: "assistant", content: "b" }, user([{ type: "text", text: "see" }, { type: "image_url", image_url: { url: "data:image/png;base64,AA" } }]));
    expect(findNonTextContent("chat", body)).toEqual({ path: "messages[2].content[1]", kind: "image" });
  });

  it("finds input_audio as audio", () => {
    expect(findNonTextContent("chat", chat(user([{ type: "input_audio", input_audio: { data: "AA", format: "wav" } }])))).toEqual({ path: "messages[0].content[0]", kind: "audio" });
  });

  it("finds file parts as file", () => {
    expect(findNonTextContent("chat", chat(user([{ type: "file", file: { file_id: "f" } }])))).toEqual({ path: "messages[0].content[0]", kind: "file" });
  });

  it("finds video_url as video", () => {
    expect(findNonTextContent("chat", chat(user([{ type: "video_url", video_url: { url: "http://x" } }])))?.kind).toBe("video");
  });

  it("finds any other part type by its name", () => {
    expect(findNonTextContent("chat", chat({ role: "system", content: [{ type: "input_text", text: "x" }] }))).toEqual({ path: "messages[0].content[0]", kind: "input_text" });
  });

  it("finds an assistant audio reference", () => {
    expect(findNonTextContent("chat", chat(user("a"), { role: "assistant", audio: { id: "audio_1" } }))).toEqual({ path: "messages[1].audio", kind: "audio" });
  });
});

describe("unsupportedContent", () => {
  it("is a 400 unsupported_content_type naming the position", () => {
    const e = unsupportedContent({ path: "messages[2].content[1]", kind: "image" });
    expect({ status: e.status, code: e.code, type: e.type, message: e.message }).toEqual({
      status: 400,
      code: "unsupported_content_type",
      type: "unsupported_content_type",
      message: "messages[2].content[1]: image content is not supported; this gateway accepts text only",
    });
  });
});
