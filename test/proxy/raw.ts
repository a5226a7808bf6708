// Raw-socket ends for tests where framing or paths matter: a backend that logs every byte it
// receives and parses just enough HTTP/1.1 to know when a request is complete (and when a
// connection stops being HTTP after a 101, RFC 9110 §15.2.2), and a client that writes bytes
// when told and records what comes back. Both on 127.0.0.1 only.
import { createHash } from "node:crypto";
import net from "node:net";
import tls from "node:tls";
import { eventually } from "../wait.ts";

export interface RawRequest {
  /** Request line and header fields, as received (latin1). */
  readonly head: string;
  /** Its first line: the request line as it came off the wire, never a parsed URL. */
  readonly line: string;
  /** The body as on the wire (chunk framing included for a chunked request). */
  readonly body: string;
  /** The connection it came on. */
  readonly socket: net.Socket;
  /** Bytes received after it once its connection was upgraded (WebSocket frames), appended as they arrive. */
  after: Buffer;
}

export interface RawBackendConn {
  /** Every byte received on this connection, latin1. */
  bytes: string;
  closed: boolean;
  /** Requests received whole (head and complete body). */
  readonly requests: RawRequest[];
  readonly socket: net.Socket;
  /** Set by a reply that switched protocols: later bytes are no longer parsed as requests. */
  upgraded: boolean;
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

function parseOne(buf: string): { head: string; body: string; used: number } | null {
  const headEnd = buf.indexOf("\r\n\r\n");
  if (headEnd < 0) return null;
  const head = buf.slice(0, headEnd);
  const start = headEnd + 4;
  const cl = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
    const end = chunkedEnd(buf, start);
    return end < 0 ? null : { head, body: buf.slice(start, end), used: end };
  }
  const n = cl ? Number(cl[1]) : 0;
  if (buf.length < start + n) return null;
  return { head, body: buf.slice(start, start + n), used: start + n };
}

export interface RawBackend {
  readonly port: number;
  readonly conns: RawBackendConn[];
  /** Every whole request, in arrival order across connections (a live array). */
  readonly hits: RawRequest[];
  /** Connections that received at least one byte (the proxy's connect probes send none). */
  used(): RawBackendConn[];
  /** Every whole request, in arrival order (a copy). */
  requests(): RawRequest[];
  /** Request lines received so far. */
  lines(): string[];
  /** Request heads received so far. */
  heads(): string[];
  stop(): Promise<void>;
}

/**
 * `reply` is called for each whole request with its connection; its answer (raw bytes) is
 * written back, or nothing for null. An answer with `Connection: close` is followed by the
 * end of the connection (RFC 9112 §9.6). A reply that sets `conn.upgraded` takes the
 * connection over: later bytes go to the request's `after`. `onHead`, when given, is called
 * with the raw head as soon as it is complete, with the socket, for backends that answer
 * before the body (or badly).
 */
export async function rawBackend(
  reply: (req: RawRequest, conn: RawBackendConn) => string | null = () => OK_REPLY,
  onHead?: (head: string, sock: net.Socket) => void,
): Promise<RawBackend> {
  const conns: RawBackendConn[] = [];
  const hits: RawRequest[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    const c: RawBackendConn = { bytes: "", closed: false, requests: [], socket: s, upgraded: false };
    conns.push(c);
    let buf = "";
    let headSeen = false;
    s.on("data", (d: Buffer) => {
      const t = d.toString("latin1");
      c.bytes += t;
      if (c.upgraded) {
        const last = c.requests.at(-1)!;
        last.after = Buffer.concat([last.after, d]);
        return;
      }
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
        const req: RawRequest = { head: r.head, line: r.head.split("\r\n")[0]!, body: r.body, socket: s, after: Buffer.alloc(0) };
        c.requests.push(req);
        hits.push(req);
        const out = reply(req, c);
        if (out !== null) {
          const bytes = Buffer.from(out, "latin1");
          const head = out.slice(0, out.indexOf("\r\n\r\n"));
          if (/\r\nconnection:\s*close\b/i.test(head)) s.end(bytes);
          else s.write(bytes);
        }
        if (c.upgraded) {
          req.after = Buffer.from(buf, "latin1");
          buf = "";
          break;
        }
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
    hits,
    used: () => conns.filter((c) => c.bytes !== ""),
    requests: () => [...hits],
    lines: () => hits.map((h) => h.line),
    heads: () => hits.map((h) => h.head),
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

export interface NamedBackendOptions {
  /** Wait this long before answering a WebSocket handshake. */
  readonly upgradeDelayMs?: number;
}

/**
 * A raw backend that answers 200 with its name and closes, or completes a WebSocket handshake
 * (RFC 6455 §4.2.2) and keeps the socket, logging every later byte in the request's `after`.
 */
export async function namedBackend(name: string, opts: NamedBackendOptions = {}): Promise<RawBackend & { readonly name: string }> {
  const b = await rawBackend((req, conn) => {
    const key = /^sec-websocket-key:\s*(\S+)/im.exec(req.head)?.[1];
    if (key !== undefined && /^upgrade:\s*websocket/im.test(req.head)) {
      conn.upgraded = true;
      const accept = createHash("sha1").update(key + WS_GUID).digest("base64");
      const answer = () =>
        conn.socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
      if (opts.upgradeDelayMs) setTimeout(answer, opts.upgradeDelayMs);
      else answer();
      return null;
    }
    return `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${name.length}\r\nConnection: close\r\n\r\n${name}`;
  });
  return { ...b, name };
}

/** Raw bytes of a WebSocket upgrade request for `target` (RFC 6455 §4.1). */
export function wsUpgrade(target: string, host = "a.test"): string {
  return (
    `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
  );
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

/** Status codes of the responses in a raw byte string, in order (test bodies never hold a status line). */
export function statuses(raw: string): number[] {
  return [...raw.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1]));
}

/** A listener to reach: `tls` as for rawClient. */
export interface RawTarget {
  readonly port: number;
  readonly tls?: boolean;
}

/** Write `bytes` at once on a fresh connection; resolve with what came back once it closes (5 s at most). */
export async function exchangeToClose(p: RawTarget, bytes: string): Promise<{ data: string; closed: boolean }> {
  const c = await rawClient(p.port, p);
  c.write(bytes);
  const closed = await eventually(c.closed, 5_000, "the peer closing").then(() => true, () => false);
  c.destroy();
  return { data: c.data(), closed };
}

/**
 * Send latin1 bytes (one char, one byte); resolve with the first whole response (head and
 * Content-Length body), or what came before the peer closed (5 s at most). A 101 is whole at
 * its head: the socket stays open after it, and so does a 400 to an upgrade request.
 */
export function firstResponse(p: RawTarget, bytes: string): Promise<string> {
  return new Promise((resolve) => {
    let got = "";
    const send = () => sock.write(Buffer.from(bytes, "latin1"));
    const sock = p.tls
      ? tls.connect({ host: "127.0.0.1", port: p.port, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"], servername: "a.test" }, send)
      : net.connect(p.port, "127.0.0.1", send);
    const done = () => {
      clearTimeout(t);
      sock.destroy();
      resolve(got);
    };
    const t = setTimeout(done, 5_000);
    sock.on("data", (d: Buffer) => {
      got += d.toString("latin1");
      const end = got.indexOf("\r\n\r\n");
      if (end < 0) return;
      const cl = /\r\ncontent-length: *(\d+)/i.exec(got.slice(0, end));
      if (got.startsWith("HTTP/1.1 101") || (cl !== null && got.length >= end + 4 + Number(cl[1]))) done();
    });
    sock.on("close", done);
    sock.on("error", () => {});
  });
}

/** A request or response head's fields by lower-cased name, every value kept in order (the start line skipped). */
export function headFields(head: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const line of head.split("\r\n").slice(1)) {
    const i = line.indexOf(":");
    if (i > 0) (out[line.slice(0, i).toLowerCase()] ??= []).push(line.slice(i + 1).trim());
  }
  return out;
}

/**
 * The data of a chunked body (RFC 9112 §7.1) as received so far, latin1, without extensions or
 * trailers: it stops at the last chunk, or where the bytes run out (a chunk still arriving is cut).
 */
export function chunkedData(wire: string): string {
  let out = "";
  for (let i = 0; ; ) {
    const eol = wire.indexOf("\r\n", i);
    if (eol < 0) return out;
    const size = Number.parseInt(wire.slice(i, eol), 16);
    if (!(size > 0)) return out;
    out += wire.slice(eol + 2, eol + 2 + size);
    i = eol + 2 + size + 2;
  }
}

/** The values of field `name` in a raw head, in order (names compared case-insensitively). */
export function fieldValues(head: string, name: string): string[] {
  return headFields(head)[name.toLowerCase()] ?? [];
}

/** Everything read from `s` (after writing `bytes`) until the server closes it; `closed` false if 20 s passed first. */
export function readUntilClose(s: net.Socket, bytes?: string): Promise<{ data: string; closed: boolean }> {
  return new Promise((resolve) => {
    const got: Buffer[] = [];
    const timer = setTimeout(() => (s.destroy(), resolve({ data: Buffer.concat(got).toString("latin1"), closed: false })), 20_000);
    s.on("data", (d: Buffer) => void got.push(d));
    s.on("error", () => {});
    s.on("close", () => (clearTimeout(timer), resolve({ data: Buffer.concat(got).toString("latin1"), closed: true })));
    if (bytes !== undefined) s.write(bytes);
  });
}
