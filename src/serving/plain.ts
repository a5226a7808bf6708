// The plain HTTP port. Bun.serve serves it (HTTP/1.1, and h2c with prior knowledge unless
// --http2=false), except while the route table holds a gRPC route: Bun.serve cannot send
// response trailers, which every gRPC answer but a Trailers-Only one ends with (gRPC's
// PROTOCOL-HTTP2.md). For as long as one exists, a TCP front (front.ts) owns the port and reads
// each connection's first bytes: one that opens with the HTTP/2 connection preface (RFC 9113
// §3.4) goes to a node:http2 cleartext server on loopback (http2/cleartext.ts), every other to
// a Bun.serve on loopback; both run the same proxy handler and see the client's address through
// the front. node:http2's cleartext server alone would not do: it cannot serve HTTP/1.1 beside
// h2c (docs/design.md, "HTTP/2 and gRPC", has the measurements and the reasons).
//
// With --use-proxy-protocol the front owns the port from start to end, gRPC route or not: it
// reads each connection's PROXY header first (front.ts; docs/design.md "PROXY protocol"), then
// chooses as above; Bun.serve never binds the public port.
//
// A hand-over starts the next server(s) on the port with SO_REUSEPORT (serving/ports.ts probes
// the port first), then the previous ones stop accepting and drain: requests in flight finish,
// idle HTTP/1.1 connections are closed, h2c sessions get GOAWAY (RFC 9113 §6.8).
import type { Server } from "bun";
import { startH2cServer, type H2cServer } from "../http2/cleartext.ts";
import type { DrainableServer } from "../http2/listener.ts";
import type { Logger } from "../log/logger.ts";
import { type createProxyHandler, serveOptions, startHttpListener } from "../proxy/index.ts";
import { frontServer, startTcpFront, throughFront, type FrontChoice, type TcpFront } from "./front.ts";

type ProxyHandler = ReturnType<typeof createProxyHandler>;

export type PlainKind = "bun" | "front";

export interface PlainListenerOptions {
  readonly hostname: string;
  /** 0 lets the OS choose (tests); later binds reuse the port it chose. */
  readonly port: number;
  /** SO_REUSEPORT on the public port: needed for a hand-over (and by workers sharing the port). */
  readonly reusePort: boolean;
  /** h2c on the port at all (--http2); without it the front is never used. */
  readonly http2: boolean;
  readonly handler: ProxyHandler;
  readonly log: Logger;
  /** First bytes of a connection not in by then close it, while the front is up (--client-header-timeout). */
  readonly firstBytesTimeoutMs: number;
  /** Connecting to a loopback server from the front (--connect-timeout). */
  readonly connectTimeoutMs: number;
  readonly onAbuse?: (reason: string) => void;
  /** --use-proxy-protocol: the front always, reading a PROXY header within this many ms first. */
  readonly proxyProtocolTimeoutMs?: number;
  /** --proxy-protocol-trusted: the peers whose PROXY header's source is believed (front.ts). */
  readonly proxyProtocolTrusted?: readonly string[];
}

export interface PlainListener {
  /** Put the port behind the front while `on` (a gRPC route exists), on Bun.serve alone otherwise (no-op with the PROXY protocol: always the front). */
  useH2cFront(on: boolean): void;
  readonly kind: PlainKind;
  readonly port: number;
  /** Every server alive, the draining ones included (the shutdown drain stops them all). */
  readonly servers: readonly DrainableServer[];
  /** Resolves when no previous server is still draining. */
  settled(): Promise<void>;
  /** No more hand-overs (shutdown). */
  freeze(): void;
}

/** RFC 9113 §3.4: every HTTP/2 connection opens with these 24 octets. */
const PREFACE = new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/** h2c when the first bytes are the preface, Bun.serve as soon as one byte differs. */
export function choosePlain(first: Uint8Array, h2cPort: number, bunPort: number): FrontChoice {
  const n = Math.min(first.length, PREFACE.length);
  for (let i = 0; i < n; i++) if (first[i] !== PREFACE[i]) return { kind: "loopback", port: bunPort };
  return n < PREFACE.length ? { kind: "more", need: PREFACE.length } : { kind: "loopback", port: h2cPort };
}

interface FrontSet {
  readonly front: TcpFront;
  readonly inner: Server<unknown>;
  readonly h2c: H2cServer;
}

const POLL_MS = 50;

export function createPlainListener(o: PlainListenerOptions): PlainListener {
  const { log, handler } = o;
  let port = o.port;
  let frozen = false;
  let pub: Server<unknown> | null = null;
  let set: FrontSet | null = null;
  const retiring = new Set<DrainableServer>();

  function bindPublic(): Server<unknown> {
    const s = startHttpListener({ hostname: o.hostname, port, handler, reusePort: o.reusePort, http2: o.http2 }) as unknown as Server<unknown>;
    port = s.port ?? port;
    return s;
  }

  function startFront(): FrontSet {
    let front: TcpFront | null = null;
    // Bun.serve and the h2c server listen on loopback only; the handler sees the client the
    // front recorded for the connection, and the public port (port_in_redirect).
    const via = (listenerPort: () => number): ProxyHandler => ({
      ...handler,
      fetch: (req, server) => throughFront(front, req, server, listenerPort, handler.fetch),
    });
    let innerPort = 0;
    const inner = startHttpListener({ hostname: "127.0.0.1", port: 0, handler: via(() => innerPort), http2: false }) as unknown as Server<unknown>;
    innerPort = inner.port ?? 0;
    let h2c: H2cServer;
    try {
      h2c = startH2cServer({
        hostname: "127.0.0.1", handler: serveOptions(via(() => h2c.port)), log: log.child({ listener: "h2c" }),
        draining: () => handler.inflight.draining, ...(o.onAbuse ? { onAbuse: o.onAbuse } : {}),
      });
    } catch (err) {
      void inner.stop(true);
      throw err;
    }
    try {
      front = startTcpFront({
        hostname: o.hostname, port, reusePort: true, log, name: "plain front",
        maxFirstBytes: PREFACE.length, firstBytesTimeoutMs: o.firstBytesTimeoutMs, connectTimeoutMs: o.connectTimeoutMs,
        ...(o.proxyProtocolTimeoutMs === undefined ? {} : { proxyProtocolTimeoutMs: o.proxyProtocolTimeoutMs }),
        ...(o.proxyProtocolTrusted === undefined ? {} : { proxyProtocolTrusted: o.proxyProtocolTrusted }),
        // Without --http2 no h2c: every connection is Bun.serve's, which answers a preface as HTTP/1.1 does.
        choose: o.http2 ? (first) => choosePlain(first, h2c.port, innerPort) : () => ({ kind: "loopback", port: innerPort }),
      });
    } catch (err) {
      void inner.stop(true);
      void h2c.stop(true);
      throw err;
    }
    return { front, inner, h2c };
  }

  /** Stop accepting, let requests in flight finish, then close what is left. */
  function retire(parts: readonly DrainableServer[], idle: () => boolean): void {
    for (const p of parts) retiring.add(p);
    for (const p of parts) void p.stop(false);
    const tick = setInterval(() => {
      for (const p of parts) p.closeIdleConnections?.();
      if (!idle()) return;
      clearInterval(tick);
      for (const p of parts) {
        void p.stop(true).catch(() => {});
        retiring.delete(p);
      }
    }, POLL_MS);
    tick.unref?.();
  }

  const bunIdle = (s: Server<unknown>) => s.pendingRequests === 0 && s.pendingWebSockets === 0;

  const proxied = o.proxyProtocolTimeoutMs !== undefined;
  if (proxied) {
    set = startFront();
    port = set.front.port;
  } else pub = bindPublic();

  return {
    useH2cFront(on) {
      if (proxied || frozen || !o.http2 || on === (set !== null)) return;
      if (on) {
        const old = pub as Server<unknown>;
        try {
          set = startFront();
        } catch (err) {
          log.error("cannot put the plain HTTP port behind the h2c front; gRPC over h2c stays unavailable", { err: String(err) });
          return;
        }
        pub = null;
        log.info("plain HTTP port behind a front while a gRPC route exists: h2c to node:http2, the rest to Bun.serve", { port });
        retire([old], () => bunIdle(old));
        return;
      }
      const old = set as FrontSet;
      try {
        pub = bindPublic();
      } catch (err) {
        log.error("cannot hand the plain HTTP port back to Bun.serve; keeping the front", { err: String(err) });
        return;
      }
      set = null;
      log.info("plain HTTP port served by Bun.serve again", { port });
      retire([frontServer(old.front), old.inner, old.h2c], () => old.front.open === 0 || (bunIdle(old.inner) && old.h2c.pendingRequests === 0 && old.h2c.sessions === 0));
    },
    get kind() {
      return set === null ? "bun" : "front";
    },
    get port() {
      return port;
    },
    get servers() {
      const live: DrainableServer[] = set === null ? [pub as Server<unknown>] : [frontServer(set.front), set.inner, set.h2c];
      return [...live, ...retiring];
    },
    async settled() {
      while (retiring.size > 0) await new Promise((r) => setTimeout(r, POLL_MS));
    },
    freeze() {
      frozen = true;
    },
  };
}
