import { openapi } from "@elysiajs/openapi";
import type { TSchema } from "@sinclair/typebox";
import { ErrorEnvelope, type Answer } from "./api-schemas.ts";
import { SPEC_PATH, type Endpoint } from "./endpoints.ts";

// GET /openapi.json: Elysia's OpenAPI plugin over the endpoint table. The key endpoints validate
// their bodies inside the pipeline (in the documented order: pause, size, key, limits, then the body; docs/api.md#limits), so
// their schemas are given to the document as `detail` rather than as route schemas Elysia would
// enforce first.


const errors = {
  "4XX": { description: "The request or the key is at fault (docs/api.md, Errors).", content: { "application/json": { schema: ErrorEnvelope } } },
  "5XX": { description: "The upstream provider or the gateway's availability.", content: { "application/json": { schema: ErrorEnvelope } } },
};

const keyed = (summary: string, body: TSchema | null, stream: boolean, type = "application/json") => ({
  summary,
  security: [{ apiKey: [] }, { bearer: [] }],
  ...(body ? { requestBody: { required: true, content: { [type]: { schema: body } } } } : {}),
  responses: {
    200: {
      description: stream ? "The answer, or an SSE stream when `stream` is true; usage.cost_usd is the request's cost." : "The answer.",
      content: { "application/json": { schema: { type: "object" } }, ...(stream ? { "text/event-stream": { schema: { type: "string" } } } : {}) },
    },
    ...errors,
  },
});

/** A route without a key: its body's schema and its answer's (api-schemas.ts), from the row. */
const open = (summary: string, body: TSchema | null, answer: Answer | null) => ({
  summary,
  ...(body ? { requestBody: { required: true, content: { "application/json": { schema: body } } } } : {}),
  responses: {
    [answer?.status ?? 200]: { description: "The answer.", content: { [answer?.type ?? "application/json"]: { schema: answer?.schema ?? { type: "object" } } } },
    ...errors,
  },
});

/** The `detail` Elysia's route takes: the endpoint's entry in the document, or hidden when it is not published. */
export function detailOf(e: Endpoint): { detail: Record<string, unknown> } {
  if (!e.published) return { detail: { hide: true } };
  if (e.auth !== "key") return { detail: open(e.summary, e.schema, e.response) };
  return { detail: keyed(e.summary, e.schema, e.streams, e.body === "multipart" ? "multipart/form-data" : "application/json") };
}

export function openapiDocument(version: string) {
  return openapi({
    provider: null,
    path: "/openapi",
    specPath: SPEC_PATH,
    // A path with a dot is not a static file here: /api/requests.csv is an endpoint.
    exclude: { paths: [SPEC_PATH], staticFile: false },
    documentation: {
      info: { title: "gateway", version, description: "A prepaid LLM API gateway: the model API under /v1 (docs/api.md)." },
      components: {
        securitySchemes: {
          apiKey: { type: "apiKey", in: "header", name: "x-api-key" },
          bearer: { type: "http", scheme: "bearer" },
        },
      },
    },
  });
}
