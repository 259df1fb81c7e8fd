import type { JsonObject } from "../wire/shapes.ts";
import { GatewayError } from "../core/errors.ts";
import type { RelayCall } from "./context.ts";
import { nanoToUsd } from "../core/money.ts";
import { attemptRoutes, readJsonAnswer } from "./routes.ts";
import { resolveModel } from "./text.ts";
import { post, reserve } from "./charge.ts";
import { describe } from "../core/events.ts";
import { checkEnumerated, checkFieldsKnown, readEditForm, typedEditForm } from "./image-fields.ts";
import { checkImageOptions } from "./image-options.ts";
import { billImages, imageHoldNano, readImageUsage, usageShown, type ImageAsk } from "./image-billing.ts";
import type { ImageUsage } from "../catalog/image-prices.ts";
import type { LogRow } from "../store/request-log/contract.ts";

/** The row keeps the images kept and, when billed by tokens, each class's count (gateway logs show rebuilds the cost from them). */
function logImages(log: LogRow, images: number, u: ImageUsage | null): void {
  log.images = images;
  if (!u) return;
  log.inputTokens = u.textInput;
  log.outputTokens = u.textOutput;
  log.imageInputTokens = u.imageInput;
  log.imageOutputTokens = u.imageOutput;
}

type ImageEndpoint = "images.generations" | "images.edits";

/** Reads the model and what the price depends on from either body kind, with the documented 400s (image-fields.ts, docs/api.md#rules). */
function readRequest(call: RelayCall, endpoint: ImageEndpoint): { model: unknown; ask: ImageAsk } {
  const bytes = (prompt: unknown) => (typeof prompt === "string" ? Buffer.byteLength(prompt) : 0);
  if (endpoint === "images.edits") {
    const form = call.form!;
    const edit = readEditForm(form);
    // The mask and the markup are input images the upstream bills as image input tokens, as a source is.
    const extra = ["mask", "markup"].filter((f) => form.get(f) instanceof File).length;
    const ask = { n: edit.n, quality: form.get("quality") ?? undefined, size: form.get("size") ?? undefined, promptBytes: bytes(edit.prompt), inputImages: edit.sources.length + extra };
    return { model: edit.model, ask };
  }
  const json = call.json;
  if (json.stream === true) throw new GatewayError("invalid_request", "stream: streamed image generation is not supported by this gateway; omit stream.");
  checkFieldsKnown("images.generations", Object.keys(json).filter((k) => json[k] !== null && json[k] !== undefined));
  checkEnumerated((field) => json[field]);
  const n = (json.n as number | null | undefined) ?? 1;
  return { model: json.model, ask: { n, quality: json.quality, size: json.size, promptBytes: bytes(json.prompt), inputImages: 0 } };
}

export async function serveImages(call: RelayCall, endpoint: ImageEndpoint): Promise<Response> {
  const { model: name, ask } = readRequest(call, endpoint);
  const model = resolveModel(call, name, endpoint);
  checkImageOptions(model, ask);
  const typed = endpoint === "images.edits" ? await typedEditForm(call.form!) : null;
  const hold = await reserve(call, imageHoldNano(model.imagePrices, ask));
  try {
    let answer: JsonObject = {};
    await attemptRoutes(call.svc, model, call, {
      send(route, provider, signal, apiKey) {
        let body: JsonObject | FormData;
        if (endpoint === "images.generations") body = { ...call.json, model: route.upstreamModel };
        else {
          const form = new FormData();
          for (const [k, v] of typed!.entries()) if (k !== "model") form.append(k, v);
          form.set("model", route.upstreamModel);
          body = form;
        }
        return provider.images({ endpoint, body, signal, apiKey });
      },
      async confirm(a) {
        try {
          answer = (await readJsonAnswer(a)).json;
        } catch (e) {
          // Headers came, so the provider took the request and may bill it: trying another route
          // could make two images charged to us for one asked (docs/api.md#retry-rules: not retried, not charged).
          throw new GatewayError(
            "ambiguous_upstream_result",
            `The image provider accepted the request but its answer was lost (${describe(e)}). It was not charged; do not retry automatically: the provider may have generated it.`,
          );
        }
      },
    });
    const images = Array.isArray(answer.data) ? answer.data : [];
    // An upstream that returns more images than asked is paid for what was asked, and the client gets that many.
    const count = Math.min(images.length, ask.n);
    if (images.length > count) answer.data = images.slice(0, count);
    const prices = model.imagePrices;
    const bill = billImages(prices, prices.tokens ? readImageUsage(answer.usage, endpoint === "images.edits") : null, images.length, ask.n);
    const cost = bill.costNano;
    logImages(call.log, count, bill.usage);
    const body = JSON.stringify({ ...answer, usage: usageShown(answer.usage, bill, nanoToUsd(cost)) });
    await post(call, hold, cost, null, 200);
    return new Response(body, { headers: { "content-type": "application/json" } });
  } finally {
    hold.close("failed");
  }
}
