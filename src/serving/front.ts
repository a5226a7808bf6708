// A TCP front: a Bun.listen socket on a public port that reads a connection's first bytes,
// chooses where it goes, and copies bytes both ways from then on, those first bytes first.
// Two fronts use it: --enable-ssl-passthrough on the HTTPS port (passthrough.ts: by the
// ClientHello's SNI, to a pod or to the terminating listener) and, while a gRPC route exists,
// the plain port (plain.ts: by the HTTP/2 preface, to an h2c server or to Bun.serve).
//
// Bun.serve cannot read a PROXY protocol header, so a front instead records which client each
// connection to a loopback listener carries, by that listener's port and the connection's
// source port, and the listener's handler asks it (`peer`): the client address is kept for
// X-Forwarded-For (docs/design.md, "SSL passthrough").
//
// With --use-proxy-protocol (docs/design.md, "PROXY protocol") every connection must open with
// a PROXY protocol header (proxy-protocol.ts): the front reads it first, closes the connection
// when it is missing or broken (as nginx's `listen ... proxy_protocol` does), strips it, and
// records the client it names in place of the peer's address, with the port it was sent to.
import type { Socket, TCPSocketListener, TCPSocketListenOptions } from "bun";
import type { DrainableServer } from "../http2/listener.ts";
import type { Logger } from "../log/logger.ts";
import type { Balancer, RequestServer } from "../proxy/index.ts";
import type { Upstream } from "../table/types.ts";
import { accessListMatcher } from "../config/cidr.ts";
import { MAX_PROXY_HEADER, parseProxyHeader } from "./proxy-protocol.ts";

/** Where a connection goes, read from its first bytes (never more than `maxFirstBytes`). */
export type FrontChoice =
  | { readonly kind: "more"; readonly need: number }
  | { readonly kind: "loopback"; readonly port: number }
  | { readonly kind: "upstream"; readonly upstream: Upstream }
  | { readonly kind: "close" };

export interface FrontOptions {
  readonly hostname: string;
  readonly port: number;
  readonly reusePort: boolean;
  readonly log: Logger;
  /** Prefix for debug lines. */
  readonly name: string;
  /** The most first bytes a choice may ask for; undecided past them, the connection is closed. */
  readonly maxFirstBytes: number;
  /** Called with every first byte so far, whenever at least `need` (1 at first) have come. */
  readonly choose: (first: Uint8Array) => FrontChoice;
  /** Told whether a connection to an upstream (not a loopback listener) opened. */
  readonly balancer?: Balancer;
  /** First bytes not complete by then close the connection (--client-header-timeout). */
  readonly firstBytesTimeoutMs: number;
  /** Connecting to a pod or to a loopback listener (--connect-timeout). */
  readonly connectTimeoutMs: number;
  /**
   * Every connection opens with a PROXY protocol header, complete within this many ms
   * (--proxy-protocol-header-timeout); `firstBytesTimeoutMs` then runs for the bytes after it.
   */
  readonly proxyProtocolTimeoutMs?: number;
  /**
   * The peers whose PROXY header's source address is believed (--proxy-protocol-trusted, from
   * parseCidrList). nginx's realip module replaces $remote_addr with the header's address only
   * when the connection's own peer is in set_real_ip_from (ngx_http_realip_handler); any other
   * peer keeps its socket address. Absent: none is believed.
   */
  readonly proxyProtocolTrusted?: readonly string[];
}

/** Who a piped connection carries: the client's address, and the port a PROXY header says it was sent to. */
interface Carried {
  readonly address: string;
  /** The client's port as nginx's $remote_port gives it: the PROXY header's when its address is believed, else the socket's. */
  readonly port: number;
  readonly destPort: number | undefined;
  /** The PROXY header's source, believed or not (nginx's $proxy_protocol_addr, $proxy_protocol_port). */
  readonly proxySource: { readonly address: string; readonly port: number } | undefined;
}

export interface TcpFront {
  readonly port: number;
  /**
   * The handler's view of a request that came through the front to `listenerPort`: the client's
   * address, the public port (and a PROXY header's port). Null when the front holds no record of
   * the connection: the caller answers `unattributed()` (docs/design.md "SSL passthrough").
   */
  peer(server: RequestServer, req: Request, listenerPort: number): RequestServer | null;
  /** Connections piped now (for tests and the drain). */
  readonly open: number;
  /** Stop accepting; with `closeActive`, close every piped connection too. */
  stop(closeActive: boolean): void;
}

/** One side of a pipe: bytes it could not take yet, and whether to end it once they are out. */
interface Side {
  socket: Socket<Conn> | null;
  pending: Uint8Array[];
  endAfter: boolean;
}

interface Conn {
  state: "first" | "connecting" | "piping" | "closed";
  client: Side;
  upstream: Side;
  first: Uint8Array;
  firstLen: number;
  need: number;
  timer: ReturnType<typeof setTimeout> | null;
  address: string;
  /** The client's port ($remote_port): the socket's, or a believed PROXY header's. */
  port: number;
  /** The destination port of the PROXY header read, if it named one. */
  destPort: number | undefined;
  /** The PROXY header's source address and port, if it named them. */
  proxySource: { readonly address: string; readonly port: number } | undefined;
  /** A PROXY header is still to be read. */
  header: boolean;
  /** Set for a connection to a loopback listener: its key in `clients` (what `peer` reads). */
  loopKey: string;
  loopPort: number;
  upstreamAt: Upstream | null;
}

const key = (listenerPort: number, sourcePort: number) => `${listenerPort}:${sourcePort}`;

export function startTcpFront(o: FrontOptions): TcpFront {
  const { log } = o;
  const clients = new Map<string, Carried>();
  // nginx access-module matching (cidr.ts accessListMatcher): 0.0.0.0/0 covers the IPv4 peers
  // (a dual-stack socket's mapped ones too) and no IPv6 one, as set_real_ip_from 0.0.0.0/0.
  const ppTrusted = accessListMatcher(o.proxyProtocolTrusted ?? []);
  const pp = o.proxyProtocolTimeoutMs !== undefined;
  // While a PROXY header is read, it may come on top of the first bytes a choice reads.
  const cap = o.maxFirstBytes + (pp ? MAX_PROXY_HEADER : 0);
  const live = new Set<Conn>();
  const loopback = "127.0.0.1";

  function close(c: Conn): void {
    if (c.state === "closed") return;
    c.state = "closed";
    live.delete(c);
    if (c.timer !== null) clearTimeout(c.timer);
    c.timer = null;
    if (c.loopKey !== "") clients.delete(c.loopKey);
    c.client.socket?.end();
    c.upstream.socket?.end();
  }

  /** Writes what `to` can take now; keeps the rest, and pauses `from` until `to` drains. */
  function send(to: Side, from: Side, chunk: Uint8Array): void {
    const s = to.socket;
    if (s === null || to.pending.length > 0) {
      // Bun may reuse the buffer it handed to `data`: keep a copy.
      to.pending.push(chunk.slice());
      from.socket?.pause();
      return;
    }
    const n = s.write(chunk);
    if (n < chunk.length) {
      to.pending.push(chunk.slice(Math.max(n, 0)));
      from.socket?.pause();
    }
  }

  function flush(to: Side, from: Side): void {
    const s = to.socket;
    if (s === null) return;
    while (to.pending.length > 0) {
      const head = to.pending[0] as Uint8Array;
      const n = s.write(head);
      if (n < head.length) {
        to.pending[0] = head.subarray(Math.max(n, 0));
        return;
      }
      to.pending.shift();
    }
    if (to.endAfter) s.end();
    else from.socket?.resume();
  }

  /** One side ended: the other ends once the bytes for it are out (as io.Copy then Close in ingress-nginx's tcp.go). */
  function ended(c: Conn, gone: Side, other: Side): void {
    gone.socket = null;
    if (c.state === "closed") return;
    if (other.socket === null || other.pending.length === 0) return close(c);
    other.endAfter = true;
  }

  const upstreamHandlers = {
    open(s: Socket<Conn>) {
      const c = s.data;
      if (c.state !== "connecting") return void s.end();
      if (c.timer !== null) clearTimeout(c.timer);
      c.timer = null;
      c.upstream.socket = s;
      // Recorded before the first byte goes out: the listener's handler may need it at once.
      if (c.upstreamAt === null) {
        c.loopKey = key(c.loopPort, s.localPort);
        clients.set(c.loopKey, { address: c.address, port: c.port, destPort: c.destPort, proxySource: c.proxySource });
      } else {
        o.balancer?.succeeded(c.upstreamAt);
      }
      c.state = "piping";
      c.client.socket?.resume();
      flush(c.upstream, c.client);
    },
    data(s: Socket<Conn>, chunk: Uint8Array) {
      const c = s.data;
      if (c.state === "piping") send(c.client, c.upstream, chunk);
    },
    drain(s: Socket<Conn>) {
      flush(s.data.upstream, s.data.client);
    },
    end(s: Socket<Conn>) {
      ended(s.data, s.data.upstream, s.data.client);
    },
    close(s: Socket<Conn>) {
      ended(s.data, s.data.upstream, s.data.client);
    },
    connectError(s: Socket<Conn>) {
      const c = s.data;
      if (c.upstreamAt !== null) o.balancer?.failed(c.upstreamAt);
      log.debug(`${o.name}: connect failed`, { upstream: c.upstreamAt === null ? "loopback" : `${c.upstreamAt.address}:${c.upstreamAt.port}` });
      close(c);
    },
    error() {},
  };

  function connect(c: Conn, hostname: string, port: number): void {
    c.state = "connecting";
    c.client.socket?.pause();
    c.timer = setTimeout(() => close(c), o.connectTimeoutMs);
    Bun.connect<Conn>({ hostname, port, data: c, socket: upstreamHandlers }).catch(() => close(c));
  }

  /** Reads the PROXY header; once read, the bytes after it go to `choose` as the first bytes. */
  function header(c: Conn): void {
    const h = parseProxyHeader(c.first.subarray(0, c.firstLen));
    if (h.kind === "more") {
      c.need = h.need;
      return;
    }
    if (h.kind === "bad") {
      log.debug(`${o.name}: no valid PROXY protocol header; closing`, { client: c.address });
      return close(c);
    }
    c.header = false;
    if (h.addresses !== null) {
      // The destination port is $proxy_protocol_server_port, which ingress-nginx uses whoever
      // the peer is; the source address only from a trusted peer (see proxyProtocolTrusted).
      c.proxySource = { address: h.addresses.source, port: h.addresses.sourcePort };
      if (ppTrusted(c.address)) {
        c.address = h.addresses.source;
        c.port = h.addresses.sourcePort;
      } else log.debug(`${o.name}: PROXY header from an untrusted peer; its source address is not used`, { client: c.address });
      c.destPort = h.addresses.destPort;
    }
    c.first.copyWithin(0, h.length, c.firstLen);
    c.firstLen -= h.length;
    c.need = 1;
    if (c.timer !== null) clearTimeout(c.timer);
    c.timer = setTimeout(() => close(c), o.firstBytesTimeoutMs);
    if (c.firstLen >= c.need) decide(c);
  }

  function decide(c: Conn): void {
    const r = o.choose(c.first.subarray(0, c.firstLen));
    if (r.kind === "more") {
      if (r.need > o.maxFirstBytes) close(c);
      else c.need = r.need;
      return;
    }
    if (r.kind === "close") return close(c);
    if (c.timer !== null) clearTimeout(c.timer);
    c.timer = null;
    c.upstream.pending.push(c.first.slice(0, c.firstLen));
    c.first = EMPTY;
    if (r.kind === "loopback") {
      c.loopPort = r.port;
      return connect(c, loopback, r.port);
    }
    c.upstreamAt = r.upstream;
    connect(c, r.upstream.address, r.upstream.port);
  }

  // Bun.listen takes reusePort (workers share the port, docs/design.md "Workers"); bun-types
  // lists it only for Bun.connect.
  const opts: TCPSocketListenOptions<Conn> & { reusePort: boolean } = {
    hostname: o.hostname,
    port: o.port,
    reusePort: o.reusePort,
    socket: {
      open(s) {
        const c: Conn = {
          state: "first",
          client: { socket: s, pending: [], endAfter: false },
          upstream: { socket: null, pending: [], endAfter: false },
          first: new Uint8Array(Math.min(2048, cap)),
          firstLen: 0,
          need: 1,
          timer: null,
          address: s.remoteAddress,
          port: s.remotePort,
          destPort: undefined,
          proxySource: undefined,
          header: pp,
          loopKey: "",
          loopPort: 0,
          upstreamAt: null,
        };
        s.data = c;
        live.add(c);
        c.timer = setTimeout(() => close(c), o.proxyProtocolTimeoutMs ?? o.firstBytesTimeoutMs);
      },
      data(s, chunk) {
        const c = s.data;
        if (c.state === "piping" || c.state === "connecting") return send(c.upstream, c.client, chunk);
        if (c.state !== "first") return;
        if (c.firstLen + chunk.length > c.first.length) grow(c, c.firstLen + chunk.length);
        c.first.set(chunk, c.firstLen);
        c.firstLen += chunk.length;
        if (c.firstLen >= c.need) {
          if (c.header) header(c);
          else decide(c);
        }
        // Still undecided past the bound: a client cannot make the front hold more.
        if (c.state === "first" && c.firstLen > (c.header ? cap : o.maxFirstBytes)) close(c);
      },
      drain(s) {
        flush(s.data.client, s.data.upstream);
      },
      end(s) {
        const c = s.data;
        if (c.state === "first") return close(c);
        ended(c, c.client, c.upstream);
      },
      close(s) {
        const c = s.data;
        if (c === undefined) return;
        if (c.state === "first" || c.state === "connecting") return close(c);
        ended(c, c.client, c.upstream);
      },
      error() {},
    },
  };
  function grow(c: Conn, atLeast: number): void {
    // One read may be larger than the bound (a choice then reads it whole); growth never passes
    // the bound otherwise.
    const grown = new Uint8Array(Math.max(Math.min(cap, c.first.length * 2), atLeast));
    grown.set(c.first.subarray(0, c.firstLen));
    c.first = grown;
  }
  const listener: TCPSocketListener<Conn> = Bun.listen<Conn>(opts);
  const port = listener.port;

  return {
    port,
    peer(server, req, listenerPort) {
      const ip = server.requestIP(req) as { address: string; port?: number } | null;
      const client = ip?.port === undefined ? undefined : clients.get(key(listenerPort, ip.port));
      // No record: a connection the front did not make (another local process), or one whose
      // record went with the client's connection before the listener read the request. Its
      // socket address is the loopback, which an allow list may hold and no deny list would
      // name, and X-Forwarded-For would carry it: rather than judge it as anyone, it is
      // refused (access control fails closed).
      if (client === undefined) return null;
      // The stored record is the address itself (its address and port are what requestIP gives):
      // no object per request.
      return new FrontPeer(server, client, port, client.destPort, client.proxySource);
    },
    get open() {
      return live.size;
    },
    stop(closeActive) {
      listener.stop(false);
      if (closeActive) for (const c of [...live]) close(c);
    },
  };
}

const EMPTY = new Uint8Array(0);

/**
 * The answer to a request on a loopback listener behind a front whose client the front cannot
 * name (`peer` gave null): 400, as to any request Portico cannot place, before any route, limit
 * or upstream sees it. No Connection header: the same answer may go out on an HTTP/2 stream
 * (RFC 9113 §8.2.2), and every later request on the connection gets it too.
 */
export function unattributed(): Promise<Response> {
  return Promise.resolve(new Response("400 Bad Request\n", { status: 400, headers: { "content-type": "text/plain" } }));
}

/**
 * Serve `req` on a loopback listener behind `front` (null: no front yet, the server as it is)
 * with the client and port the front recorded for the connection (`peer`), or answer
 * `unattributed()` when it holds none. `listenerPort` names the listener's own port, the key
 * the front records its clients by; it is read only when a front is there.
 */
export function throughFront<R>(
  front: Pick<TcpFront, "peer"> | null,
  req: Request,
  server: RequestServer,
  listenerPort: () => number,
  fetch: (req: Request, server: RequestServer) => R,
): R | Promise<Response> {
  const p = front === null ? server : front.peer(server, req, listenerPort());
  return p === null ? unattributed() : fetch(req, p);
}

/** A front as the shutdown drain sees a server: stop accepting (closeActive: cut every pipe too). */
export function frontServer(f: Pick<TcpFront, "stop">): DrainableServer {
  return { pendingRequests: 0, stop: async (closeActive = false) => f.stop(closeActive) };
}
/** The request's server as the handler should see it: the front's client and port, the rest as received. */
class FrontPeer implements RequestServer {
  constructor(
    private readonly inner: RequestServer,
    private readonly ip: { readonly address: string; readonly port: number },
    readonly port: number,
    readonly proxyDestPort: number | undefined,
    readonly proxySource: { readonly address: string; readonly port: number } | undefined,
  ) {}
  requestIP() {
    return this.ip;
  }
  timeout(req: Request, seconds: number): void {
    this.inner.timeout(req, seconds);
  }
  upgrade(req: Request, options: Parameters<RequestServer["upgrade"]>[1]): boolean {
    return this.inner.upgrade(req, options);
  }
  tlsOf(req: Request) {
    return this.inner.tlsOf?.(req) ?? null;
  }
  get transport() {
    return this.inner.transport;
  }
  get misdirected() {
    return this.inner.misdirected;
  }
}
