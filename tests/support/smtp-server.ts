// A loopback SMTP server: enough of RFC 5321 for a mail client to deliver to it (EHLO/HELO, AUTH
// PLAIN/LOGIN, MAIL FROM, RCPT TO, DATA, RSET, NOOP, QUIT), keeping each message it accepts. No TLS:
// the gateway's `smtp://` URL without STARTTLS offered is plain SMTP, which is what a test needs.

export interface ReceivedMail {
  from: string;
  to: string[];
  /** The message as sent, headers and body, dot-stuffing undone. */
  data: string;
  /** The user an AUTH named, or null. */
  user: string | null;
  /** The body with quoted-printable soft line breaks and =XX escapes undone, for reading links. */
  text: string;
}

export interface SmtpServer {
  port: number;
  url(user?: string, pass?: string): string;
  mails: ReceivedMail[];
  /** Resolves with the next message (or the n-th, counting from 1), or rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  stop(): void;
}

interface Conn {
  buf: string;
  mode: "cmd" | "data" | "auth-user" | "auth-pass";
  from: string;
  to: string[];
  data: string[];
  user: string | null;
}

export function decodeQuotedPrintable(s: string): string {
  const bytes = s.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/gi, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  return Buffer.from(bytes, "latin1").toString("utf8");
}

export function startSmtpServer(opts: { password?: string } = {}): SmtpServer {
  const mails: ReceivedMail[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const accept = (c: Conn) => {
    const data = c.data.join("\r\n");
    mails.push({ from: c.from, to: c.to, data, user: c.user, text: decodeQuotedPrintable(data) });
    for (const w of waiters.splice(0)) if (mails.length >= w.count) w.resolve();
    else waiters.push(w);
  };
  const reply = (socket: { write(s: string): number }, line: string) => socket.write(`${line}\r\n`);
  const server = Bun.listen<Conn>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(socket) {
        socket.data = { buf: "", mode: "cmd", from: "", to: [], data: [], user: null };
        reply(socket, "220 loopback ESMTP");
      },
      data(socket, chunk) {
        const c = socket.data;
        c.buf += chunk.toString("latin1");
        let nl: number;
        while ((nl = c.buf.indexOf("\r\n")) >= 0) {
          const line = c.buf.slice(0, nl);
          c.buf = c.buf.slice(nl + 2);
          if (c.mode === "data") {
            if (line === ".") {
              c.mode = "cmd";
              accept(c);
              reply(socket, "250 OK queued");
            } else c.data.push(line.startsWith("..") ? line.slice(1) : line);
            continue;
          }
          if (c.mode === "auth-user") {
            c.user = Buffer.from(line, "base64").toString();
            c.mode = "auth-pass";
            reply(socket, `334 ${Buffer.from("Password:").toString("base64")}`);
            continue;
          }
          if (c.mode === "auth-pass") {
            c.mode = "cmd";
            const ok = opts.password === undefined || Buffer.from(line, "base64").toString() === opts.password;
            if (!ok) c.user = null;
            reply(socket, ok ? "235 Authentication successful" : "535 Authentication failed");
            continue;
          }
          const verb = line.slice(0, 4).toUpperCase();
          if (verb === "EHLO") {
            socket.write("250-loopback\r\n250-AUTH PLAIN LOGIN\r\n250 8BITMIME\r\n");
          } else if (verb === "HELO") reply(socket, "250 loopback");
          else if (verb === "AUTH") {
            const [, mech, initial] = line.split(" ");
            if (mech?.toUpperCase() === "PLAIN" && initial) {
              const [, user, pass] = Buffer.from(initial, "base64").toString().split("\0");
              const ok = opts.password === undefined || pass === opts.password;
              c.user = ok ? (user ?? null) : null;
              reply(socket, ok ? "235 Authentication successful" : "535 Authentication failed");
            } else if (mech?.toUpperCase() === "LOGIN") {
              c.mode = "auth-user";
              reply(socket, `334 ${Buffer.from("Username:").toString("base64")}`);
            } else reply(socket, "504 Unrecognized authentication type");
          } else if (verb === "MAIL") {
            c.from = /<([^>]*)>/.exec(line)?.[1] ?? "";
            c.to = [];
            c.data = [];
            reply(socket, "250 OK");
          } else if (verb === "RCPT") {
            c.to.push(/<([^>]*)>/.exec(line)?.[1] ?? "");
            reply(socket, "250 OK");
          } else if (verb === "DATA") {
            c.mode = "data";
            reply(socket, "354 End data with <CR><LF>.<CR><LF>");
          } else if (verb === "RSET" || verb === "NOOP") reply(socket, "250 OK");
          else if (verb === "QUIT") {
            reply(socket, "221 Bye");
            socket.end();
          } else reply(socket, "502 Command not implemented");
        }
      },
    },
  });
  return {
    port: server.port,
    url: (user = "gw", pass = "secret") => `smtp://${encodeURIComponent(user)}:${encodeURIComponent(pass)}@127.0.0.1:${server.port}`,
    mails,
    waitFor(count, timeoutMs = 10_000) {
      if (mails.length >= count) return Promise.resolve(mails.slice(0, count));
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${mails.length} of ${count} mail(s) arrived within ${timeoutMs} ms`)), timeoutMs);
        waiters.push({ count, resolve: () => (clearTimeout(timer), resolve(mails.slice(0, count))) });
      });
    },
    stop: () => server.stop(true),
  };
}
