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
import type { Config } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import { createH2Listener, type HttpsListener } from "../http2/listener.ts";
import type { serveOptions } from "../proxy/pipeline/listener.ts";
import { createTlsListener, type RotationInfo } from "../tls/listener.ts";
import type { TlsEntry } from "../tls/sni.ts";

export type ListenerKind = "bun" | "node";

export interface SwitchingHttpsListener extends HttpsListener {
  /** Serve on node:http2 while `on` (some route needs what Bun.serve lacks), on Bun.serve otherwise. */
  useNodeListener(on: boolean): void;
  readonly kind: ListenerKind;
}

export interface HttpsListenerOptions {
  readonly config: Pick<Config, "http2" | "http3" | "clientHeaderTimeoutMs">;
  readonly log: Logger;
  readonly hostname: string;
  readonly port: number;
  readonly handler: () => ReturnType<typeof serveOptions>;
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
  const retiring = new Set<HttpsListener>();

  function make(k: ListenerKind): HttpsListener {
    const common = { hostname: o.hostname, port, handler: o.handler, log, hooks };
    // Both bind with SO_REUSEPORT: a hand-over or a rotation starts the next server on the same
    // port while the previous one drains (serving/ports.ts probes the port first).
    const l: HttpsListener = k === "node"
      ? createH2Listener({ ...common, reusePort: true, draining: o.draining, headerTimeoutMs: o.config.clientHeaderTimeoutMs })
      : createTlsListener({ ...common, ...(o.drainMs === undefined ? {} : { drainMs: o.drainMs }), http2: o.config.http2, http3: o.config.http3 });
    l.requestClientCertificates(wantCerts);
    return l;
  }

  let live = make(kind);

  function retire(old: HttpsListener): void {
    retiring.add(old);
    // Read before freeze(): a stand-in (nothing ready let a client in) is closed now, not
    // drained, so it leaves the SO_REUSEPORT group before the next listener's
    // `provisional: false` lets /readyz say ready (docs/design.md, "Bun facts measured here").
    const standIn = old.provisional || standInThisTurn;
    old.freeze();
    void old
      .stop(standIn)
      .catch((err: unknown) => log.warn("stopping the previous HTTPS listener failed", { err: String(err) }))
      .finally(() => retiring.delete(old));
  }

  return {
    useNodeListener(on) {
      const want: ListenerKind = on ? "node" : "bun";
      if (want === kind || frozen) return;
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
      log.info(on ? "HTTPS served by node:http2 while a route needs response trailers or client certificates" : "HTTPS served by Bun.serve again", { listener: kind });
      retire(old);
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
      while (retiring.size > 0) await new Promise((r) => setTimeout(r, 10));
    },
    freeze() {
      frozen = true;
      live.freeze();
    },
    async stop(closeActive) {
      frozen = true;
      await Promise.all([live.stop(closeActive), ...[...retiring].map((l) => l.stop(true))]);
    },
    requestClientCertificates(on) {
      wantCerts = on;
      live.requestClientCertificates(on);
    },
    get requestsClientCertificates() {
      return live.requestsClientCertificates;
    },
    get servers() {
      return [...live.servers, ...[...retiring].flatMap((l) => l.servers)];
    },
    get port() {
      return live.port;
    },
    get rotations() {
      return live.rotations;
    },
    get alive() {
      return live.alive + [...retiring].reduce((n, l) => n + l.alive, 0);
    },
    get fingerprint() {
      return live.fingerprint;
    },
  };
}
