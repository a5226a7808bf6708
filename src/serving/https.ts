// The HTTPS port. Bun.serve serves it (tls/listener.ts: HTTP/1.1, and h2 by ALPN unless
// --http2=false, QUIC with --http3), except while the route table holds a route Bun.serve
// cannot serve correctly: a gRPC backend (Bun.serve sends no response trailers) or a route
// reading client certificates (Bun.serve shows a request neither the client's certificate nor
// the SNI). For as long as one exists, the port is handed to the node:http2 listener
// (http2/listener.ts), which is slower for every request (docs/design.md, "HTTP/2 and gRPC"
// has the measurements and the reasons). Both take the same proxy handler and the same
// certificate entries. A hand-over is a rotation: the next listener binds the same port with
// SO_REUSEPORT, then the previous one drains as on a certificate rotation (HTTP/1.1 answers
// carry Connection: close, then a graceful stop sends HTTP/2 clients GOAWAY, RFC 9113 §6.8).
//
// When only some hosts have such routes, the port is split by SNI instead (tls-split.ts): a
// front sends the connections for those hosts to node:http2 and every other to Bun.serve, so
// ordinary hosts keep Bun.serve's speed while a gRPC route exists elsewhere; with --http3 the
// split keeps QUIC on the port number for those hosts (its own HTTP/3-only Bun.serve). node:http2
// alone, without QUIC, is left for a table where every host needs it (a gRPC or client-certificate default backend,
// or a GRPCRoute without hostnames on an HTTPS listener without one: table/listener-needs.ts
// everyHostNeedsNode).
import type { Config } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import { createH2Listener, type HttpsListener } from "../http2/listener.ts";
import type { serveOptions } from "../proxy/pipeline/listener.ts";
import type { RouteTable } from "../table/types.ts";
import { createTlsListener, type RotationInfo } from "../tls/listener.ts";
import type { TlsEntry } from "../tls/sni.ts";
import { createRetiring } from "./retiring.ts";
import { createSplitListener, type SplitListener } from "./tls-split.ts";

/** Bun.serve alone; node:http2 alone; or split by SNI between the two (tls-split.ts). */
export type ListenerKind = "bun" | "node" | "split";

export interface SwitchingHttpsListener extends HttpsListener {
  /** Serve with this listener kind from now on ("split" needs the `split` option). */
  useListener(kind: ListenerKind): void;
  readonly kind: ListenerKind;
  /** With a front before this listener (passthrough.ts): the loopback port for a ClientHello naming `serverName`. */
  innerPort(serverName: string | null): number;
}

export interface HttpsListenerOptions {
  readonly config: Pick<Config, "http2" | "http3" | "clientHeaderTimeoutMs">;
  readonly log: Logger;
  readonly hostname: string;
  readonly port: number;
  /** The handler of a listener, which listens on `listenerPort()` (a front before it keys its clients by that port). */
  readonly handler: (listenerPort: () => number) => ReturnType<typeof serveOptions>;
  /**
   * The SNI split (tls-split.ts) is possible: the live table, and the split's own front's
   * timeouts, or null when a front already owns the port (passthrough.ts asks innerPort); then
   * every listener this makes binds a new loopback port (see `behindFront`).
   */
  readonly split?: {
    readonly table: () => RouteTable;
    readonly front: { readonly helloTimeoutMs: number; readonly connectTimeoutMs: number } | null;
  };
  /** A shutdown drain began: node:http2 connections get GOAWAY where HTTP/1.1 gets Connection: close. */
  readonly draining: () => boolean;
  readonly hooks?: { onRotation?(info: RotationInfo): void; onAbuse?(reason: string): void };
  /** How long an outgoing listener drains after a hand-over or a rotation (default 1 s). */
  readonly drainMs?: number;
}

export function createHttpsListener(o: HttpsListenerOptions): SwitchingHttpsListener {
  const { log } = o;
  const hooks = o.hooks ?? {};
  let kind: ListenerKind = "bun";
  let port = o.port;
  let wantCerts = false;
  let last: { entries: readonly TlsEntry[]; fingerprint: string } | null = null;
  let frozen = false;
  // The stand-in stopped being provisional in this very turn (its first real set equals the
  // stand-in's own, so no rotation ran): no /readyz answer can have let a client in yet, so a
  // hand-over in the same turn (runtime/local.ts applies the set, then fits the listener to the
  // table) still closes it rather than draining it.
  let standInThisTurn = false;
  const retiring = createRetiring(log, "the previous HTTPS listener");
  // A front owns the public port (passthrough.ts): each listener binds 127.0.0.1:0 rather than
  // the previous one's loopback port, which is released once that one drained and may be any
  // program's by the next hand-over. Nothing needs the port kept: the front asks innerPort per
  // connection, and keys its clients by each listener's own port (the `listenerPort` thunk).
  const behindFront = o.split?.front === null;

  function make(k: ListenerKind): HttpsListener {
    const bindPort = behindFront ? 0 : port;
    if (k === "split") {
      const sp = o.split;
      if (sp === undefined) throw new Error("no SNI split on this listener");
      const l = createSplitListener({
        hostname: o.hostname, port: bindPort, handler: o.handler, table: sp.table, log, hooks, http2: o.config.http2, http3: o.config.http3,
        headerTimeoutMs: o.config.clientHeaderTimeoutMs, draining: o.draining, front: sp.front, ...(o.drainMs === undefined ? {} : { drainMs: o.drainMs }),
      });
      l.requestClientCertificates(wantCerts);
      return l;
    }
    let l: HttpsListener | null = null;
    const handler = () => o.handler(() => l?.port ?? port);
    const common = { hostname: o.hostname, port: bindPort, handler, log, hooks };
    // Both bind with SO_REUSEPORT: a hand-over or a rotation starts the next server on the same
    // port while the previous one drains (serving/ports.ts probes the port first).
    l = k === "node"
      ? createH2Listener({ ...common, reusePort: true, draining: o.draining, headerTimeoutMs: o.config.clientHeaderTimeoutMs })
      : createTlsListener({ ...common, ...(o.drainMs === undefined ? {} : { drainMs: o.drainMs }), http2: o.config.http2, http3: o.config.http3 });
    l.requestClientCertificates(wantCerts);
    return l;
  }

  let live = make(kind);

  function retire(old: HttpsListener): void {
    // Read before retiring freezes it: a stand-in (nothing ready let a client in) is closed
    // now, not drained, so it leaves the SO_REUSEPORT group before the next listener's
    // `provisional: false` lets /readyz say ready (docs/design.md, "Bun facts measured here").
    retiring.retire(old, old.provisional || standInThisTurn);
  }

  function useListener(want: ListenerKind): void {
    if (frozen) return;
    if (want === kind) {
      // Still split, on a new table: hosts that moved to node:http2 move their connections.
      if (kind === "split") (live as SplitListener).refit();
      return;
    }
    if (last === null) {
      // Not listening yet: start with the right one.
      kind = want;
      live = make(kind);
      return;
    }
    let next: HttpsListener;
    try {
      next = make(want);
      next.update(last.entries, last.fingerprint);
    } catch (err) {
      log.error("cannot hand the HTTPS port to the other listener; keeping the current one", { err: String(err), from: kind, to: want });
      return;
    }
    const old = live;
    live = next;
    kind = want;
    log.info(
      want === "node" ? "HTTPS served by node:http2 while a route needs response trailers or client certificates"
        : want === "split" ? "HTTPS split by SNI: hosts with a route that needs response trailers or client certificates on node:http2, the rest on Bun.serve"
        : "HTTPS served by Bun.serve again",
      { listener: kind },
    );
    retire(old);
  }

  return {
    useListener,
    innerPort(serverName) {
      return kind === "split" ? (live as SplitListener).innerPort(serverName) : live.port;
    },
    get kind() {
      return kind;
    },
    update(entries, fingerprint, provisional) {
      if (frozen) return;
      last = { entries, fingerprint };
      const wasStandIn = live.provisional;
      live.update(entries, fingerprint, provisional);
      if (wasStandIn && !live.provisional && !standInThisTurn) {
        standInThisTurn = true;
        queueMicrotask(() => (standInThisTurn = false));
      }
      port = live.port;
    },
    get provisional() {
      return live.provisional;
    },
    async settled() {
      await live.settled();
      await retiring.empty();
    },
    freeze() {
      frozen = true;
      live.freeze();
    },
    async stop(closeActive) {
      frozen = true;
      await Promise.all([live.stop(closeActive), retiring.stopAll()]);
    },
    requestClientCertificates(on) {
      wantCerts = on;
      live.requestClientCertificates(on);
    },
    get requestsClientCertificates() {
      return live.requestsClientCertificates;
    },
    get servers() {
      return [...live.servers, ...retiring.servers];
    },
    get port() {
      return live.port;
    },
    get rotations() {
      return live.rotations;
    },
    get alive() {
      return live.alive + retiring.alive;
    },
    get fingerprint() {
      return live.fingerprint;
    },
  };
}
