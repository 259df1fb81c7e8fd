import { GatewayError } from "../core/errors.ts";

// The checks of an image request's fields before it is priced and sent (docs/api.md#rules, rule 10): what the
// gateway charges for must be what the upstream reads, so a field means one thing or is refused.

export const MAX_EDIT_SOURCES = 4;

/** OpenAI's enumerated image fields and their values (generations and edits alike; an upstream refuses a value its model lacks). */
const ENUMS: Record<string, readonly string[]> = {
  background: ["transparent", "opaque", "auto"],
  quality: ["standard", "hd", "low", "medium", "high", "auto"],
  output_format: ["png", "jpeg", "webp"],
  response_format: ["url", "b64_json"],
  moderation: ["low", "auto"],
  style: ["vivid", "natural"],
  input_fidelity: ["high", "low"],
};

/**
 * Values OpenAI takes that no hold can be sized for (docs/pricing.md#images), and why: refused by
 * name rather than as unknown, so the client learns it is the gateway's choice, not a typo.
 */
const UNPRICED: Record<string, Record<string, string>> = {
  quality: {
    xhigh: "OpenAI publishes no output tokens per image for it, so no hold can be sized to cover it; use low, medium, high or auto",
    max: "OpenAI publishes no output tokens per image for it, so no hold can be sized to cover it; use low, medium, high or auto",
  },
  output_format: {
    gif: "OpenAI publishes no output tokens for a GIF's frames, so no hold can be sized to cover it; use png, jpeg or webp",
    svg: "SVG output also bills an author model's text tokens (svg_usage), which an image model's prices do not cover; use png, jpeg or webp",
  },
};

/**
 * Fields OpenAI's images API takes that no hold can be sized for, or that only act with an output
 * or a mode refused above, and why: the upstream read them while the hold and the price did not.
 */
const UNPRICED_FIELDS: Record<string, string> = {
  complexity:
    "it sets the computation spent planning the image apart from its quality, and OpenAI publishes no token count for any of its levels, so no hold can be sized to cover it; omit it for the model's default",
  frame_count: "it sets a GIF's frames (2 to 16), for which OpenAI publishes no output tokens, and output_format gif is not priced by this gateway; omit it",
  frame_duration_ms: "it only acts with output_format gif, which is not priced by this gateway; omit it",
  svg: "it picks the model and reasoning effort of an SVG author billed apart (svg_usage) at that model's text prices, which an image model's prices do not cover, and output_format svg is not priced by this gateway; omit it",
  partial_images: "partial images are only sent in a stream, and image streaming is not supported by this gateway; omit it",
};

/** The fields the gateway knows and prices on each image route (the SDK's ImageGenerateParams and ImageEditParams less UNPRICED_FIELDS). */
const COMMON = ["model", "prompt", "n", "size", "quality", "background", "output_compression", "output_format", "response_format", "safety_identifier", "user", "stream"];
const KNOWN: Record<"images.generations" | "images.edits", ReadonlySet<string>> = {
  "images.generations": new Set([...COMMON, "moderation", "style"]),
  "images.edits": new Set([...COMMON, "image", "mask", "markup", "input_fidelity"]),
};

/**
 * Refuses, before the hold, a field the hold does not cover: one of UNPRICED_FIELDS by name with
 * why, and one the gateway does not know (a newer API's, a typo) since what it bills is unknown.
 * A multipart name is read by its head (`svg[model]` is `svg`, `image[0]` is `image`); a JSON field
 * sent as null is absent, as OpenAI reads it.
 */
export function checkFieldsKnown(endpoint: "images.generations" | "images.edits", names: Iterable<string>): void {
  for (const name of names) {
    const field = name.split("[", 1)[0]!;
    if (Object.hasOwn(UNPRICED_FIELDS, field)) throw new GatewayError("invalid_request", `${field}: not priced by this gateway: ${UNPRICED_FIELDS[field]}.`);
    if (!KNOWN[endpoint].has(field)) {
      throw new GatewayError("invalid_request", `${field}: not a field this gateway knows on ${endpoint}, so what the upstream would bill for it is unknown; omit it.`);
    }
  }
}

/**
 * A value outside its field's set is refused, not passed on: `"background": "true"` was accepted,
 * forwarded and silently ignored (an opaque image charged as the transparent one asked for).
 */
export function checkEnumerated(get: (field: string) => unknown): void {
  for (const [field, allowed] of Object.entries(ENUMS)) {
    const v = get(field);
    if (v === undefined || v === null) continue;
    const why = typeof v === "string" && Object.hasOwn(UNPRICED, field) && Object.hasOwn(UNPRICED[field]!, v) ? UNPRICED[field]![v] : undefined;
    if (why) throw new GatewayError("invalid_request", `${field}: ${JSON.stringify(v)} is not priced by this gateway: ${why}.`);
    if (typeof v !== "string" || !allowed.includes(v)) {
      throw new GatewayError("invalid_request", `${field}: must be one of ${allowed.join(", ")}; got ${JSON.stringify(v)}.`);
    }
  }
}

/** A source image's field, whatever its spelling: `image`, `image[]`, `image[0]`… (the SDK sends an array as `image[]`). */
const isSource = (name: string) => name === "image" || name.startsWith("image[");

export interface EditForm {
  model: string;
  n: number;
  prompt: string;
  sources: File[];
}

/**
 * Reads an edit's form. Each field but the sources comes once: with `n` sent twice the gateway
 * reserved and charged the first while an upstream that keeps the last made up to 10 images. The
 * sources are counted together across spellings (`image` plus `image[0]`…`image[4]` passed the limit).
 */
export function readEditForm(form: FormData): EditForm {
  const seen = new Set<string>();
  const sources: (string | File)[] = [];
  for (const [name, value] of form.entries()) {
    if (isSource(name)) sources.push(value as string | File);
    else if (seen.has(name)) throw new GatewayError("invalid_request", `${name}: sent more than once; send one value per field.`);
    else seen.add(name);
  }
  const model = form.get("model");
  if (typeof model !== "string" || !model) throw new GatewayError("invalid_request", "model: Field required");
  const prompt = form.get("prompt");
  if (typeof prompt !== "string" || !prompt) throw new GatewayError("invalid_request", "prompt: Field required");
  if (form.get("stream") === "true") throw new GatewayError("invalid_request", "stream: streamed image edits are not supported by this gateway; omit stream.");
  if (sources.length === 0) throw new GatewayError("invalid_request", "image: Field required (one to four source images)");
  if (sources.length > MAX_EDIT_SOURCES) {
    throw new GatewayError("invalid_request", `image: at most ${MAX_EDIT_SOURCES} source images can be edited or combined; got ${sources.length}.`);
  }
  sources.forEach((f, i) => {
    if (typeof f === "string") throw new GatewayError("invalid_request", `image[${i}]: expected a file, got a string.`);
  });
  checkFieldsKnown("images.edits", seen);
  if (form.get("markup") !== null && form.get("mask") !== null) {
    throw new GatewayError("invalid_request", "markup: cannot be combined with mask (OpenAI refuses both); send one.");
  }
  checkEnumerated((field) => form.get(field) ?? undefined);
  const nRaw = form.get("n");
  const n = nRaw === null ? 1 : Number(nRaw);
  if (!Number.isInteger(n) || n < 1 || n > 10) throw new GatewayError("invalid_request", "n: must be an integer from 1 to 10.");
  return { model, n, prompt, sources: sources as File[] };
}

const SNIFF: [ext: string, type: string, test: (b: Uint8Array) => boolean][] = [
  ["png", "image/png", (b) => b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47],
  ["jpg", "image/jpeg", (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff],
  ["webp", "image/webp", (b) => String.fromCharCode(...b.subarray(0, 4)) === "RIFF" && String.fromCharCode(...b.subarray(8, 12)) === "WEBP"],
];

/** A file part named and typed after its bytes, or a 400 naming `param` when they are no image `allowed` takes. */
async function typedImage(file: File, param: string, allowed: readonly string[]): Promise<File> {
  const head = new Uint8Array(await file.slice(0, 12).arrayBuffer());
  const kind = SNIFF.find(([ext, , test]) => allowed.includes(ext) && test(head));
  if (!kind) {
    const names = allowed.map((e) => (e === "jpg" ? "JPEG" : e === "webp" ? "WebP" : "PNG")).join(", ");
    throw new GatewayError("invalid_request", `${param}: not an image of a supported format (${names}), read from its bytes.`);
  }
  const [ext, type] = kind;
  const named = (ext === "jpg" ? [".jpg", ".jpeg"] : [`.${ext}`]).some((e) => file.name.toLowerCase().endsWith(e));
  const name = named ? file.name : `${file.name || "image"}.${ext}`;
  return file.type === type && name === file.name ? file : new File([file], name, { type });
}

/**
 * The form as the upstream is sent it: each source (PNG, JPEG or WebP) and the mask (PNG) typed
 * from its bytes. The SDK sends `application/octet-stream` for a buffer or a stream without a type,
 * which OpenAI refuses after the request was held; a file that is no image is refused here, before
 * anything is held or sent.
 */
export async function typedEditForm(form: FormData): Promise<FormData> {
  const out = new FormData();
  let source = 0;
  for (const [name, value] of form.entries()) {
    const v = value as string | File;
    if (typeof v === "string" && (name === "mask" || name === "markup")) throw new GatewayError("invalid_request", `${name}: expected a file, got a string.`);
    if (typeof v === "string") out.append(name, v);
    else if (isSource(name)) out.append(name, await typedImage(v, `image[${source++}]`, ["png", "jpg", "webp"]));
    else if (name === "mask" || name === "markup") out.append(name, await typedImage(v, name, ["png"]));
    else out.append(name, v);
  }
  return out;
}
