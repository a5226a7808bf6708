// --enable-ssl-passthrough (docs/design.md, "SSL passthrough"). As in ingress-nginx
// (pkg/tcpproxy/tcp.go, internal/ingress/controller/nginx.go setupSSLProxy), a TCP front owns
// the HTTPS port: it reads the client's ClientHello (tls/client-hello.ts) and
// - for an SNI naming a passthrough host, connects to one of that host's `/` backend endpoints
//   and copies bytes both ways untouched, the ClientHello first: the pod terminates TLS;
// - for every other connection, connects to the terminating HTTPS listener (https.ts), which
//   then listens on a loopback port, and copies the same way. ingress-nginx hands these to nginx
//   with a PROXY protocol header; Bun.serve cannot read one, so the front instead records which
//   client each loopback connection carries, by the loopback connection's source port, and the
//   HTTPS handler asks it (`clientOf`), so the client address is kept for X-Forwarded-For.
// Off by default; when off none of this exists and the HTTPS listener binds the port itself.
import type { Socket, TCPSocketListener, TCPSocketListenOptions } from "bun";
import type { Logger } from "../log/logger.ts";
import type { Balancer, RequestServer } from "../proxy/index.ts";
import { lookup } from "../table/lookup.ts";
import type { Route, RouteTable, Upstream } from "../table/types.ts";
import { MAX_BUFFERED_BYTES, parseClientHello } from "../tls/client-hello.ts";

export interface PassthroughOptions {
  readonly hostname: string;
  readonly port: number;
  readonly reusePort: boolean;
  /** Where the terminating HTTPS listener listens on 127.0.0.1 (read per connection: a hand-over keeps it). */
  readonly internalPort: () => number;
  readonly table: () => RouteTable;
  readonly balancer: Balancer;
  readonly log: Logger;
  /** A ClientHello not complete by then closes the connection (--client-header-timeout). */
  readonly helloTimeoutMs: number;
  /** Connecting to a pod or to the loopback listener (--connect-timeout). */
  readonly connectTimeoutMs: number;
}

export interface PassthroughFront {
  readonly port: number;
  /** The client a loopback connection to the terminating listener carries, by its source port. */
  clientOf(sourcePort: number): string | undefined;
  /** The handler's view of a request that came through the front: the client's address, the public port. */
  peer(server: RequestServer, req: Request): RequestServer;
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
  state: "hello" | "connecting" | "piping" | "closed";
  client: Side;
  upstream: Side;
  hello: Uint8Array;
  helloLen: number;
  need: number;
  timer: ReturnType<typeof setTimeout> | null;
  address: string;
  /** Set for a connection to the loopback listener: its source port (the `clientOf` key). */
  loopPort: number;
  upstreamAt: Upstream | null;
}

/**
 * The passthrough route for a server name: the `/` route of an exact host whose Ingresses set
 * ssl-passthrough (compile marks such routes). ingress-nginx compares the SNI with each
 * passthrough server's name as written (tcp.go TCPProxy.Get), so a wildcard host never matches,
 * and passes the whole host to its `/` location's backend (controller.go getConfiguration).
 */
export function passthroughRoute(table: RouteTable, serverName: string): Route | null {
  let byHost = ROUTES.get(table);
  if (byHost === undefined) ROUTES.set(table, (byHost = new Map()));
  const known = byHost.get(serverName);
  if (known !== undefined) return known;
  const entry = table.exact.get(serverName);
  // Only names the table has are remembered: a client cannot grow the map with made-up names.
  if (entry === undefined) return null;
  let route: Route | null = null;
  if (entry.routes.some((r) => r.sslPassthrough === true)) {
    const m = lookup(table, serverName, "/");
    if (m !== null && m.via === "exact-host" && m.route.source === "rule" && m.route.path === "/") route = m.route;
  }
  byHost.set(serverName, route);
  return route;
}
const ROUTES = new WeakMap<RouteTable, Map<string, Route | null>>();

export function startPassthroughFront(o: PassthroughOptions): PassthroughFront {
  const { log } = o;
  const clients = new Map<number, string>();
  const live = new Set<Conn>();
  const loopback = "127.0.0.1";

  function close(c: Conn): void {
    if (c.state === "closed") return;
    c.state = "closed";
    live.delete(c);
    if (c.timer !== null) clearTimeout(c.timer);
    c.timer = null;
    if (c.loopPort !== 0) clients.delete(c.loopPort);
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

  /** One side ended: the other ends once the bytes for it are out (as io.Copy then Close in tcp.go). */
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
      // Recorded before the first byte goes out: the handshake, and so any request, needs it.
      if (c.upstreamAt === null) {
        c.loopPort = s.localPort;
        clients.set(c.loopPort, c.address);
      } else {
        o.balancer.succeeded(c.upstreamAt);
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
      if (c.upstreamAt !== null) o.balancer.failed(c.upstreamAt);
      log.debug("ssl-passthrough: connect failed", { upstream: c.upstreamAt === null ? "loopback" : `${c.upstreamAt.address}:${c.upstreamAt.port}` });
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

  function decide(c: Conn): void {
    const r = parseClientHello(c.hello.subarray(0, c.helloLen));
    if (r.kind === "more") {
      if (r.need > MAX_BUFFERED_BYTES) close(c);
      else c.need = r.need;
      return;
    }
    if (c.timer !== null) clearTimeout(c.timer);
    c.timer = null;
    c.upstream.pending.push(c.hello.slice(0, c.helloLen));
    c.hello = EMPTY;
    const route = r.kind === "hello" && r.serverName !== null ? passthroughRoute(o.table(), r.serverName) : null;
    if (route === null) return connect(c, loopback, o.internalPort());
    // ingress-nginx dials the Service's cluster IP and port (nginx.go generateTemplate); Portico
    // has no cluster network of its own here and picks an endpoint as for any request to it.
    const u = o.balancer.pick(route.backend);
    if (u === null) {
      log.debug("ssl-passthrough: no endpoint", { backend: route.backend.id });
      return close(c);
    }
    c.upstreamAt = u;
    connect(c, u.address, u.port);
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
          state: "hello",
          client: { socket: s, pending: [], endAfter: false },
          upstream: { socket: null, pending: [], endAfter: false },
          hello: new Uint8Array(2048),
          helloLen: 0,
          need: 1,
          timer: null,
          address: s.remoteAddress,
          loopPort: 0,
          upstreamAt: null,
        };
        s.data = c;
        live.add(c);
        c.timer = setTimeout(() => close(c), o.helloTimeoutMs);
      },
      data(s, chunk) {
        const c = s.data;
        if (c.state === "piping" || c.state === "connecting") return send(c.upstream, c.client, chunk);
        if (c.state !== "hello") return;
        if (c.helloLen + chunk.length > MAX_BUFFERED_BYTES) return close(c);
        if (c.helloLen + chunk.length > c.hello.length) {
          const grown = new Uint8Array(Math.min(MAX_BUFFERED_BYTES, Math.max(c.hello.length * 2, c.helloLen + chunk.length)));
          grown.set(c.hello.subarray(0, c.helloLen));
          c.hello = grown;
        }
        c.hello.set(chunk, c.helloLen);
        c.helloLen += chunk.length;
        if (c.helloLen >= c.need) decide(c);
      },
      drain(s) {
        flush(s.data.client, s.data.upstream);
      },
      end(s) {
        const c = s.data;
        if (c.state === "hello") return close(c);
        ended(c, c.client, c.upstream);
      },
      close(s) {
        const c = s.data;
        if (c === undefined) return;
        if (c.state === "hello" || c.state === "connecting") return close(c);
        ended(c, c.client, c.upstream);
      },
      error() {},
    },
  };
  const listener: TCPSocketListener<Conn> = Bun.listen<Conn>(opts);
  const port = listener.port;

  return {
    port,
    clientOf: (p) => clients.get(p),
    peer(server, req) {
      const ip = server.requestIP(req) as { address: string; port?: number } | null;
      const client = ip?.port === undefined ? undefined : clients.get(ip.port);
      return new FrontPeer(server, client === undefined ? ip : { address: client }, port);
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

/** The request's server as the handler should see it: the front's client and port, the rest as received. */
class FrontPeer implements RequestServer {
  constructor(
    private readonly inner: RequestServer,
    private readonly ip: { readonly address: string } | null,
    readonly port: number,
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
}
