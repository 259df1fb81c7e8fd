// Images for the mock upstream: a minimal PNG encoder (one solid colour, RGB, deflated with zlib)
// and the OpenAI ImagesResponse body (protocols/images.md §2).
import { deflateSync } from "node:zlib";

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

function chunk(type: string, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + payload.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, payload.length);
  out.set(new TextEncoder().encode(type), 4);
  out.set(payload, 8);
  view.setUint32(8 + payload.length, crc32(out.subarray(4, 8 + payload.length)));
  return out;
}

/** A valid width×height 8-bit RGB PNG filled with one colour. */
export function encodePng(width: number, height: number, rgb: [number, number, number] = [64, 128, 192]): Uint8Array {
  const ihdr = new Uint8Array(13);
  const v = new DataView(ihdr.buffer);
  v.setUint32(0, width);
  v.setUint32(4, height);
  ihdr.set([8, 2, 0, 0, 0], 8); // bit depth 8, colour type RGB, deflate, filter 0, no interlace
  const stride = 1 + width * 3;
  const row = new Uint8Array(stride); // filter byte 0, then pixels
  for (let x = 0; x < width; x++) row.set(rgb, 1 + x * 3);
  const raw = new Uint8Array(stride * height);
  for (let y = 0; y < height; y++) raw.set(row, y * stride);
  const parts = [
    Uint8Array.from(PNG_SIGNATURE), chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(raw)), chunk("IEND", new Uint8Array(0)),
  ];
  const png = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { png.set(p, at); at += p.length; }
  return png;
}

/** Width and height from a PNG's IHDR, or null when the bytes are not a PNG (signature, then IHDR first). */
export function readPngSize(bytes: Uint8Array): { width: number; height: number } | null {
  if (bytes.length < 24 || PNG_SIGNATURE.some((b, i) => bytes[i] !== b)) return null;
  if (new TextDecoder().decode(bytes.subarray(12, 16)) !== "IHDR") return null;
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return { width: v.getUint32(16), height: v.getUint32(20) };
}

// Benchmarks ask for the same few sizes over and over; a 1024² PNG takes a few ms to deflate.
const cache = new Map<string, string>();
function pngBase64(width: number, height: number, rgb: [number, number, number]): string {
  const key = `${width}x${height}:${rgb.join(",")}`;
  let b64 = cache.get(key);
  if (b64 === undefined) {
    b64 = Buffer.from(encodePng(width, height, rgb)).toString("base64");
    if (cache.size >= 32) cache.delete(cache.keys().next().value!);
    cache.set(key, b64);
  }
  return b64;
}

/** A file part of a recorded multipart request. */
export interface MockFile {
  filename: string;
  type: string;
  size: number;
  bytes: Uint8Array;
}

export interface ImageRequest {
  model?: string;
  prompt: string;
  n: number;
  size?: string;
  quality?: string;
  responseFormat?: string;
  /** edits: how many input images arrived, and the first one's size if it was a PNG */
  inputImages: number;
  inputSize?: { width: number; height: number };
}

/** Reads a generations/edits body (JSON, or recorded multipart fields, numbers as strings). */
export function imageRequest(f: Record<string, unknown>, override: { n?: number; size?: string } = {}): ImageRequest {
  const str = (v: unknown) => (typeof v === "string" ? v : typeof v === "number" ? String(v) : undefined);
  // A markup (GPT Image 2.5 edits) is an input image billed as a source is; the mask is not counted.
  const files = [f.image, f["image[]"], f.markup].flat()
    .filter((v): v is MockFile => typeof v === "object" && v !== null && (v as MockFile).bytes instanceof Uint8Array);
  const first = files[0];
  return {
    model: str(f.model),
    prompt: str(f.prompt) ?? "",
    n: override.n ?? (Number(str(f.n) ?? 1) || 1),
    size: override.size ?? str(f.size),
    quality: str(f.quality),
    responseFormat: str(f.response_format),
    inputImages: files.length + (Array.isArray(f.images) ? f.images.length : 0),
    inputSize: first ? (readPngSize(first.bytes) ?? undefined) : undefined,
  };
}

export type ImagesResult = { ok: true; body: Record<string, unknown> } | { ok: false; param: string; message: string };

/** gpt-image-1's published output tokens per image, by quality and size (1024x1024, 1024x1536, 1536x1024). */
export const GPT_IMAGE_OUTPUT_TOKENS: Record<string, Record<string, number>> = {
  low: { "1024x1024": 272, "1024x1536": 408, "1536x1024": 400 },
  medium: { "1024x1024": 1056, "1024x1536": 1584, "1536x1024": 1568 },
  high: { "1024x1024": 4160, "1024x1536": 6240, "1536x1024": 6208 },
};
/** Image input tokens the mock reports per edit source. */
export const MOCK_SOURCE_TOKENS = 323;

/**
 * The ImagesResponse; usage (GPT image models only) as gpt-image-1 reports it: the published output
 * tokens for the quality and size (`auto` quality is served medium; another size is the square's
 * count scaled by area), MOCK_SOURCE_TOKENS per source, a token per 4 prompt characters.
 */
export function imagesResponse(r: ImageRequest, usage?: Record<string, unknown> | false): ImagesResult {
  let width = r.inputSize?.width ?? 1024;
  let height = r.inputSize?.height ?? 1024;
  if (r.size !== undefined && r.size !== "auto") {
    const m = /^(\d{1,4})x(\d{1,4})$/.exec(r.size);
    if (!m || Number(m[1]) < 1 || Number(m[2]) < 1 || Number(m[1]) > 4096 || Number(m[2]) > 4096) {
      return { ok: false, param: "size", message: `Invalid value: '${r.size}'. Supported values are: '1024x1024', '1024x1536', '1536x1024', and 'auto'.` };
    }
    width = Number(m[1]);
    height = Number(m[2]);
  }
  const h = Number(Bun.hash(r.prompt) & 0xffffffn);
  const rgb: [number, number, number] = [h & 0xff, (h >> 8) & 0xff, (h >> 16) & 0xff];
  const b64 = pngBase64(width, height, rgb);
  const dalle = r.model?.startsWith("dall-e") ?? false;
  const item = (): Record<string, unknown> => {
    const it: Record<string, unknown> = r.responseFormat === "url" && dalle
      ? { url: `data:image/png;base64,${b64}` }
      : { b64_json: b64 };
    if (r.model === "dall-e-3") it.revised_prompt = r.prompt;
    return it;
  };
  const body: Record<string, unknown> = { created: Math.floor(Date.now() / 1000), data: Array.from({ length: r.n }, item) };
  if (dalle) return { ok: true, body };
  const textTokens = Math.max(1, Math.ceil(r.prompt.length / 4));
  const imageIn = r.inputImages * MOCK_SOURCE_TOKENS;
  const quality = r.quality !== undefined && Object.hasOwn(GPT_IMAGE_OUTPUT_TOKENS, r.quality) ? r.quality : "medium";
  const row = GPT_IMAGE_OUTPUT_TOKENS[quality]!;
  const perImage = row[`${width}x${height}`] ?? Math.ceil((row["1024x1024"]! * width * height) / (1024 * 1024));
  const out = r.n * perImage;
  Object.assign(body, { background: "opaque", output_format: "png", size: `${width}x${height}`, quality });
  if (usage !== false) {
    body.usage = usage ?? {
      input_tokens: textTokens + imageIn, output_tokens: out, total_tokens: textTokens + imageIn + out,
      input_tokens_details: { text_tokens: textTokens, image_tokens: imageIn },
      output_tokens_details: { image_tokens: out, text_tokens: 0 },
    };
  }
  return { ok: true, body };
}
