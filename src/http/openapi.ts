import { openapi } from "@elysiajs/openapi";
import type { TSchema } from "@sinclair/typebox";
import { ChatBody, CountTokensBody, ImageGenerationBody, MessagesBody, ResponsesBody } from "./schemas.ts";

// GET /openapi.json: Elysia's OpenAPI plugin over the route table. The key routes validate their
// bodies inside the pipeline (in the spec's order: pause, size, key, limits, then the body), so their
// schemas are given to the document as `detail` rather than as route schemas Elysia would enforce first.

const ERROR = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["type", "code", "message", "request_id"],
      properties: { type: { type: "string" }, code: { type: "string" }, message: { type: "string" }, request_id: { type: "string" } },
    },
  },
};

const errors = {
  "4XX": { description: "The request or the key is at fault (docs/api.md, Errors).", content: { "application/json": { schema: ERROR } } },
  "5XX": { description: "The upstream provider or the gateway's availability.", content: { "application/json": { schema: ERROR } } },
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

const open = (summary: string) => ({ summary, responses: { 200: { description: "JSON", content: { "application/json": { schema: { type: "object" } } } }, ...errors } });

const MULTIPART_EDIT = {
  type: "object",
  required: ["model", "prompt", "image"],
  properties: { model: { type: "string" }, prompt: { type: "string" }, image: { type: "array", maxItems: 4, items: { type: "string", format: "binary" } }, n: { type: "integer" } },
} as unknown as TSchema;

/** The `detail` of each published route, by "METHOD path" (Elysia's path syntax). */
export const ROUTE_DOCS = {
  "GET /status": open("Gateway status and route health"),
  "GET /v1/models": open("Published models"),
  "GET /v1/models/:id": open("One model (an alias answers with the canonical id)"),
  "GET /api/pricing": open("Public prices and the catalog version"),
  "POST /v1/messages": keyed("Messages dialect (Anthropic SDK base URL without /v1)", MessagesBody, true),
  "POST /v1/messages/count_tokens": keyed("Token estimate; free, 60 per minute per key", CountTokensBody, false),
  "POST /v1/chat/completions": keyed("Chat Completions dialect", ChatBody, true),
  "POST /v1/responses": keyed("Responses dialect, on top of chat completions", ResponsesBody, true),
  "POST /v1/images/generations": keyed("Generate images", ImageGenerationBody, false),
  "POST /v1/images/edits": keyed("Edit or combine up to 4 images", MULTIPART_EDIT, false, "multipart/form-data"),
  "GET /v1/me": keyed("The key's quota, the balance and the limits", null, false),
} as const;

export const doc = (route: keyof typeof ROUTE_DOCS) => ({ detail: ROUTE_DOCS[route] as Record<string, unknown> });

export function openapiDocument(version: string) {
  return openapi({
    provider: null,
    path: "/openapi",
    specPath: "/openapi.json",
    exclude: { paths: ["/", "/healthz", "/readyz", "/metrics", "/openapi.json"] },
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
