import type { JsonObject } from "../wire/shapes.ts";
import { GatewayError } from "../core/errors.ts";
import type { RelayCall } from "./context.ts";
import { nanoToUsd } from "../core/money.ts";
import { attemptRoutes, readJsonAnswer } from "./routes.ts";
import { resolveModel } from "./text.ts";
import { post, reserve } from "./charge.ts";
import { describe } from "../logs/events.ts";
import { checkEnumerated, readEditForm } from "./image-fields.ts";

type ImageEndpoint = "images.generations" | "images.edits";

/** Reads model and n from either body kind, with the spec's 400s (image-fields.ts). */
function readRequest(call: RelayCall, endpoint: ImageEndpoint): { model: unknown; n: number } {
  if (endpoint === "images.edits") return readEditForm(call.form!);
  if (call.json.stream === true) throw new GatewayError("invalid_request", "stream: streamed image generation is not supported by this gateway; omit stream.");
  checkEnumerated((field) => call.json[field]);
  return { model: call.json.model, n: (call.json.n as number | null | undefined) ?? 1 };
}

export async function serveImages(call: RelayCall, endpoint: ImageEndpoint): Promise<Response> {
  const req = readRequest(call, endpoint);
  const model = resolveModel(call, req.model, endpoint);
  const held = reserve(call, req.n * model.perImageNano);
  const hold = held instanceof Promise ? await held : held;
  try {
    let answer: JsonObject = {};
    await attemptRoutes(call.svc, model, call, {
      send(route, provider, signal) {
        let body: JsonObject | FormData;
        if (endpoint === "images.generations") body = { ...call.json, model: route.upstreamModel };
        else {
          const form = new FormData();
          for (const [k, v] of call.form!.entries()) if (k !== "model") form.append(k, v);
          form.set("model", route.upstreamModel);
          body = form;
        }
        return provider.images({ endpoint, body, signal });
      },
      async confirm(a) {
        try {
          answer = (await readJsonAnswer(a)).json;
        } catch (e) {
          // Headers came, so the provider took the request and may bill it: trying another route
          // could make two images charged to us for one asked (spec: not retried, not charged).
          throw new GatewayError(
            "ambiguous_upstream_result",
            `The image provider accepted the request but its answer was lost (${describe(e)}). It was not charged; do not retry automatically: the provider may have generated it.`,
          );
        }
      },
    });
    const images = Array.isArray(answer.data) ? answer.data : [];
    // An upstream that returns more images than asked is paid for what was asked, and the client gets that many.
    const count = Math.min(images.length, req.n);
    if (images.length > count) answer.data = images.slice(0, count);
    const cost = count * model.perImageNano;
    call.log.images = count;
    const usage = { ...((answer.usage as JsonObject | undefined) ?? {}), cost_usd: nanoToUsd(cost) };
    const body = JSON.stringify({ ...answer, usage });
    await post(call, hold, cost, null, 200);
    return new Response(body, { headers: { "content-type": "application/json" } });
  } finally {
    hold.close("failed");
  }
}
