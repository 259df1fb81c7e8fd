import { Type as T, type TSchema } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { ValueErrorType, type ValueError } from "@sinclair/typebox/errors";
import { GatewayError } from "../core/errors.ts";
import { jsonPath } from "../core/json-path.ts";
import { NUL, nulRefused } from "../core/nul.ts";

// Wire shapes the gateway requires before it routes a request. Every other field passes through,
// so objects stay open (additionalProperties) and only what we read is typed.

const Message = T.Object({ role: T.String(), content: T.Optional(T.Unknown()) });
// An output cap of 0 would reserve no output while upstreams that read `max_completion_tokens or
// max_tokens` (vLLM, SGLang: 0 counts as unset) answer at length: the shortfall would be unpaid.
const NullableCap = T.Optional(T.Union([T.Integer({ minimum: 1 }), T.Null()]));

// A Messages field Anthropic's API refuses as null ("temperature: Input should be a valid number"):
// its description types it without `| null`. Refused here, before the hold, whichever upstream
// serves the model: a Chat upstream's translation took it as absent while Anthropic answered 400
// (docs/api.md#rules, rule 12). The value itself is the upstream's or the translator's to judge.
const NotNull = T.Optional(T.Not(T.Null()));
const NOT_NULL = ["temperature", "top_p", "top_k", "system", "stop_sequences", "tools", "tool_choice", "thinking", "metadata", "output_config", "service_tier", "mcp_servers"] as const;

export const MessagesBody = T.Object({
  model: T.String({ minLength: 1 }),
  messages: T.Array(Message),
  max_tokens: T.Integer({ minimum: 1 }),
  stream: T.Optional(T.Boolean()),
  ...Object.fromEntries(NOT_NULL.map((k) => [k, NotNull])),
});

export const CountTokensBody = T.Object({
  model: T.String({ minLength: 1 }),
  messages: T.Array(Message),
});

export const ChatBody = T.Object({
  model: T.String({ minLength: 1 }),
  messages: T.Array(Message, { minItems: 1 }),
  max_tokens: NullableCap,
  max_completion_tokens: NullableCap,
  stream: T.Optional(T.Union([T.Boolean(), T.Null()])),
});

export const ResponsesBody = T.Object({
  model: T.String({ minLength: 1 }),
  input: T.Optional(T.Union([T.String(), T.Array(T.Unknown())])),
  max_output_tokens: NullableCap,
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

/**
 * Refuses U+0000 anywhere in a dashboard request's text: its JSON body's strings and names, its
 * query's names and values (docs/dashboard.md#rules-every-route-keeps). PostgreSQL's text refuses
 * the character and SQLite's keeps it, so without this one check a name, a note or an email holding
 * it was a 500 on one engine and stored on the other. Walked without recursion: a 64 KiB body
 * nests 30,000 arrays deep.
 */
export function refuseNul(body: unknown, query: URLSearchParams): void {
  for (const [name, value] of query) {
    if (name.includes(NUL)) throw nulRefused("a query parameter's name");
    if (value.includes(NUL)) throw nulRefused(name);
  }
  // A stack of what is left to look at, pushed in reverse so that the first field in the body's order is named.
  const pending: [unknown, string][] = [[body, ""]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [value, at] = next;
    if (typeof value === "string") {
      if (value.includes(NUL)) throw nulRefused(at);
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) pending.push([value[i], `${at}[${i}]`]);
    } else if (value !== null && typeof value === "object") {
      const entries = Object.entries(value);
      if (entries.some(([k]) => k.includes(NUL))) throw nulRefused(at ? `a field's name in ${at}` : "a field's name");
      for (let i = entries.length - 1; i >= 0; i--) pending.push([entries[i]![1], at ? `${at}.${entries[i]![0]}` : entries[i]![0]]);
    }
  }
}

/**
 * A top-level key that is `model` in another case ("Model", "MODEL") beside the one the gateway
 * routes and prices: Go's encoding/json matches keys case-insensitively (last one wins), so a Go
 * upstream could run the client's choice of model at the catalog model's price.
 */
export function refuseModelLookalikes(body: Record<string, unknown>): void {
  for (const k in body) {
    if (k.length === 5 && k !== "model" && k.toLowerCase() === "model") {
      throw new GatewayError("invalid_request", `${k}: unknown field; the model is named by \`model\`, in lower case.`);
    }
  }
}

/** Checks a parsed body against its schema; the first problem becomes 400 invalid_request (docs/api.md#errors). */
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
  throw new GatewayError("invalid_request", missing ? `${path}: Field required` : `${path}: ${describe(first)}`);
}

/**
 * A problem in the client's terms. TypeBox says only "Expected union value" of a field that takes one
 * of several types (an output cap: an integer or null); each variant's own first problem says what it
 * takes: "Expected integer to be greater or equal to 1, or null".
 */
function describe(error: ValueError): string {
  if (error.type === ValueErrorType.Not) return "must not be null (Anthropic's API refuses it); leave the field out";
  if (error.type !== ValueErrorType.Union) return error.message;
  const each = error.errors.map((variant) => variant.First()?.message).filter((m): m is string => m !== undefined);
  if (each.length === 0) return error.message;
  return each.map((m, i) => (i === 0 ? m : m.replace(/^Expected /, ""))).join(", or ");
}
