import { Type as T, type TSchema } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { GatewayError } from "../core/errors.ts";
import { jsonPath } from "../core/json-path.ts";

// Wire shapes the gateway requires before it routes a request. Every other field passes through,
// so objects stay open (additionalProperties) and only what we read is typed.

const Message = T.Object({ role: T.String(), content: T.Optional(T.Unknown()) });
const NullableInt = T.Optional(T.Union([T.Integer({ minimum: 0 }), T.Null()]));

export const MessagesBody = T.Object({
  model: T.String({ minLength: 1 }),
  messages: T.Array(Message),
  max_tokens: T.Integer({ minimum: 0 }),
  stream: T.Optional(T.Boolean()),
});

export const CountTokensBody = T.Object({
  model: T.String({ minLength: 1 }),
  messages: T.Array(Message),
});

export const ChatBody = T.Object({
  model: T.String({ minLength: 1 }),
  messages: T.Array(Message, { minItems: 1 }),
  max_tokens: NullableInt,
  max_completion_tokens: NullableInt,
  stream: T.Optional(T.Union([T.Boolean(), T.Null()])),
});

export const ResponsesBody = T.Object({
  model: T.String({ minLength: 1 }),
  input: T.Optional(T.Union([T.String(), T.Array(T.Unknown())])),
  max_output_tokens: NullableInt,
  stream: T.Optional(T.Union([T.Boolean(), T.Null()])),
});

export const ImageGenerationBody = T.Object({
  model: T.String({ minLength: 1 }),
  prompt: T.String({ minLength: 1 }),
  n: T.Optional(T.Union([T.Integer({ minimum: 1, maximum: 10 }), T.Null()])),
  size: T.Optional(T.Union([T.String(), T.Null()])),
});

/** The multipart form of POST /v1/images/edits, for the OpenAPI document: relay/images.ts checks its fields as it reads them. */
export const ImageEditForm = T.Object({
  model: T.String(),
  prompt: T.String(),
  image: T.Array(T.String({ format: "binary" }), { maxItems: 4 }),
  n: T.Optional(T.Integer()),
});

const compiled = new Map<TSchema, ReturnType<typeof TypeCompiler.Compile>>();

/** Checks a parsed body against its schema; the first problem becomes the spec's 400 invalid_request. */
export function validate<S extends TSchema>(schema: S, body: unknown): void {
  let check = compiled.get(schema);
  if (!check) {
    check = TypeCompiler.Compile(schema);
    compiled.set(schema, check);
  }
  if (check.Check(body)) return;
  const first = check.Errors(body).First();
  if (!first) throw new GatewayError("invalid_request", "Request body does not match the expected shape.");
  const path = jsonPath(first.path);
  const missing = first.value === undefined;
  throw new GatewayError("invalid_request", missing ? `${path}: Field required` : `${path}: ${first.message}`);
}
