// The spec's byte estimator: one token per 4 bytes of the request body, rounded up. It answers
// count_tokens and sizes reservations; it is not a tokenizer, and the real usage settles the bill.
export const BYTES_PER_TOKEN = 4;

export function estimateInputTokens(bodyBytes: number): number {
  return Math.ceil(bodyBytes / BYTES_PER_TOKEN);
}
