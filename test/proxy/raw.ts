// Raw-socket ends for framing tests: a backend that logs every byte it receives and parses
// just enough HTTP/1.1 to know when a request is complete, and a client that writes bytes
// when told and records what comes back. Both on 127.0.0.1 only.
import net from "node:net";
import tls from "node:tls";

export interface RawRequest {
  /** Request line and header fields, as received. */
  readonly head: string;
  /** The body as on the wire (chunk framing included for a chunked request). */
  readonly body: string;
}

export interface RawBackendConn {
  /** Every byte received on this connection, latin1. */
  bytes: string;
  closed: boolean;
  /** Requests received whole (head and complete body). */
  readonly requests: RawRequest[];
}

export const OK_REPLY = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok";

/** Index just past a complete chunked body starting at `at`, or -1 while incomplete or broken. */
function chunkedEnd(buf: string, at: number): number {
  let i = at;
  for (;;) {
    const eol = buf.indexOf("\r\n", i);
    if (eol < 0) return -1;
    const size = Number.parseInt(buf.slice(i, eol).split(";")[0]!, 16);
    if (!Number.isFinite(size)) return -1;
    if (size === 0) {
      // Trailer section: field lines up to an empty line.
      const end = buf.indexOf("\r\n", eol + 2);
      if (end < 0) return -1;
      if (end === eol + 2) return end + 2;
      const blank = buf.indexOf("\r\n\r\n", eol + 2);
      return blank < 0 ? -1 : blank + 4;
    }
    const next = eol + 2 + size + 2;
    if (buf.length < next) return -1;
    i = next;
  }
}

function parseOne(buf: string): { req: RawRequest; used: number } | null {
  const headEnd = buf.indexOf("\r\n\r\n");
  if (headEnd < 0) return null;
  const head = buf.slice(0, headEnd);
  const start = headEnd + 4;
  const cl = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
    const end = chunkedEnd(buf, start);
    return end < 0 ? null : { req: { head, body: buf.slice(start, end) }, used: end };
  }
  const n = cl ? Number(cl[1]) : 0;
  if (buf.length < start + n) return null;
  return { req: { head, body: buf.slice(start, start + n) }, used: start + n };
}

export interface RawBackend {
  readonly port: number;
  readonly conns: RawBackendConn[];
  /** Connections that received at least one byte (the proxy's connect probes send none). */
  used(): RawBackendConn[];
  /** Every whole request, in arrival order per connection. */
  requests(): RawRequest[];
  stop(): Promise<void>;
}

/**
 * `reply` is called for each whole request; its answer (raw bytes) is written back, or nothing
 * for null. `onHead`, when given, is called with the raw head as soon as it is complete, with
 * the socket, for backends that answer before the body (or badly).
 */
export async function rawBackend(
  reply: (req: RawRequest) => string | null = () => OK_REPLY,
  onHead?: (head: string, sock: net.Socket) => void,
): Promise<RawBackend> {
  const conns: RawBackendConn[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    const c: RawBackendConn = { bytes: "", closed: false, requests: [] };
    conns.push(c);
    let buf = "";
    let headSeen = false;
    s.on("data", (d: Buffer) => {
      const t = d.toString("latin1");
      c.bytes += t;
      buf += t;
      if (onHead && !headSeen && buf.includes("\r\n\r\n")) {
        headSeen = true;
        onHead(buf.slice(0, buf.indexOf("\r\n\r\n")), s);
      }
      for (;;) {
        const r = parseOne(buf);
        if (r === null) break;
        buf = buf.slice(r.used);
        headSeen = false;
        c.requests.push(r.req);
        const out = reply(r.req);
        if (out !== null) s.write(Buffer.from(out, "latin1"));
      }
    });
    s.on("close", () => {
      c.closed = true;
      sockets.delete(s);
    });
    s.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    conns,
    used: () => conns.filter((c) => c.bytes !== ""),
    requests: () => conns.flatMap((c) => c.requests),
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export interface RawClient {
  /** Everything received so far, latin1. */
  readonly data: () => string;
  readonly closed: () => boolean;
  write(bytes: string): void;
  /** Bytes written so far. */
  readonly written: () => number;
  destroy(): void;
}

/** `tls`: connect over TLS offering only http/1.1 (the HTTPS listener's HTTP/1.1 side). */
export function rawClient(port: number, o: { tls?: boolean } = {}): Promise<RawClient> {
  return new Promise((resolve, reject) => {
    let data = "";
    let closed = false;
    let written = 0;
    const sock = o.tls
      ? tls.connect({ host: "127.0.0.1", port, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"], servername: "a.test" })
      : net.connect(port, "127.0.0.1");
    sock.on("data", (d: Buffer) => {
      data += d.toString("latin1");
    });
    sock.on("close", () => {
      closed = true;
    });
    sock.on("error", () => {});
    sock.once(o.tls ? "secureConnect" : "connect", () =>
      resolve({
        data: () => data,
        closed: () => closed,
        write(bytes) {
          if (closed || sock.destroyed) return;
          written += bytes.length;
          sock.write(Buffer.from(bytes, "latin1"));
        },
        written: () => written,
        destroy: () => sock.destroy(),
      }),
    );
    sock.once("error", reject);
  });
}

/**
 * Poll `cond` every 10 ms until it holds or `ms` pass; returns whether it held. A bound on
 * waiting, not an assertion on speed: callers assert on the outcome.
 */
export async function until(cond: () => boolean, ms = 5_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) return false;
    await Bun.sleep(10);
  }
  return true;
}

/** Status codes of the responses in a raw byte string, in order (test bodies never hold a status line). */
export function statuses(raw: string): number[] {
  return [...raw.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1]));
}
