import { expect, test } from "bun:test";
import { unexpectedErrorLine } from "../../src/cli/main.ts";
import { stackOf } from "../../src/core/events.ts";

test("the CLI's line for an unexpected failed query names the statement and its reason, never the query's parameters", () => {
  // The shape of drizzle's failed-query error: its message ends with the parameters.
  const e = Object.assign(new Error("Failed query: update accounts set password_hash = $1 where id = $2\nparams: $argon2id$v=19$secret-hash,7"), {
    query: "update accounts set password_hash = $1 where id = $2",
    params: ["$argon2id$v=19$secret-hash", 7],
    cause: new Error("connection terminated"),
  });
  const line = unexpectedErrorLine(e);
  expect(line).toContain("update accounts set password_hash = $1 where id = $2");
  expect(line).toContain("connection terminated");
  expect(line).not.toContain("secret-hash");
});

test("the CLI's line for any other unexpected error keeps its message", () => {
  expect(unexpectedErrorLine(new TypeError("x is not a function"))).toBe("gateway: unexpected error: x is not a function (run with GATEWAY_DEBUG=1 for the stack)");
});

test("the stack GATEWAY_DEBUG prints for a failed query leaves out the query's parameters", () => {
  const e = Object.assign(new Error("Failed query: select 1 where email = $1\nparams: someone@example.com"), {
    query: "select 1 where email = $1",
    params: ["someone@example.com"],
  });
  const stack = stackOf(e);
  expect(stack).toContain("select 1 where email = $1");
  expect(stack).toMatch(/\n\s+at /);
  expect(stack).not.toContain("someone@example.com");
});
