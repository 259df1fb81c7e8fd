import { events } from "../../src/core/events.ts";

// `bun test` is quiet by default: the operator's events that tests provoke on purpose (5xx answers,
// failed upstream attempts, unexpected errors' stacks) go nowhere instead of stderr between the
// passes. GATEWAY_TEST_LOG=1 writes them as a server would. A test that reads events redirects them
// itself (events.redirect) and gets this writer back when it restores.
if (!process.env.GATEWAY_TEST_LOG) events.redirect(() => {});
