// Loose wire shapes of the two text dialects. Bodies keep every field the client sent; these types
// name only what the gateway reads or writes. Unknown fields stay on the objects (index signature).

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: unknown };

// ---- Messages (Anthropic) ----
export interface MessagesBlock extends JsonObject {
  type: string;
}
export interface MessagesMessage extends JsonObject {
  role: "user" | "assistant" | "system";
  content: string | MessagesBlock[];
}
export interface MessagesRequest extends JsonObject {
  model: string;
  max_tokens: number;
  messages: MessagesMessage[];
  system?: string | MessagesBlock[];
  stream?: boolean;
  tools?: JsonObject[];
  tool_choice?: JsonObject;
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  metadata?: JsonObject;
}
export interface MessagesUsage extends JsonObject {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  /** The cache writes split by duration (their sum is cache_creation_input_tokens). */
  cache_creation?: ({ ephemeral_5m_input_tokens?: number | null; ephemeral_1h_input_tokens?: number | null } & JsonObject) | null;
  server_tool_use?: ({ web_search_requests?: number | null } & JsonObject) | null;
  output_tokens_details?: JsonObject | null;
  /** Anthropic's tier: "standard", "priority" or "batch"; no price of its own. */
  service_tier?: string | null;
  /** "fast": fast mode ran, at its premium prices (message_start only on a stream). */
  speed?: string | null;
  /** Where inference ran: "global", or a region ("us") billed at a premium (message_start only on a stream). */
  inference_geo?: string | null;
  cost_usd?: number;
}
export interface MessagesResponse extends JsonObject {
  id: string;
  type: "message";
  role: "assistant";
  model: string;
  content: MessagesBlock[];
  stop_reason: string | null;
  stop_sequence: string | null;
  stop_details: JsonObject | null;
  usage: MessagesUsage;
}
/** One SSE event of a Messages stream: the event name and its parsed data. */
export interface MessagesEvent {
  event: string;
  data: JsonObject;
}

// ---- Chat Completions (OpenAI) ----
export interface ChatToolCall extends JsonObject {
  id?: string;
  index?: number;
  type?: "function";
  function?: { name?: string; arguments?: string };
}
export interface ChatMessage extends JsonObject {
  role: "system" | "developer" | "user" | "assistant" | "tool" | "function";
  content?: string | JsonObject[] | null;
  tool_calls?: ChatToolCall[];
  tool_call_id?: string;
  name?: string;
}
export interface ChatRequest extends JsonObject {
  model: string;
  messages: ChatMessage[];
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean } & JsonObject;
  tools?: JsonObject[];
  tool_choice?: string | JsonObject;
  stop?: string | string[] | null;
  temperature?: number | null;
  top_p?: number | null;
  n?: number | null;
  user?: string;
  parallel_tool_calls?: boolean;
  response_format?: JsonObject;
}
export interface ChatUsage extends JsonObject {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: {
    cached_tokens?: number;
    cache_write_tokens?: number;
    /** LiteLLM's name for Anthropic's cache_creation split. */
    cache_creation_token_details?: { ephemeral_5m_input_tokens?: number; ephemeral_1h_input_tokens?: number } & JsonObject;
  } & JsonObject;
  /** Server-side tools the provider ran (Anthropic's web searches, in LiteLLM's Chat shape). */
  server_tool_use?: { web_search_requests?: number } & JsonObject;
  /** DeepSeek's cache hits (inside prompt_tokens), where OpenAI says prompt_tokens_details.cached_tokens. */
  prompt_cache_hit_tokens?: number;
  completion_tokens_details?: { reasoning_tokens?: number } & JsonObject;
  cost_usd?: number;
}
export interface ChatChoice extends JsonObject {
  index: number;
  message: ChatMessage & { refusal?: string | null; reasoning_content?: string };
  finish_reason: string | null;
  logprobs?: unknown;
}
export interface ChatResponse extends JsonObject {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: ChatChoice[];
  usage?: ChatUsage;
}
export interface ChatChunk extends JsonObject {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: {
    index: number;
    delta: JsonObject & { role?: string; content?: string | null; tool_calls?: ChatToolCall[]; reasoning_content?: string; refusal?: string | null };
    finish_reason: string | null;
    logprobs?: unknown;
  }[];
  usage?: ChatUsage | null;
  error?: unknown;
}
