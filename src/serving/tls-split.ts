// The HTTPS port split by SNI (docs/design.md, "HTTP/2 and gRPC"), used while the table holds a
// route Bun.serve cannot serve (a gRPC backend: no response trailers; a client-certificate
// route: no certificate or SNI shown) on some hosts but not on every host. Two listeners run
// on 127.0.0.1: the node:http2 listener (http2/listener.ts) for the connections whose
// ClientHello names a host that needs it, and the Bun.serve TLS listener (tls/listener.ts) for
// every other one, both with the same certificate entries and the same proxy handler. A TCP
// front (front.ts) reads each ClientHello (tls/client-hello.ts) and pipes the connection,
// encrypted, to one of them: TLS still ends in the listener, which serves the certificate the
// SNI selects as before. A connection without SNI, or one whose ClientHello cannot be read,
// goes to node:http2, which serves every route correctly.
//
// With --enable-ssl-passthrough or --use-proxy-protocol a front already owns the port
// (passthrough.ts); it asks `innerPort` instead, and this split runs no front of its own.
//
// With --http3 an HTTP/3-only Bun.serve (tls/listener.ts `http1: false`) holds the public UDP
// port beside the front, with the same certificate entries and the Bun.serve side's handler:
// QUIC cannot pass a TCP front, and a QUIC listener has no TCP port to share. Its requests for
// a host that needs node:http2 are misdirected exactly as on the Bun.serve side; that side's
// answers for every other host advertise it (Alt-Svc, RFC 7838), as Bun.serve does when it owns
// both (docs/design.md, "HTTP/2 and gRPC").
//
// A request on the Bun.serve side for a host that needs node:http2 (a browser coalescing
// connections, RFC 9113 §9.1.1; a Host other than the SNI; a route added to the host after
// the connection opened) is answered 421 Misdirected Request (RFC 9110 §15.5.20): the client
// may retry on a new connection, which the front sends to node:http2 by its SNI.
import type { RouteTable } from "../table/types.ts";
import type { Logger } from "../log/logger.ts";
import type { RequestServer } from "../proxy/index.ts";
import { createH2Listener, type DrainableServer, type H2Handler, type HttpsListener } from "../http2/listener.ts";
import { hostNeedsNode, hostsMovedToNode } from "../table/listener-needs.ts";
import { MAX_BUFFERED_BYTES, parseClientHello } from "../tls/client-hello.ts";
import { createTlsListener, type RotationInfo, type ServeHandler, type TlsListener } from "../tls/listener.ts";
import type { TlsEntry } from "../tls/sni.ts";
import { frontServer, startTcpFront, throughFront, type FrontChoice, type TcpFront } from "./front.ts";
import { createRetiring } from "./retiring.ts";

interface SplitOptions {
  /** Where the front listens (the public HTTPS port); unused with an outer front. */
  readonly hostname: string;
  readonly port: number;
  /** The handler of a listener on the loopback port `listenerPort()` returns. */
  readonly handler: (listenerPort: () => number) => ServeHandler & H2Handler;
  readonly table: () => RouteTable;
  readonly log: Logger;
  readonly hooks: { onRotation?(info: RotationInfo): void; onAbuse?(reason: string): void };
  readonly http2: boolean;
  /** --http3: QUIC on the public port number, served by its own HTTP/3-only Bun.serve. */
  readonly http3: boolean;
  readonly headerTimeoutMs: number;
  readonly draining: () => boolean;
  readonly drainMs?: number;
  /** The split's own front (no front owns the port already), or null: an outer front asks innerPort(). */
  readonly front: { readonly helloTimeoutMs: number; readonly connectTimeoutMs: number } | null;
}

export interface SplitListener extends HttpsListener {
  /** The loopback port for a connection whose ClientHello named `serverName` (null: none, or unreadable). */
  innerPort(serverName: string | null): number;
  /**
   * A new table is live: when a host Bun.serve served needs node:http2 now, a new Bun.serve
   * takes the loopback port and the previous one drains (GOAWAY, Connection: close), so the
   * connections opened for that host reconnect through the front rather than get 421 for good.
   */
  refit(): void;
}

/**
 * Bun's Server as the Bun.serve side's handler sees it: the same calls, and `misdirected`,
 * which the route step asks before the lookup (proxy/pipeline/route.ts). One per Bun server.
 */
class BunSide implements RequestServer {
  // Every request on the Bun.serve side for a host that needs node:http2 is misdirected.
  readonly misdirected = hostNeedsNode;
  constructor(private readonly inner: RequestServer) {}
  requestIP(req: Request) {
    return this.inner.requestIP(req);
  }
  timeout(req: Request, seconds: number): void {
    this.inner.timeout(req, seconds);
  }
  upgrade(req: Request, options: Parameters<RequestServer["upgrade"]>[1]): boolean {
    return this.inner.upgrade(req, options);
  }
  get port() {
    return this.inner.port;
  }
}

/**
 * A front's choice for a connection by its ClientHello (tls/client-hello.ts): the loopback
 * listener `innerPort` names for its server name, or for none when it names none or cannot be
 * read (then node:http2's TLS stack answers it as the port always did). `byName` may choose
 * first for a name it knows (ssl-passthrough: an upstream), null leaving it to `innerPort`.
 */
export function chooseBySni(
  innerPort: (serverName: string | null) => number,
  byName?: (serverName: string) => FrontChoice | null,
): (first: Uint8Array) => FrontChoice {
  return (first) => {
    const r = parseClientHello(first);
    if (r.kind === "more") return r;
    const serverName = r.kind === "hello" ? r.serverName : null;
    return (serverName === null ? null : byName?.(serverName)) ?? { kind: "loopback", port: innerPort(serverName) };
  };
}

export function createSplitListener(o: SplitOptions): SplitListener {
  const { log } = o;
  let front: TcpFront | null = null;
  let frozen = false;

  // `handler` is asked once per server each listener starts (tls/listener.ts start,
  // http2/listener.ts), so one closure serves one server: on the Bun.serve side, its BunSide.
  function through(h: ServeHandler & H2Handler, listenerPort: () => number, bunSide: boolean): ServeHandler & H2Handler {
    const fetch = h.fetch as (req: Request, server: RequestServer) => ReturnType<typeof h.fetch>;
    let side: BunSide | null = null;
    const served = (req: Request, server: RequestServer) => throughFront(front, req, bunSide ? (side ??= new BunSide(server)) : server, listenerPort, fetch);
    return { ...h, fetch: served as typeof h.fetch };
  }

  // The HTTP/3-only listener's handler: the Bun.serve side's (a BunSide, so a host that needs
  // node:http2 is misdirected by the same route step), without a front: its clients reach it
  // directly, so Bun's own requestIP is theirs.
  function direct(h: ServeHandler & H2Handler): ServeHandler & H2Handler {
    const fetch = h.fetch as (req: Request, server: RequestServer) => ReturnType<typeof h.fetch>;
    let side: BunSide | null = null;
    return { ...h, fetch: ((req: Request, server: RequestServer) => fetch(req, (side ??= new BunSide(server)))) as typeof h.fetch };
  }

  // --http3 beside this split's own front (never behind an outer one: --http3 is refused with
  // --enable-ssl-passthrough and --use-proxy-protocol, QUIC carries neither). Started with the
  // front, on the port number the front bound (the same as o.port, unless that is 0).
  const h3 = o.http3 && o.front !== null;
  let quic: TlsListener | null = null;

  const makeBun = (port: number): TlsListener =>
    createTlsListener({
      hostname: "127.0.0.1", port, log, hooks: o.hooks.onRotation === undefined ? {} : { onRotation: o.hooks.onRotation }, http2: o.http2, http3: false,
      // Alt-Svc on this side's answers over TCP (RFC 7838 §3; the value Bun.serve writes when it
      // owns both ports) names the QUIC listener's public port: Bun.serve adds none itself here
      // (no http3), so the loopback port is never advertised. The 421 of a host that needs
      // node:http2 carries none (tls/listener.ts advertiseOn): it is never told to move to QUIC.
      ...(h3 ? { advertiseH3: () => quic?.port ?? null } : {}),
      ...(o.drainMs === undefined ? {} : { drainMs: o.drainMs }),
      handler: () => through(o.handler(() => bun.port), () => bun.port, true),
    });
  // Replaced (same loopback port, SO_REUSEPORT) when hosts move to node:http2: refit().
  let bun = makeBun(0);
  const retiring = createRetiring(log, "the previous Bun.serve side");
  let table = o.table();
  let last: { entries: readonly TlsEntry[]; fingerprint: string } | null = null;
  // One certificate change is one rotation of the port: both listeners rotate, but only the
  // Bun.serve side's is reported, in the log and by the hook (the `rotations` getter reads it
  // too), so it is one "TLS certificates rotated" line and portico_tls_rotations_total counts
  // it once (serve.ts). node:http2 still logs a rotation of its own that fails.
  const node = createH2Listener({
    hostname: "127.0.0.1", port: 0, log, logRotations: false, hooks: o.hooks.onAbuse === undefined ? {} : { onAbuse: o.hooks.onAbuse }, reusePort: true, draining: o.draining, headerTimeoutMs: o.headerTimeoutMs,
    handler: () => through(o.handler(() => node.port), () => node.port, false),
  });

  // Never drained: a replaced server of it is stopped with stop(true) in the turn the next one
  // joins the UDP port group, as every QUIC side (tls/listener.ts: its open connections would
  // otherwise be hashed to the next server, which does not know them, and stall; docs/design.md,
  // "Bun facts measured here"). Its rotations are neither logged nor counted: the Bun.serve
  // side's is the port's one.
  const makeQuic = (port: number): TlsListener => {
    const l: TlsListener = createTlsListener({
      hostname: o.hostname, port, log, logRotations: false, http3: true, http1: false,
      handler: () => direct(o.handler(() => l.port)),
    });
    return l;
  };

  function innerPort(serverName: string | null): number {
    // No server name (or no readable ClientHello): node:http2, which serves every route correctly.
    return serverName === null || hostNeedsNode(o.table(), serverName) ? node.port : bun.port;
  }

  function startFront(f: NonNullable<SplitOptions["front"]>): TcpFront {
    return startTcpFront({
      hostname: o.hostname, port: o.port, reusePort: true, log, name: "https split front",
      maxFirstBytes: MAX_BUFFERED_BYTES, firstBytesTimeoutMs: f.helloTimeoutMs, connectTimeoutMs: f.connectTimeoutMs,
      choose: chooseBySni(innerPort),
    });
  }

  function renewBun(): void {
    if (last === null) return;
    let next: TlsListener;
    try {
      next = makeBun(bun.port);
      next.update(last.entries, last.fingerprint);
    } catch (err) {
      log.error("cannot renew the Bun.serve side of the split HTTPS port; its connections for moved hosts get 421 until they reconnect", { err: String(err) });
      return;
    }
    const old = bun;
    bun = next;
    // Drained, never closed at once: it has served clients.
    retiring.retire(old, false);
    log.info("hosts moved to node:http2: the Bun.serve side of the split HTTPS port renewed");
  }

  return {
    innerPort,
    refit() {
      const next = o.table();
      if (frozen || next === table) return;
      const moved = hostsMovedToNode(table, next);
      table = next;
      if (moved) renewBun();
    },
    update(entries: readonly TlsEntry[], fingerprint: string, provisional?: boolean) {
      if (frozen) return;
      last = { entries, fingerprint };
      bun.update(entries, fingerprint, provisional);
      node.update(entries, fingerprint, provisional);
      // A later update rotates QUIC's certificates as the others'.
      if (front !== null || o.front === null) return void quic?.update(entries, fingerprint, provisional);
      // The first binds the public port number, each with SO_REUSEPORT beside the listener this
      // split takes over from: QUIC's UDP socket and the front's TCP one, once both listeners the
      // front pipes to listen. With the number known, QUIC binds first: a QUIC bind that fails
      // then throws before the front joins the TCP port group, so no connection the kernel has
      // queued on the front is reset by closing it (docs/design.md "Bun facts measured here"),
      // and a front that fails to bind stops only the fresh QUIC server, in the same turn. On
      // port 0 the front chooses the number; no client knows it yet. A bind that fails undoes
      // the others.
      try {
        if (h3 && o.port !== 0) {
          quic = makeQuic(o.port);
          quic.update(entries, fingerprint, provisional);
        }
        front = startFront(o.front);
        if (h3 && quic === null) {
          quic = makeQuic(front.port);
          quic.update(entries, fingerprint, provisional);
        }
      } catch (err) {
        front?.stop(true);
        front = null;
        void quic?.stop(true);
        quic = null;
        void bun.stop(true);
        void node.stop(true);
        throw err;
      }
    },
    get provisional() {
      return bun.provisional || node.provisional || (quic?.provisional ?? false);
    },
    async settled() {
      await Promise.all([bun.settled(), node.settled(), quic?.settled()]);
      await retiring.empty();
    },
    freeze() {
      frozen = true;
      bun.freeze();
      node.freeze();
      quic?.freeze();
    },
    async stop(closeActive = false) {
      frozen = true;
      // Stop accepting first; the pipes end as the listeners behind them close their connections.
      front?.stop(closeActive);
      // The QUIC listener is stopped at once (stop(true) inside, whatever closeActive says), so
      // the Bun.serve side's answers still going out over TCP while it drains stop advertising
      // it first (advertiseH3 reads `quic`): nothing serves that UDP port from now on.
      const q = quic;
      quic = null;
      await Promise.all([bun.stop(closeActive), node.stop(closeActive), q?.stop(closeActive), retiring.stopAll()]);
      front?.stop(true);
    },
    requestClientCertificates(on: boolean) {
      // Only node:http2 can show a request its client's certificate; the hosts that read one
      // are sent there (innerPort), so the Bun.serve side never asks.
      node.requestClientCertificates(on);
    },
    get requestsClientCertificates() {
      return node.requestsClientCertificates;
    },
    get servers() {
      return [...(front === null ? [] : [frontServer(front)]), ...bun.servers, ...retiring.servers, ...node.servers, ...(quic?.servers ?? [])];
    },
    get port() {
      // With an outer front, the loopback port a connection without SNI goes to (innerPort(null)).
      return front?.port ?? (o.front === null ? node.port : o.port);
    },
    get rotations() {
      return bun.rotations;
    },
    get alive() {
      return bun.alive + node.alive + retiring.alive + (quic?.alive ?? 0);
    },
    get fingerprint() {
      return bun.fingerprint;
    },
  };
}
