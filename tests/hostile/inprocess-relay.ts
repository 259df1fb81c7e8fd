import { NativeMessagesMachine } from "../../src/dialects/native-stream.ts";
import { Cutoff } from "../../src/relay/cutoff.ts";
import { firstEvents, relayStream, type StreamStart } from "../../src/relay/stream.ts";
import type { RelayCall } from "../../src/relay/context.ts";
import type { Attempt } from "../../src/relay/routes.ts";

// A native Messages stream relayed in process, without a server: the upstream is the body given, the
// hold is closed already (nothing is charged), the client is the returned reader.

export const START = 'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":1,"output_tokens":1}}}\n\n';
export const STOP = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';

export async function relayInProcess(upstream: ReadableStream<Uint8Array>): Promise<ReadableStreamDefaultReader<Uint8Array>> {
  return (await relayedResponse(upstream)).body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
}

/** The relay's response itself, for a test that serves it to a real socket; `request`: the call's body, if any. */
export async function relayedResponse(upstream: ReadableStream<Uint8Array>, request: Partial<RelayCall> = {}): Promise<Response> {
  const attempt = { route: { key: "r", provider: { id: "p" } }, response: new Response(upstream), abort: new AbortController(), attempts: 1, slot: { inFlight: 1 } } as unknown as Attempt;
  // `request` itself becomes the call (a test may give it the body and read what the relay left of it).
  const call = Object.assign(request, { svc: { cutoff: new Cutoff() }, requestId: "req-inprocess", started: 0, log: { endpoint: "messages" } }) as unknown as RelayCall;
  const opening = await firstEvents(attempt, "messages");
  const machine = new NativeMessagesMachine({ costOf: () => 0, estimatedInputTokens: 1 });
  const hold = { open: false } as StreamStart["hold"];
  return relayStream({ call, attempt, opening, machine, hold, model: {} as StreamStart["model"], estimatedInputTokens: 1, maxOut: 50, headers: {} });
}
