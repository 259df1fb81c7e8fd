// Ids in OpenAI's shapes: a type prefix and random hex. The SDK (main since 2026-08-20) rejects
// duplicate item ids and call_ids within one response, so every id is fresh randomness.

function randomHex(bytes: number): string {
  // Buffer's hex writes the same lower-case digits as a byte-by-byte padStart, without a string per byte.
  return Buffer.from(crypto.getRandomValues(new Uint8Array(bytes)).buffer).toString("hex");
}

export const newResponseId = () => `resp_${randomHex(24)}`;
export const newMessageId = () => `msg_${randomHex(24)}`;
export const newFunctionCallId = () => `fc_${randomHex(24)}`;
export const newCustomCallId = () => `ctc_${randomHex(24)}`;
export const newReasoningId = () => `rs_${randomHex(24)}`;
/** A call_id for an upstream tool call that came without one (or with a duplicate). */
export const newCallId = () => `call_${randomHex(12)}`;
