// The HTTPS listener and its certificate rotation.
//
// Bun caveat (Bun 1.4.5): server.reload() ignores `tls`. A new certificate set therefore
// means a NEW Bun.serve on the same port with `reusePort`; the old server then marks every
// response `Connection: close` for `drainMs`, so keep-alive clients move to the new server
// one request at a time, and only then is it stopped with stop(false). Measured on Bun 1.4.5:
// stop(false) also closes idle keep-alive connections at once, which is why the drain comes
// first. Rotations are coalesced (holdoff, latest entries win), skipped when the fingerprint
// is unchanged, and serialised behind the running drain, so at most 2 servers are ever alive.
//
// QUIC (`http3`) is never drained: once the next server has joined the UDP port's SO_REUSEPORT
// group, the kernel's hash sends some of the previous server's open QUIC connections to it,
// which does not know them, and their requests stall until the client times out. So the QUIC
// side of a replaced listener is stopped with stop(true) in the very turn the next one binds:
// Bun then closes its QUIC connections at once and its clients open new ones, which only the
// next server can take (measured on Bun 1.4.5, docs/design.md "Bun facts measured here"). For
// that the QUIC side is a Bun.serve of its own (`http1: false, http3: true`) beside the TCP one,
// which adds the `Alt-Svc` a combined Bun.serve would add itself.
import type { Server, WebSocketHandler } from "bun";
import type { Logger } from "../log/logger.ts";
import type { TlsEntry } from "./sni.ts";

type MaybePromise<T> = T | Promise<T>;

// biome-ignore lint: the WebSocket data type belongs to the handler's owner (proxy/).
type AnyServer = Server<any>;

/**
 * What Bun.serve needs from the data plane. proxy/'s `serveOptions(handler)` fits as is: its
 * other options (maxRequestBodySize, idleTimeout) are passed through to every server.
 */
export interface ServeHandler {
  fetch(req: Request, server: AnyServer): MaybePromise<Response | undefined | void>;
  readonly websocket?: WebSocketHandler<any>;
  error?(err: Error): MaybePromise<Response>;
  readonly maxRequestBodySize?: number;
  readonly idleTimeout?: number;
}

export interface RotationInfo {
  readonly rotations: number;
  /** Entries built into a new listening server, milliseconds (Bun.serve blocks the loop). */
  readonly serveMs: number;
  readonly entries: number;
  readonly fingerprint: string;
}

export interface TlsListenerOptions {
  readonly hostname: string;
  /** 0 lets the OS choose on the first start; rotations reuse the bound port. */
  readonly port: number;
  /** Called once per new server; it may return the same handler every time (proxy/ drain counts one). */
  readonly handler: () => ServeHandler;
  readonly log: Logger;
  /** How long an outgoing server answers with Connection: close before stop(false). */
  readonly drainMs?: number;
  /** The longest a graceful stop waits for open connections before closing them (default 60 s). */
  readonly stopBoundMs?: number;
  /** Coalescing window after an update before a rotation starts. */
  readonly holdoffMs?: number;
  /**
   * A rotation served (counted: portico_tls_rotations_total). A rotation that fails is logged
   * here ("TLS rotation failed"), as the entries were already checked before they reach a
   * listener (tls/pem.ts, tls/sni.ts validateTlsSettings), so it has no hook of its own.
   */
  readonly hooks?: { onRotation?(info: RotationInfo): void };
  /**
   * Log each rotation served (default true). The SNI split's QUIC listener rotates beside its
   * Bun.serve side, which logs the port's one (serving/tls-split.ts); a failure is logged always.
   */
  readonly logRotations?: boolean;
  /**
   * Bun.serve's own HTTP/2 (`http2`: ALPN h2 beside http/1.1) and HTTP/3 (`http3`: QUIC on the
   * same port number; Bun.serve then adds `Alt-Svc: h3=":port"; ma=86400` to every answer over
   * TCP itself, RFC 9114 §3.1.1), both experimental in Bun 1.4.5 (docs/design.md, "HTTP/2 and gRPC").
   */
  readonly http2?: boolean;
  readonly http3?: boolean;
  /**
   * false: HTTP/3 alone (Bun.serve's `http1: false` with `http3`), a QUIC listener on the UDP
   * port only, while another socket owns the TCP port number (the SNI split's front,
   * serving/tls-split.ts). Measured on Bun 1.4.5: it binds UDP while a `Bun.listen` holds the
   * same TCP port, and `reusePort` lets a second one join the same UDP port (without it the
   * second bind fails "Failed to listen on UDP port"). Its answers carry no Alt-Svc. With
   * `http3` and without this, the QUIC side is such a server too, beside the TCP one.
   */
  readonly http1?: boolean;
  /**
   * A QUIC listener this one does not run but answers over TCP advertise (RFC 7838 §3): the SNI
   * split's, beside its front on the public port number, while this listener is its loopback
   * Bun.serve side (serving/tls-split.ts); its port, or null while there is none. Ignored with
   * `http3`, which advertises its own.
   */
  readonly advertiseH3?: () => number | null;
}

export interface TlsListener {
  /**
   * Serve these entries. The first call starts listening synchronously and throws on failure.
   * `provisional` (first call only): a stand-in set served before the first route table, which
   * no client is meant to reach yet (not ready); the next update replaces it at once, without
   * the holdoff and without draining it (a drained server keeps accepting, so for drainMs some
   * new connections would still get the stand-in certificate).
   */
  update(entries: readonly TlsEntry[], fingerprint: string, provisional?: boolean): void;
  /** True until the set of a first non-provisional update is being served. */
  readonly provisional: boolean;
  /** Resolves when no rotation is pending or draining (tests, start-up). */
  settled(): Promise<void>;
  /** No more rotations (shutdown begins; proxy/'s drain then stops `servers`). Idempotent. */
  freeze(): void;
  /**
   * Graceful: mark Connection: close, wait drainMs, stop(false); the QUIC side is stopped at once
   * (stop(true)) either way. closeActive: drop everything now.
   */
  stop(closeActive?: boolean): Promise<void>;
  /**
   * Ask (or stop asking) for a client certificate in new handshakes, while some route reads one
   * (table/client-certs.ts); before the first update() it sets what the server starts with. The
   * HTTP/2 listener does it (http2/listener.ts). Here it changes nothing: Bun.serve cannot show a request's certificate, so none is ever asked for and
   * requests count as carrying none (docs/design.md, "Client certificates").
   */
  requestClientCertificates(on: boolean): void;
  readonly requestsClientCertificates: boolean;
  readonly server: AnyServer | null;
  /** Every server still alive: the current one and one draining, for a shutdown drain. */
  readonly servers: readonly AnyServer[];
  readonly port: number;
  readonly rotations: number;
  /** Servers currently alive (serving or draining): never more than 2. */
  readonly alive: number;
  readonly fingerprint: string | null;
}

interface Live {
  /** The TCP server; with `http1: false`, the QUIC-only one. */
  readonly server: AnyServer;
  /** The QUIC-only server beside a TCP one (`http3` with HTTP/1.1), stopped at once on a rotation. */
  readonly quic: AnyServer | null;
  draining: boolean;
}

/** RFC 7838 §3 with Bun's own value (measured on 1.4.5): the QUIC listener is on the TCP port number. */
function altSvc(port: number): string {
  return `h3=":${port}"; ma=86400`;
}

/**
 * A function adding the `h3` entry for `port()` to an answer, after any the handler set, or
 * leaving it untouched: no QUIC port now, or a 421. A 421 says this connection is the wrong one
 * for the request's host (RFC 9110 §15.5.20); on the SNI split's Bun.serve side it is the route
 * step's answer for a host that needs node:http2 (proxy/pipeline/route.ts, `misdirected`), which
 * QUIC does not serve either, so the answer that already decided it is what keeps the host off
 * QUIC: no second look at the Host. The value is built once per port, not per answer.
 */
function advertiseOn(port: () => number | null): (res: Response | undefined | void) => Response | undefined | void {
  let built: { readonly port: number; readonly value: string } | null = null;
  return (res) => {
    if (!res || res.status === 421) return res;
    const p = port();
    if (p === null) return res;
    if (built?.port !== p) built = { port: p, value: altSvc(p) };
    return appendField(res, "Alt-Svc", built.value);
  };
}

export function createTlsListener(opts: TlsListenerOptions): TlsListener {
  const drainMs = opts.drainMs ?? 1000;
  const holdoffMs = opts.holdoffMs ?? 75;
  const { log } = opts;
  let current: Live | null = null;
  let currentFp: string | null = null;
  let pending: { entries: readonly TlsEntry[]; fingerprint: string } | null = null;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let draining: Promise<void> | null = null;
  let drainingCount = 0;
  let rotations = 0;
  let port = opts.port;
  let stopped = false;
  let retiring: Live | null = null;
  let provisional = false;
  let cutDrain: (() => void) | null = null;
  const idle: Array<() => void> = [];
  // QUIC servers being stopped at once (stopQuicNow), awaited by stop().
  const closing = new Set<Promise<void>>();

  // A QUIC server beside the TCP one: `http3` on a listener that also serves HTTP/1.1 and h2.
  const quicBeside = opts.http3 === true && opts.http1 !== false;
  // Until stop() takes the QUIC side down: from then on nothing serves the UDP port (a hand-over
  // to node:http2 alone, or the shutdown), so the answers still going out over TCP while this
  // listener drains must not send clients there (RFC 7838 §2.2: a client may use an alternative
  // as long as `ma` says). A rotation keeps advertising: the next server's QUIC side serves it.
  let quicServing = quicBeside;
  // The QUIC port answers over TCP advertise: this listener's own, or the one it is told of;
  // null: none (no --http3), and the answers go out untouched.
  const h3Port: (() => number | null) | null = quicBeside ? () => (quicServing ? port : null) : opts.http1 === false ? null : (opts.advertiseH3 ?? null);

  // One function for every answer (not a closure per start or per request).
  const advertise = advertiseOn(h3Port ?? (() => null));

  function start(entries: readonly TlsEntry[]): Live {
    const handler = opts.handler();
    const live = { draining: false, quic: null } as { server: AnyServer; quic: AnyServer | null; draining: boolean };
    const { fetch: inner, websocket, error, ...passThrough } = handler;
    // `tcp`: HTTP/1.1 (and h2 with `http2`) over TCP; otherwise HTTP/3 alone on the UDP port.
    const serve = (fetch: ServeHandler["fetch"], tcp: boolean, onError = error): AnyServer => {
      const options = {
        ...passThrough,
        hostname: opts.hostname,
        port,
        reusePort: true,
        tls: entries as TlsEntry[],
        ...(tcp ? (opts.http2 ? { http2: true } : {}) : { http1: false, http3: true }),
        fetch,
        ...(websocket ? { websocket } : {}),
        ...(onError ? { error: onError } : {}),
      };
      return Bun.serve(options as unknown as Parameters<typeof Bun.serve>[0]) as AnyServer;
    };
    // proxy/'s fetch is a plain function (serveOptions): nothing in it reads `this`.
    const serveQuic = (): AnyServer => serve(inner, false);
    if (opts.http1 === false) {
      // QUIC alone (the SNI split's): never drained, so never marked.
      live.server = serveQuic();
      port = live.server.port ?? port;
      return live;
    }
    const fetch = (req: Request, server: AnyServer): MaybePromise<Response | undefined | void> => {
      let res = inner(req, server);
      // What Bun.serve with `http3` adds to every answer over TCP itself (RFC 9114 §3.1.1), after
      // any the handler set (appendField).
      if (h3Port !== null) res = res instanceof Promise ? res.then(advertise) : advertise(res);
      if (!live.draining) return res;
      return res instanceof Promise ? res.then(markClose) : markClose(res);
    };
    // The error handler's answers too, as Bun.serve's own Alt-Svc.
    const advertiseError = error && h3Port !== null ? (err: Error) => {
      const res = error(err);
      return res instanceof Promise ? res.then((r) => advertise(r) ?? r) : (advertise(res) ?? res);
    } : error;
    // With the port number known (every start but a first on port 0), QUIC binds first: a QUIC
    // bind that fails then throws before this TCP server joins the port's SO_REUSEPORT group, so
    // it never closes a TCP socket the kernel has already queued connections on (they would be
    // reset; docs/design.md "Bun facts measured here"), and a TCP bind that fails stops only the
    // fresh QUIC server, in the same turn. On port 0 the TCP bind chooses the number QUIC needs;
    // no client can know that port yet, so nothing is queued on it when QUIC fails after.
    const quicFirst = quicBeside && port !== 0;
    if (quicFirst) live.quic = serveQuic();
    try {
      live.server = serve(fetch, true, advertiseError);
    } catch (err) {
      if (live.quic) void live.quic.stop(true);
      throw err;
    }
    port = live.server.port ?? port;
    if (quicBeside && !quicFirst) {
      try {
        live.quic = serveQuic();
      } catch (err) {
        void live.server.stop(true);
        throw err;
      }
    }
    return live;
  }

  /** Takes a replaced server's QUIC side out of the UDP port group now (see the top of this file). */
  function stopQuicNow(old: Live): void {
    const q = old.quic ?? (opts.http1 === false ? old.server : null);
    if (q === null) return;
    const done = q.stop(true).catch((err: unknown) => log.warn("stopping a replaced QUIC listener failed", { err: String(err) }));
    closing.add(done);
    void done.finally(() => closing.delete(done));
  }

  function retire(old: Live, wait = drainMs): void {
    old.draining = true;
    drainingCount++;
    retiring = old;
    const done = (async () => {
      // No drain (the stand-in): stopGracefully runs in this very turn, and Bun's stop(false)
      // closes the listening socket synchronously, so the kernel hands every later connection
      // to the new server. A timer first would leave the stand-in in the SO_REUSEPORT group
      // for a turn after `provisional` turned false: a client let in by /readyz could then be
      // queued on it and reset when it closes (docs/design.md, "Bun facts measured here").
      if (wait > 0) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, wait);
          cutDrain = () => {
            clearTimeout(t);
            resolve();
          };
        });
      }
      await stopGracefully(old.server, opts.stopBoundMs ?? STOP_BOUND_MS);
    })()
      .catch((err: unknown) => log.warn("stopping a drained TLS listener failed", { err: String(err) }))
      .finally(() => {
        drainingCount--;
        draining = null;
        retiring = null;
        cutDrain = null;
        schedule(0);
        wake();
      });
    draining = done;
  }

  function rotate(): void {
    timer = null;
    if (stopped || !pending) return wake();
    if (draining) return; // retire() reschedules when the drain ends: never 3 servers alive
    const { entries, fingerprint } = pending;
    pending = null;
    if (fingerprint === currentFp) {
      provisional = false; // the set wanted is the one already served
      return wake();
    }
    const t0 = performance.now();
    let next: Live;
    try {
      next = start(entries);
    } catch (err) {
      // Keep serving the old certificates; a later update may fix it.
      log.error("TLS rotation failed; keeping the previous certificates", { err: String(err) });
      provisional = false; // never held unready for good by a set Bun refuses
      return wake();
    }
    const serveMs = performance.now() - t0;
    const old = current;
    const replacesStandIn = provisional;
    current = next;
    currentFp = fingerprint;
    provisional = false;
    rotations++;
    if (old) {
      stopQuicNow(old);
      // QUIC alone has nothing left to drain.
      if (opts.http1 !== false) retire(old, replacesStandIn ? 0 : drainMs);
    }
    if (drainingCount + 1 > 2) log.error("more than two TLS listeners alive", { alive: drainingCount + 1 });
    if (opts.logRotations !== false) log.info("TLS certificates rotated", { entries: entries.length, serveMs: Math.round(serveMs), rotations });
    opts.hooks?.onRotation?.({ rotations, serveMs, entries: entries.length, fingerprint });
    wake();
  }

  function schedule(delay: number): void {
    if (timer || stopped || !pending) return;
    timer = setTimeout(rotate, delay);
  }

  function wake(): void {
    if (pending || draining || timer) return;
    for (const resolve of idle.splice(0)) resolve();
  }

  return {
    update(entries, fingerprint, standIn = false) {
      if (stopped) return;
      if (!current) {
        current = start(entries); // throws: a bad certificate set or cipher list fails start-up loudly
        currentFp = fingerprint;
        provisional = standIn;
        log.info("TLS listener started", { port, entries: entries.length });
        return;
      }
      if (fingerprint === currentFp && !pending) {
        provisional = false; // the stand-in already is the set wanted
        return;
      }
      pending = { entries, fingerprint }; // the latest update wins
      schedule(provisional ? 0 : holdoffMs);
    },
    get provisional() {
      return provisional;
    },
    requestClientCertificates() {},
    requestsClientCertificates: false,
    freeze() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      pending = null;
      wake();
    },
    settled() {
      if (!pending && !draining && !timer) return Promise.resolve();
      return new Promise((resolve) => idle.push(resolve));
    },
    async stop(closeActive = false) {
      stopped = true;
      // See quicServing: no answer over TCP advertises the QUIC side once it is being stopped.
      quicServing = false;
      if (timer) clearTimeout(timer);
      timer = null;
      pending = null;
      const live = current;
      current = null;
      if (live) {
        live.draining = true;
        // A listener stopped gracefully is one handed over (its successor has joined the port
        // group) or one already drained by the shutdown: its QUIC side goes now either way, and
        // from now on no answer over TCP advertises it (quicServing, above).
        stopQuicNow(live);
        if (opts.http1 !== false) {
          if (!closeActive) await Bun.sleep(drainMs);
          if (closeActive) await live.server.stop(true);
          else await stopGracefully(live.server, opts.stopBoundMs ?? STOP_BOUND_MS);
        }
      }
      if (closeActive && retiring) {
        await retiring.server.stop(true);
        cutDrain?.();
      }
      if (draining) await draining;
      await Promise.all([...closing]);
      wake();
    },
    get server() {
      return current?.server ?? null;
    },
    get servers() {
      return [current?.server, current?.quic, retiring?.server].filter((x): x is AnyServer => x !== undefined && x !== null);
    },
    get port() {
      return port;
    },
    get rotations() {
      return rotations;
    },
    get alive() {
      return drainingCount + (current ? 1 : 0);
    },
    get fingerprint() {
      return currentFp;
    },
  };
}

const STOP_BOUND_MS = 60_000;

/**
 * stop(false), bounded. Bun 1.4.5 with `http2: true`: a connection accepted just before
 * stop(false) but not yet handed to the HTTP/2 side (ALPN h2, preface not yet read) gets no
 * GOAWAY, keeps being served by this server, and stop(false) then waits for it to idle out
 * (75 s, or never while it is busy; measured, docs/bun-upstream-reports.md section 7). So
 * every 250 ms the idle ones are closed again (closeIdleConnections sends such an h2
 * connection GOAWAY), and past `boundMs` whatever is left is closed (stop(true)).
 */
export async function stopGracefully(server: AnyServer, boundMs: number): Promise<void> {
  let done = false;
  const stopped = server.stop(false).then(() => {
    done = true;
  });
  const deadline = performance.now() + boundMs;
  while (!done && performance.now() < deadline) {
    await Promise.race([stopped, Bun.sleep(Math.min(250, Math.max(1, deadline - performance.now())))]);
    if (!done) server.closeIdleConnections();
  }
  if (!done) await server.stop(true);
}

/**
 * Ask the client to close after this response (RFC 9112 §9.6). Upgrades are left alone:
 * a 101 answer switches protocols, and a handler that upgraded returns no Response at all.
 */
function markClose(res: Response | undefined | void): Response | undefined | void {
  return setField(res, "Connection", "close");
}

function setField(res: Response | undefined | void, name: string, value: string, append = false): Response | undefined | void {
  if (!res || res.status === 101) return res;
  try {
    if (append) res.headers.append(name, value);
    else res.headers.set(name, value);
    return res;
  } catch {
    // Immutable headers (Response.redirect, some fetch results): copy once.
    const headers = new Headers(res.headers);
    if (append) headers.append(name, value);
    else headers.set(name, value);
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  }
}

/**
 * Add a field line to an answer, after any the handler set (for Alt-Svc, what Bun.serve does
 * with its own `h3` entry: measured on 1.4.5, a handler's `Alt-Svc: a` goes out as `a, h3=...`).
 * Upgrades are left alone, as by markClose.
 */
export function appendField(res: Response | undefined | void, name: string, value: string): Response | undefined | void {
  return setField(res, name, value, true);
}
