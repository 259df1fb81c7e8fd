// A bare HTTP/1.1 client over a TCP socket: fetch() normalises what the fuzz must send as is (dot
// segments, percent-encoded slashes, duplicate header names, bytes that are not UTF-8, odd methods).

export interface RawRequest {
  method: string;
  /** The request target exactly as written on the request line. */
  target: string;
  /** Sent in this order, duplicates included; values are raw bytes (latin1 strings). */
  headers: [string, string][];
  body?: Uint8Array;
}

export interface RawResponse {
  status: number;
  /** Lowercased names; a repeated header keeps its last value. */
  headers: Record<string, string>;
  /** The header names as written on the wire, in order, repeats included. */
  names: string[];
  body: Uint8Array;
  text(): string;
}

const latin1 = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0) & 0xff);

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** Sends one request with `connection: close` and reads the answer to EOF. */
export async function rawRequest(port: number, req: RawRequest, timeoutMs = 10_000): Promise<RawResponse> {
  const chunks: Uint8Array[] = [];
  const { promise, resolve, reject } = Promise.withResolvers<void>();
  const socket = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data(_s, d) {
        chunks.push(new Uint8Array(d));
      },
      close() {
        resolve();
      },
      error(_s, e) {
        reject(e);
      },
      connectError(_s, e) {
        reject(e);
      },
    },
  });
  const body = req.body ?? new Uint8Array(0);
  // A Host of the request's own (a DNS-rebinding page's name) replaces the loopback one.
  const hostGiven = req.headers.some(([k]) => k.toLowerCase() === "host");
  let head = `${req.method} ${req.target} HTTP/1.1\r\n${hostGiven ? "" : `host: 127.0.0.1:${port}\r\n`}connection: close\r\n`;
  for (const [k, v] of req.headers) head += `${k}: ${v}\r\n`;
  if (!req.headers.some(([k]) => k.toLowerCase() === "content-length")) head += `content-length: ${body.byteLength}\r\n`;
  head += "\r\n";
  socket.write(concat([latin1(head), body]));
  socket.flush();
  const timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms to ${req.method} ${req.target.slice(0, 80)}`)), timeoutMs);
  try {
    await promise;
  } finally {
    clearTimeout(timer);
    socket.end();
  }
  return parseResponse(concat(chunks));
}

function indexOf(bytes: Uint8Array, seq: number[], from = 0): number {
  outer: for (let i = from; i <= bytes.length - seq.length; i++) {
    for (let j = 0; j < seq.length; j++) if (bytes[i + j] !== seq[j]) continue outer;
    return i;
  }
  return -1;
}

const CRLF = [13, 10];
const dec = new TextDecoder();

export function parseResponse(bytes: Uint8Array): RawResponse {
  const end = indexOf(bytes, [13, 10, 13, 10]);
  if (end === -1) throw new Error(`no complete response head in ${bytes.length} bytes: ${JSON.stringify(dec.decode(bytes.subarray(0, 200)))}`);
  const lines = dec.decode(bytes.subarray(0, end)).split("\r\n");
  const status = Number(lines[0]!.split(" ")[1]);
  const headers: Record<string, string> = {};
  const names: string[] = [];
  for (const line of lines.slice(1)) {
    const c = line.indexOf(":");
    names.push(line.slice(0, c));
    headers[line.slice(0, c).trim().toLowerCase()] = line.slice(c + 1).trim();
  }
  let body = bytes.subarray(end + 4);
  if (headers["transfer-encoding"]?.includes("chunked")) body = dechunk(body);
  else if (headers["content-length"] !== undefined) body = body.subarray(0, Number(headers["content-length"]));
  return { status, headers, names, body, text: () => dec.decode(body) };
}

/** Chunked transfer coding; a stream cut short keeps what arrived. */
function dechunk(bytes: Uint8Array): Uint8Array {
  const parts: Uint8Array[] = [];
  let at = 0;
  for (;;) {
    const eol = indexOf(bytes, CRLF, at);
    if (eol === -1) break;
    const size = parseInt(dec.decode(bytes.subarray(at, eol)), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(bytes.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  return concat(parts);
}

/**
 * Sends the head and the first `sendBytes` of the body of a request that announces all of it, waits
 * `waitMs`, then closes the socket: a client gone before its body was sent.
 */
export async function rawPartial(port: number, req: RawRequest, sendBytes: number, waitMs: number): Promise<void> {
  const body = req.body ?? new Uint8Array(0);
  const socket = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {}, error() {} } });
  let head = `${req.method} ${req.target} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n`;
  for (const [k, v] of req.headers) head += `${k}: ${v}\r\n`;
  head += `content-length: ${body.byteLength}\r\n\r\n`;
  socket.write(concat([latin1(head), body.subarray(0, Math.min(sendBytes, body.byteLength - 1))]));
  socket.flush();
  await Bun.sleep(waitMs);
  socket.end();
}

export interface UploadOutcome {
  /** The answer's head (status line and headers, latin1), or "" when none came. */
  head: string;
  /** Whether the server closed the connection before `waitMs` was out. */
  closed: boolean;
  /** Body bytes the socket took after the answer's head had arrived. */
  sentAfterAnswer: number;
  /** Body bytes the socket took in all. */
  sent: number;
}

/**
 * Uploads a body of `totalBytes` in 64 KiB pieces (chunked, or under a `content-length` of
 * `declared`, default `totalBytes`), as fast as the socket takes them, then leaves the connection
 * open until `waitMs` is out or the server closes it: a client that keeps sending after its answer,
 * or one that stalls.
 */
export async function rawUpload(
  port: number,
  req: Omit<RawRequest, "body">,
  opts: { totalBytes: number; chunked?: boolean; declared?: number; waitMs?: number },
): Promise<UploadOutcome> {
  let got = "";
  let head = "";
  let closed = false;
  let sent = 0;
  let sentAtAnswer = -1;
  const socket = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data(_s, d) {
        got += Buffer.from(d).toString("latin1");
        const end = got.indexOf("\r\n\r\n");
        if (!head && end !== -1) {
          head = got.slice(0, end);
          sentAtAnswer = sent;
        }
      },
      close() {
        closed = true;
      },
      error() {},
    },
  });
  let text = `${req.method} ${req.target} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n`;
  for (const [k, v] of req.headers) text += `${k}: ${v}\r\n`;
  text += opts.chunked ? "transfer-encoding: chunked\r\n\r\n" : `content-length: ${opts.declared ?? opts.totalBytes}\r\n\r\n`;
  socket.write(latin1(text));
  const piece = new Uint8Array(64 * 1024).fill(0x61);
  const framed = opts.chunked ? concat([latin1("10000\r\n"), piece, latin1("\r\n")]) : piece;
  const deadline = Date.now() + (opts.waitMs ?? 5_000);
  let pending = framed.subarray(0, 0);
  while (!closed && Date.now() < deadline) {
    if (pending.byteLength === 0) {
      if (sent >= opts.totalBytes) {
        await Bun.sleep(20);
        continue;
      }
      pending = framed;
    }
    const n = socket.write(pending);
    if (n > 0) {
      sent += n;
      pending = pending.subarray(n);
    }
    // A full socket buffer: the server is not reading; wait for it as a client's kernel would.
    if (n < framed.byteLength) await Bun.sleep(5);
  }
  socket.end();
  return { head, closed, sentAfterAnswer: sentAtAnswer < 0 ? 0 : sent - sentAtAnswer, sent };
}
