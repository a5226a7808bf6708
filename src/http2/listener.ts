// The HTTPS listener with HTTP/2: one node:http2 secure server on the HTTPS port that speaks h2
// and, for clients that do not offer it, HTTP/1.1 (ALPN h2, http/1.1, RFC 7301). Both hand
// every request to the SAME proxy handler as Bun.serve does, through the adapters in
// request.ts and response.ts (docs/design.md, "HTTP/2 and gRPC").
//
// It answers to the same interface as the Bun.serve TLS listener (tls/listener.ts), so the
// runtime picks one or the other with --http2. Certificate rotation is a swap of the SNI table
// (sni.ts): node:tls asks for a context on every handshake, so unlike Bun.serve no second
// server and no drain are needed.
import http2, { type Http2SecureServer } from "node:http2";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { SecureContextOptions } from "node:tls";
import type { WebSocketHandler } from "bun";
import { errorResponse } from "../http/errors.ts";
import { isWebSocketUpgrade as isWebSocketHandshake } from "../http/upgrade.ts";
import type { Logger } from "../log/logger.ts";
import type { ConnectionTls } from "../kinds/types.ts";
import type { RequestServer } from "../proxy/types.ts";
import { connectionTls } from "./tls-peer.ts";
import type { RotationInfo, TlsListener } from "../tls/listener.ts";
import type { TlsEntry } from "../tls/sni.ts";
import { SERVER_H2_OPTIONS } from "./limits.ts";
import { rawLengthBody, requestFromH1 } from "./request.ts";
import { resetSocket, sendH1, sendRaw } from "./response.ts";
import { createH2Streams, noop, Peer, type H2Handler } from "./streams.ts";
import { createSniTable, type SniTable } from "./sni.ts";
import { createWsBridge, type WsBridge } from "./websocket.ts";

export type { H2Handler } from "./streams.ts";

/** The part of a listening server the shutdown drain uses (proxy/pipeline/drain.ts). */
export interface DrainableServer {
  stop(closeActive?: boolean): Promise<void>;
  readonly pendingRequests: number;
  /** Bun's Server has it (proxy/pipeline/drain.ts calls it while draining); the node:http2 listener needs none. */
  closeIdleConnections?(): number;
}

/** The Bun.serve TLS listener's interface, minus its Bun Server objects. */
export type HttpsListener = Omit<TlsListener, "server" | "servers"> & { readonly servers: readonly DrainableServer[] };

export interface H2ListenerOptions {
  readonly hostname: string;
  /** 0 lets the OS choose. */
  readonly port: number;
  readonly handler: () => H2Handler;
  readonly log: Logger;
  /** SO_REUSEPORT, for worker processes sharing the port (default true, as the Bun.serve TLS listener). */
  readonly reusePort?: boolean;
  /** An idle connection (no open stream or request) is closed after this long. */
  readonly idleTimeoutMs?: number;
  /** True once a shutdown drain began (proxy/pipeline/drain.ts): HTTP/2 connections then get GOAWAY. */
  readonly draining?: () => boolean;
  /**
   * HTTP/1.1 side: the longest a request's header block may take, counted from the TLS
   * connection's start or from the first byte of a later keep-alive request (nginx
   * client_header_timeout). Default 60 s. See HeaderDeadlines.
   */
  readonly headerTimeoutMs?: number;
  /** Client cancellations per second per connection before GOAWAY (limits.ts). */
  readonly maxResetsPerSecond?: number;
  /**
   * Log each certificate rotation (default true). Off where another listener reports the same
   * change: the SNI split's Bun.serve side (serving/tls-split.ts), so one change is one line. A
   * failed rotation is logged either way: it leaves this listener on the previous certificates.
   */
  readonly logRotations?: boolean;
  readonly hooks?: {
    onRotation?(info: RotationInfo): void;
    /** A connection closed for abuse ("rapid-reset"). */
    onAbuse?(reason: string): void;
  };
}

/**
 * Requests one HTTP/1.1 connection may have waiting behind the one being served (pipelined)
 * before it is closed. Clients that pipeline (benchmarks, some CLI tools) keep a handful in
 * flight; a head is at most the header limit, so this bounds what one connection holds.
 */
const MAX_PIPELINED = 32;

/** Whether an HTTP/1.1 request's framing fields announce a body (RFC 9112 §6.3). */
function carriesBody(req: IncomingMessage): boolean {
  const cl = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (cl !== undefined && cl !== "0");
}

/** Whether an answer is marked to end its HTTP/1.1 connection (RFC 9112 §9.6). */
function closesConnection(res: Response): boolean {
  const c = res.headers.get("connection");
  return c !== null && /(?:^|,)\s*close\s*(?:,|$)/i.test(c);
}

/** Per HTTP/1.1 connection. */
interface H1State {
  /** Requests whose response has not closed yet (the idle timer and the drain read it). */
  busy: number;
  /**
   * Requests received whose answer is not written yet (being served or waiting). It drops when
   * the answer's last byte is handed to the socket, before the client can have read it, so a
   * keep-alive client's next request never counts as pipelined.
   */
  waiting: number;
  /** The last request in line: the next one starts when it is done. */
  tail: Promise<void> | null;
  /**
   * An answer marked `Connection: close` went out: the requests still in line are never run.
   * node's parser has already emitted them, but the refused request's framing is exactly what
   * Portico does not vouch for (docs/design.md, "Request framing and bodies": a rejected
   * request ends its connection), so whatever its parser read after it may be smuggled.
   */
  ended: boolean;
}
/** An HTTP/1.1 WebSocket handshake: upgrade() completes it on the raw socket. */
class UpgradePeer implements RequestServer {
  readonly transport = "h1" as const;
  constructor(
    private readonly ip: { address: string },
    private readonly bridge: WsBridge | null,
    private readonly req: IncomingMessage,
    private readonly socket: Duplex,
    private readonly head: Buffer,
  ) {}
  requestIP() {
    return this.ip;
  }
  tlsOf(): ConnectionTls | null {
    return connectionTls(this.socket);
  }
  timeout() {}
  upgrade(_req: Request, o: { data?: unknown; headers?: ConstructorParameters<typeof Headers>[0] }): boolean {
    if (this.bridge === null) return false;
    return this.bridge.upgrade(this.req, this.socket, this.head, o.data, new Headers(o.headers));
  }
}

/**
 * Header deadlines for the HTTP/1.1 side (nginx client_header_timeout: one deadline for the
 * whole header block, not a gap between reads). Bun's node:http honours neither
 * `headersTimeout` nor `requestTimeout` on this path, and the socket's idle timer is pushed
 * back by every byte, so a client trickling one header byte a minute would hold its connection
 * forever (measured: docs/design.md, "Bun facts measured here"). A connection is "in a head"
 * from the TLS handshake's end until node emits its request ('request' or 'upgrade': the
 * head is complete), and again from the first byte read after a response until the next
 * request. Deadlines are timestamps swept by one ticker, so a busy connection costs no timer
 * per request.
 */
class HeaderDeadlines {
  private readonly heads = new Map<Duplex, number>();
  private readonly quiet = new WeakSet<Duplex>();
  private ticker: ReturnType<typeof setInterval> | null = null;
  constructor(private readonly ms: number) {}

  /** The head of a request is due from now (if not already counting). */
  arm(socket: Duplex): void {
    if (this.quiet.has(socket) || this.heads.has(socket)) return;
    this.heads.set(socket, performance.now());
    // A quarter of the deadline, at most a second: a trickler is cut within 1.25× the bound.
    this.ticker ??= setInterval(() => this.sweep(), Math.min(1000, Math.max(25, this.ms / 4)));
    this.ticker.unref?.();
  }

  /** The head arrived (or the connection left HTTP/1.1 for a WebSocket, which has no heads). */
  done(socket: Duplex, forever = false): void {
    this.heads.delete(socket);
    if (forever) this.quiet.add(socket);
  }

  private sweep(): void {
    const now = performance.now();
    for (const [socket, since] of this.heads) {
      if (now - since < this.ms) continue;
      this.heads.delete(socket);
      // nginx closes without an answer on client_header_timeout (408 is only logged), and with
      // ingress-nginx's reset_timedout_connection on the close is a reset (ngx_http_free_request:
      // SO_LINGER 0 on a timed-out connection; test/proxy/client-timeouts-nginx.test.ts).
      resetSocket(socket);
    }
    if (this.heads.size === 0 && this.ticker !== null) {
      clearInterval(this.ticker);
      this.ticker = null;
    }
  }

  stop(): void {
    if (this.ticker !== null) clearInterval(this.ticker);
    this.ticker = null;
    this.heads.clear();
  }
}

export function createH2Listener(opts: H2ListenerOptions): HttpsListener {
  const { log } = opts;
  const idleMs = opts.idleTimeoutMs ?? 75_000;
  const resets = opts.maxResetsPerSecond;
  let handler: H2Handler | null = null;
  let bridge: WsBridge | null = null;
  let sni: SniTable | null = null;
  let server: Http2SecureServer | null = null;
  let port = opts.port;
  let fingerprint: string | null = null;
  let rotations = 0;
  let provisional = false;
  let frozen = false;
  let stopping = false;
  /** Whether handshakes ask for a client certificate (requestClientCertificates). */
  let wantCerts = false;
  const pending = { n: 0 };
  const peers = new WeakMap<object, Peer>();
  const { sessions, onSession, onStream } = createH2Streams({
    log, handler: () => handler, idleMs, resets, scheme: "https", pending,
    stopping: () => stopping, ...(opts.draining ? { draining: opts.draining } : {}),
    onAbuse: (reason) => opts.hooks?.onAbuse?.(reason),
  });
  const h1Sockets = new Map<Duplex, H1State>();
  // nginx's client_header_timeout: the HTTP/1.1 header deadline and the TLS handshake's.
  const headerTimeoutMs = opts.headerTimeoutMs ?? 60_000;
  const heads = new HeaderDeadlines(headerTimeoutMs);

  function onSecureConnection(socket: import("node:tls").TLSSocket): void {
    // Gateway API AllowValidOnly (apis/v1 gateway_types.go FrontendValidationModeType): "a
    // client certificate is required during the TLS handshake and MUST pass validation". The
    // handshake is complete here (TLS 1.3 sends the client's certificate after the server's
    // Finished), so a connection that fails is closed before it carries a request; the request's
    // own check (kinds/client-cert.ts) stays behind it. A check that throws closes it too.
    const h = handler;
    if (h?.refusesClient !== undefined) {
      let refuse: boolean;
      try {
        refuse = h.refusesClient(typeof socket.servername === "string" && socket.servername !== "" ? socket.servername : null, () => connectionTls(socket)?.chain ?? []);
      } catch (err) {
        log.error("client certificate check failed; closing the connection", { err: String(err) });
        refuse = true;
      }
      if (refuse) {
        socket.destroy();
        return;
      }
    }
    if (socket.alpnProtocol === "h2") return; // HTTP/2 framing: node:http2 reads it natively
    heads.arm(socket);
    // Bun's node:http parser reads this socket through 'data' listeners, so a second one sees
    // the same chunks without taking them (measured). A byte read while no request is in
    // progress starts the next head. Bytes read during a request are its body or a pipelined
    // head: the body has --client-body-timeout, and a pipelined head that stops short leaves
    // the connection silent, so the idle timeout (trackH1) ends it; any byte more arms this.
    socket.on("data", () => {
      if ((h1Sockets.get(socket)?.busy ?? 0) === 0) heads.arm(socket);
    });
    socket.once("close", () => heads.done(socket));
  }

  function h1Peer(socket: Duplex): Peer {
    let p = peers.get(socket);
    if (p === undefined) {
      p = new Peer((socket as { remoteAddress?: string }).remoteAddress ?? "", "h1", undefined, socket);
      peers.set(socket, p);
    }
    return p;
  }

  function trackH1(socket: Duplex): H1State {
    let s = h1Sockets.get(socket);
    if (s === undefined) {
      const state: H1State = { busy: 0, waiting: 0, tail: null, ended: false };
      s = state;
      h1Sockets.set(socket, state);
      socket.on("error", noop);
      socket.once("close", () => h1Sockets.delete(socket));
      // Keep-alive idling, as Bun.serve's idleTimeout: only between requests.
      (socket as Duplex & { setTimeout(ms: number, f: () => void): void }).setTimeout(idleMs, () => {
        if (state.busy === 0) socket.destroy();
      });
    }
    return s;
  }

  /**
   * Pipelining (RFC 9112 §9.3.2): node's parser emits every request of a read at once, and
   * node writes their answers in order. Served as they come, each would reach an upstream
   * while the ones before it are pending, so one connection could hold any number of upstream
   * requests (measured: 300 GETs in one write were all sent upstream at once). nginx reads
   * the next request of a connection only once the current one is answered; here each request
   * of a connection waits for the answer before it, so a connection has one request upstream
   * at a time, and past MAX_PIPELINED waiting, or when a request with a body waits, the
   * connection ends (those waiting were sent nowhere).
   */
  function onRequest(req: IncomingMessage, res: ServerResponse): void {
    if (req instanceof http2.Http2ServerRequest) return; // HTTP/2 streams are served by onStream
    const socket = req.socket;
    // An HTTP/1.1 connection whose request line names HTTP/2.0: node's parser takes it, and it
    // was left unanswered until the idle timeout. nginx answers 505 to a major version above 1
    // (ngx_http_parse_request_line), as Bun.serve does; HTTP/2 is only ever negotiated by ALPN
    // or the preface (RFC 9113 §3).
    if (req.httpVersionMajor !== 1) {
      socket.on("error", noop);
      socket.end("HTTP/1.1 505 HTTP Version Not Supported\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
      return;
    }
    const track = trackH1(socket);
    track.busy++;
    pending.n++;
    heads.done(socket);
    const ac = new AbortController();
    let done = false;
    res.once("close", () => {
      track.busy--;
      pending.n--;
      if (!done) ac.abort();
    });
    // A request with a body behind another ends the connection too: while it waited, Bun's
    // node:http would read its body into memory with no bound (measured: a 256 MB body
    // pipelined behind a pending GET was held whole). RFC 9112 §9.3.2: clients should not
    // pipeline such requests anyway.
    if (track.waiting > MAX_PIPELINED || (track.waiting > 0 && carriesBody(req))) {
      resetSocket(socket);
      return;
    }
    track.waiting++;
    const run = () => serveH1(req, res, ac.signal, track).finally(() => {
      done = true;
      track.waiting--;
    });
    const next = track.tail === null ? run() : track.tail.then(run);
    track.tail = next;
    void next.finally(() => {
      if (track.tail === next) track.tail = null;
    });
  }

  /**
   * node's parser refused the bytes of an HTTP/1.1 connection. Its default answers at once and
   * destroys the socket, which for bytes sent after a request marked `Connection: close` (or an
   * HTTP/1.0 one without keep-alive) threw away that request's answer: the request went
   * upstream and its client read a 400. RFC 9112 §9.6: the server answers the request with
   * `close` and processes nothing after it, as nginx does; node closes the socket once that
   * answer is written. Everything else gets node's own answers (431 for a head over the limit,
   * 413 for chunk extensions over theirs, else 400), each ending the connection.
   *
   * A TLS connection's handshake errors come here too (Http2SecureServer passes tlsClientError
   * on as clientError and destroys the socket only when nothing listens): the handshake timeout,
   * a ClientHello the TLS stack refused. No HTTP answer can go out on a socket whose handshake
   * did not finish (an end() with one waits on it for good: measured on Bun 1.4.5, a stalled
   * handshake was held open past 150 s), so only the parser's errors (HPE_*) are answered and
   * every other error closes the socket, as nginx closes a connection whose handshake failed or
   * timed out (ngx_http_ssl_handshake).
   */
  function onClientError(err: Error & { code?: string }, socket: Duplex): void {
    socket.on("error", noop);
    if (typeof err.code !== "string" || !err.code.startsWith("HPE_")) {
      socket.destroy();
      return;
    }
    if (err.code === "HPE_CLOSED_CONNECTION" && (h1Sockets.get(socket)?.busy ?? 0) > 0) return;
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const status = err.code === "HPE_HEADER_OVERFLOW" ? "431 Request Header Fields Too Large"
      : err.code === "HPE_CHUNK_EXTENSIONS_OVERFLOW" ? "413 Payload Too Large" : "400 Bad Request";
    socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
  }

  /** Serve one HTTP/1.1 request; resolves once its answer is written (or the client left). */
  async function serveH1(req: IncomingMessage, res: ServerResponse, signal: AbortSignal, track: H1State): Promise<void> {
    // The client left while this request waited behind another, or the answer before it
    // ended the connection: it goes nowhere.
    // node ends the socket itself once that answer is written (no reset here, which would
    // drop its unsent bytes).
    if (signal.aborted || res.destroyed || track.ended) return;
    const h = handler;
    if (stopping) res.setHeader("connection", "close");
    const r = requestFromH1(req, true, signal);
    if (h === null || typeof r === "string") {
      track.ended = true;
      res.setHeader("connection", "close");
      await sendH1(res, errorResponse("BadRequest"), false).catch(noop);
      return;
    }
    try {
      const out = (await h.fetch(r, h1Peer(req.socket))) ?? errorResponse("BadRequest");
      if (closesConnection(out)) track.ended = true;
      await sendH1(res, out, r.method === "HEAD");
    } catch (e) {
      log.error("http2 listener: HTTP/1.1 request failed outside the handler", { err: String((e as Error)?.stack ?? e) });
      track.ended = true;
      if (!res.headersSent) await sendH1(res, errorResponse("Internal"), false).catch(noop);
      else res.destroy();
    }
  }

  /**
   * node:http hands over the raw socket for every request with `Connection: upgrade`. Only a
   * WebSocket handshake (RFC 6455 §4.1: a GET with `Upgrade: websocket`) may become a tunnel,
   * as on Bun.serve, where the handler upgrades nothing else (proxy/upstream/websocket.ts). Any other
   * Upgrade is ignored, as RFC 9110 §7.8 lets a server do: the request is served as an
   * ordinary one, the same as on the plain port (the handler drops Upgrade and Connection as
   * hop-by-hop), and its answer is streamed on the socket with backpressure, after which the
   * connection closes (sendRaw). The request's signal fires when the client goes before its
   * answer is written, so the upstream request is aborted as for any other request.
   */
  function onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on("error", noop);
    heads.done(socket, true);
    const h = handler;
    const ac = new AbortController();
    let done = false;
    socket.once("close", () => {
      if (!done) ac.abort();
    });
    // The body of an ordinary request (never a WebSocket handshake's: a GET has none).
    const r = requestFromH1(req, true, ac.signal, (fields) => rawLengthBody(socket, head, fields));
    if (h === null || typeof r === "string") {
      done = true;
      socket.end("HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
      return;
    }
    const ws = isWebSocketHandshake(r);
    // A client that stops reading stalls the writes: once nothing was read or written for the
    // idle timeout the connection ends (as nginx's send_timeout). A WebSocket relay has its own.
    if (!ws) (socket as Duplex & { setTimeout(ms: number, f: () => void): void }).setTimeout(idleMs, () => socket.destroy());
    const peer = ws ? new UpgradePeer(h1Peer(socket).requestIP(), bridge, req, socket, head) : h1Peer(socket);
    pending.n++;
    void (async () => {
      try {
        const out = await h.fetch(r, peer);
        if (out) await sendRaw(socket, out, { head: r.method === "HEAD", http10: req.httpVersion === "1.0" });
      } catch {
        socket.destroy();
      } finally {
        done = true;
        pending.n--;
      }
    })();
  }

  function start(entries: readonly TlsEntry[]): void {
    handler = opts.handler();
    bridge = handler.websocket ? createWsBridge(handler.websocket as WebSocketHandler<unknown>) : null;
    sni = createSniTable(entries);
    const table = () => sni;
    const s = http2.createSecureServer({
      ...sni.defaultOptions,
      allowHTTP1: true,
      ALPNProtocols: ["h2", "http/1.1"],
      // Client certificates (auth-tls-*): Bun's node:tls reads requestCert from the server only,
      // never from the SNI context (measured on 1.4.5), so while some route reads certificates
      // every handshake asks for one, and none otherwise (verifyMode). None is required here:
      // kinds/client-cert.ts checks the certificate per request, against the CA of the route
      // the request's Host selects (docs/design.md, "Client certificates").
      requestCert: wantCerts,
      rejectUnauthorized: false,
      SNICallback: (name: string, cb: (err: Error | null, ctx?: import("node:tls").SecureContext) => void) => {
        try {
          cb(null, table()!.select(name));
        } catch (e) {
          cb(e as Error);
        }
      },
      ...SERVER_H2_OPTIONS,
      settings: { ...SERVER_H2_OPTIONS.settings },
      // HTTP/1.1 keep-alive as Bun.serve's idleTimeout (proxy/pipeline/listener.ts says why 75 s); node's
      // default advertises 5 s. trackH1 closes connections idle that long.
      keepAliveTimeout: idleMs,
      // A TLS handshake has client_header_timeout in nginx (ngx_http_request.c: the read timer
      // ngx_http_init_connection sets is still running through ngx_http_ssl_handshake). Without
      // this, a client that sent a ClientHello, or a record header promising one, and then nothing
      // was held for as long as the kernel kept the socket (measured: past 150 s) on Bun 1.4.5,
      // by every port that has a node:http2 listener (docs/design.md "HTTP/2 and gRPC").
      handshakeTimeout: headerTimeoutMs,
    } as http2.SecureServerOptions);
    s.on("error", (e) => log.error("http2 listener error", { err: String(e) }));
    s.on("sessionError", noop);
    s.on("tlsClientError", noop);
    s.on("session", onSession);
    s.on("secureConnection", onSecureConnection);
    // A 'request' listener makes node:http2 run its compatibility layer on every HTTP/2 stream
    // too (it binds its own 'stream' listener when one is added: Bun does as node does). We
    // only want 'request' for HTTP/1.1 connections, so that listener is removed again and
    // HTTP/2 streams reach onStream alone.
    s.on("request", onRequest);
    s.removeAllListeners("stream");
    s.on("stream", onStream);
    s.on("upgrade", onUpgrade);
    s.on("clientError", onClientError);
    // RFC 9110 §9.3.6: CONNECT asks for a tunnel; a reverse proxy answers 400, as
    // validateRequest does on Bun.serve (node would otherwise drop the connection unanswered).
    s.on("connect", (_req: IncomingMessage, socket: Duplex) => {
      socket.on("error", noop);
      socket.end("HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
    });
    s.listen({ port, host: opts.hostname, reusePort: opts.reusePort ?? true } as Parameters<typeof s.listen>[0]);
    // Bun binds synchronously: a port that cannot be bound shows as not listening at once, and
    // the 'error' with its errno only follows on a later turn. Address in use is the case a
    // start-up meets (serving/ports.ts explains it), so it is reported as that.
    if (!s.listening) {
      s.close();
      throw Object.assign(new Error(`cannot listen on ${opts.hostname}:${port}`), { code: "EADDRINUSE" });
    }
    const addr = s.address();
    if (addr !== null && typeof addr === "object") port = addr.port;
    server = s;
  }

  function rotate(entries: readonly TlsEntry[], fp: string): void {
    const t0 = performance.now();
    try {
      const next = createSniTable(entries, sni ?? undefined);
      // Clients without SNI get the server's own context: swap it too (with the verify mode,
      // which the same call applies).
      if (server !== null) verifyMode(server, wantCerts, next.defaultOptions);
      sni = next;
    } catch (err) {
      log.error("TLS rotation failed; keeping the previous certificates", { err: String(err) });
      return;
    }
    fingerprint = fp;
    rotations++;
    if (opts.logRotations !== false) log.info("TLS certificates rotated", { entries: entries.length, rotations });
    opts.hooks?.onRotation?.({ rotations, serveMs: performance.now() - t0, entries: entries.length, fingerprint: fp });
  }

  function requestClientCertificates(on: boolean): void {
    if (on === wantCerts) return;
    wantCerts = on;
    if (server === null || sni === null || stopping) return;
    try {
      verifyMode(server, on, sni.defaultOptions);
    } catch (err) {
      log.error("cannot change whether the TLS handshake asks for client certificates", { err: String(err), requestCert: on });
      return;
    }
    log.info(on ? "TLS handshakes ask for client certificates (a route reads them)" : "TLS handshakes no longer ask for client certificates", {});
    if (!on) return;
    // Connections made before carry no certificate: HTTP/2 ones get GOAWAY (their open streams
    // finish) and idle HTTP/1.1 ones are closed, so clients reconnect and can send one.
    for (const session of sessions) if (!session.closed) session.close();
    for (const [socket, st] of h1Sockets) if (st.busy === 0) socket.destroy();
  }

  const drainable: DrainableServer = {
    get pendingRequests() {
      return pending.n;
    },
    async stop(closeActive = false) {
      stopping = true;
      const s = server;
      if (s === null) return;
      if (closeActive) heads.stop();
      // Stop accepting; then GOAWAY every session (in-flight streams finish) and close idle
      // HTTP/1.1 connections; busy ones close after their response (Connection: close).
      s.close();
      for (const session of sessions) {
        if (closeActive) session.destroy();
        else if (!session.closed) session.close();
      }
      for (const [socket, st] of h1Sockets) if (closeActive || st.busy === 0) socket.destroy();
    },
  };

  return {
    update(entries, fp, standIn = false) {
      if (frozen) return;
      if (server === null) {
        start(entries); // throws: a port in use fails start-up loudly
        fingerprint = fp;
        provisional = standIn;
        log.info("TLS listener started (HTTP/2 and HTTP/1.1)", { port, entries: entries.length });
        return;
      }
      provisional = false;
      if (fp === fingerprint) return;
      rotate(entries, fp);
    },
    get provisional() {
      return provisional;
    },
    settled: () => Promise.resolve(),
    freeze() {
      frozen = true;
    },
    async stop(closeActive = false) {
      frozen = true;
      await drainable.stop(closeActive);
      if (!closeActive) {
        const deadline = performance.now() + 1000;
        while (pending.n > 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 25));
        await drainable.stop(true);
      }
    },
    get servers() {
      return server === null ? [] : [drainable];
    },
    requestClientCertificates,
    get requestsClientCertificates() {
      return wantCerts;
    },
    get port() {
      return port;
    },
    get rotations() {
      return rotations;
    },
    get alive() {
      return server === null || stopping ? 0 : 1;
    },
    get fingerprint() {
      return fingerprint;
    },
  };
}

/**
 * Set whether new handshakes ask for a client certificate, with `options` as the server's
 * default context. Bun 1.4.5's node:tls Server applies it only when setSecureContext rebuilds
 * its native configuration from the `_requestCert` field: neither that field alone nor the
 * `requestCert` option of setSecureContext alone changes what is asked (measured with
 * `openssl s_client`, which lists "Requested Signature Algorithms" only after a
 * CertificateRequest). test/proxy/client-certs.test.ts holds the listener to this.
 */
function verifyMode(s: Http2SecureServer, on: boolean, options: SecureContextOptions): void {
  (s as unknown as { _requestCert: boolean | undefined })._requestCert = on;
  s.setSecureContext({ ...options, requestCert: on, rejectUnauthorized: false } as SecureContextOptions);
}
