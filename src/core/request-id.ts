// The time prefix of request ids keeps them in time order, which request_logs relies on (its
// primary key is the id; pruning deletes a key range).

// The counter runs over the numbers of exactly six base-36 digits, so it prints at its fixed width
// with no padding (padStart made one more string a request, bench/RESULTS.md).
const COUNTER_FIRST = 36 ** 5;
const COUNTER_SPAN = 36 ** 6 - COUNTER_FIRST;
let counter = 0;
// Fixed widths, so no two (tag, counter) pairs print the same.
const bootTag = Math.floor(Math.random() * 0xffffff).toString(36).padStart(5, "0");

// The id's start (time and tag), made once per millisecond: requests of the same millisecond share it.
let prefixMs = -1;
let prefix = "";

/** gw_ + time + process tag + counter: unique without a random call per request. */
export function newRequestId(): string {
  counter = (counter + 1) % COUNTER_SPAN;
  const ms = Date.now();
  if (ms !== prefixMs) {
    prefixMs = ms;
    prefix = requestIdPrefixAt(ms) + bootTag;
  }
  return prefix + (COUNTER_FIRST + counter).toString(36);
}

/** The start of every request id made at `ms`: 8 base-36 digits keep ids in time order until 2059. */
export function requestIdPrefixAt(ms: number): string {
  return `gw_${ms.toString(36).padStart(8, "0")}`;
}
