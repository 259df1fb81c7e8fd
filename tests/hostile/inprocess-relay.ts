import { NativeMessagesMachine } from "../../src/dialects/native-stream.ts";
import { Cutoff } from "../../src/relay/cutoff.ts";
import { firstEvents, relayStream, type StreamStart } from "../../src/relay/stream.ts";
import type { RelayCall } from "../../src/relay/context.ts";
import { AnsweredAttempt } from "../../src/relay/attempt.ts";
import type { KeySlot } from "../../src/relay/capacity.ts";
import { AttemptClock } from "../../src/relay/timeouts.ts";
import type { Route } from "../../src/catalog/catalog.ts";
import type { Provider } from "../../src/upstreams/types.ts";

// A native Messages stream relayed in process, without a server: the upstream is the body given, the
// hold is closed already (nothing is charged), the client is the returned reader.

export const START = 'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":1,"output_tokens":1}}}\n\n';
export const STOP = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';

export async function relayInProcess(upstream: ReadableStream<Uint8Array>): Promise<ReadableStreamDefaultReader<Uint8Array>> {
  return (await relayedResponse(upstream)).body!.getReader() as ReadableStreamDefaultReader<Uint8Array>;
}

/** The relay's response itself, for a test that serves it to a real socket; `request`: the call's body, if any. */
export async function relayedResponse(upstream: ReadableStream<Uint8Array>, request: Partial<RelayCall> = {}): Promise<Response> {
  // The attempt as the route loop hands a stream over: held by the cutoff, its key in flight, its clock running.
  const abort = new AbortController();
  const cutoff = new Cutoff();
  cutoff.hold(abort);
  const clock = new AttemptClock(abort, { firstByteMs: 60_000, idleMs: 60_000, totalMs: 60_000 });
  const route = { key: "r", provider: { id: "p" } } as Route;
  const attempt = new AnsweredAttempt(route, {} as Provider, new Response(upstream), abort, 1, { inFlight: 1 } as KeySlot, clock, cutoff);
  // `request` itself becomes the call (a test may give it the body and read what the relay left of it).
  const call = Object.assign(request, { svc: { cutoff }, requestId: "req-inprocess", started: 0, log: { endpoint: "messages" } }) as unknown as RelayCall;
  const opening = await firstEvents(attempt, "messages");
  const machine = new NativeMessagesMachine({ costOf: () => 0, estimatedInputTokens: 1 });
  const hold = { open: false } as StreamStart["hold"];
  return relayStream({ call, attempt, opening, machine, hold, model: {} as StreamStart["model"], estimatedInputTokens: 1, maxOut: 50, headers: {} });
}
