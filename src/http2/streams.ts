// HTTP/2 sessions and streams handed to the proxy handler: the part of the node:http2 listener
// that TLS (listener.ts, ALPN h2) and cleartext (cleartext.ts, h2c behind the plain port's
// front) share. Each session gets one RequestServer (Peer); each stream becomes a web Request
// (request.ts) and its answer is written back with trailers (response.ts), with the rapid-reset
// budget of limits.ts (docs/design.md, "HTTP/2 and gRPC").
import type { ServerHttp2Session, ServerHttp2Stream, IncomingHttpHeaders } from "node:http2";
import type { WebSocketHandler } from "bun";
import { errorResponse } from "../http/errors.ts";
import type { ConnectionTls } from "../kinds/types.ts";
import type { Logger } from "../log/logger.ts";
import type { RequestServer } from "../proxy/types.ts";
import { H2_ENHANCE_YOUR_CALM, H2_PROTOCOL_ERROR, ResetBudget } from "./limits.ts";
import { bodyStream, requestFromH2, type Refusal } from "./request.ts";
import { sendH2 } from "./response.ts";
import { connectionTls } from "./tls-peer.ts";

type MaybePromise<T> = T | Promise<T>;

/** What the listener needs from the data plane: proxy/'s serveOptions(handler) fits. */
export interface H2Handler {
  fetch(req: Request, server: RequestServer): MaybePromise<Response | undefined | void>;
  /**
   * Whether a connection whose handshake just completed must be closed before any request:
   * its SNI name is under a Gateway API listener that accepts only valid client certificates
   * and the certificates it presented (read only when asked) do not verify. Absent: none is.
   */
  refusesClient?(servername: string | null, chain: () => readonly import("node:crypto").X509Certificate[]): boolean;
  // biome-ignore lint: the WebSocket data type belongs to proxy/.
  readonly websocket?: WebSocketHandler<any>;
}

export const noop = () => {};

const REFUSED: Record<Refusal, string> = { method: "method", path: "path", authority: "authority", framing: "framing" };

/** Per connection: the RequestServer the handler sees (the peer address, the protocol). */
export class Peer implements RequestServer {
  streams = 0;
  abusive = false;
  readonly budget: ResetBudget;
  private readonly ip: { address: string; port?: number };
  constructor(
    address: string,
    readonly transport: "h1" | "h2",
    resets: number | undefined,
    private readonly socket: unknown,
  ) {
    // The port as Bun's requestIP gives it: a TCP front finds the client by it (serving/passthrough.ts).
    const port = (socket as { remotePort?: unknown } | undefined)?.remotePort;
    this.ip = typeof port === "number" ? { address, port } : { address };
    this.budget = new ResetBudget(resets);
  }
  requestIP() {
    return this.ip;
  }
  tlsOf(): ConnectionTls | null {
    return connectionTls(this.socket);
  }
  // node:http2 has no per-request timer like Bun's; our watchdogs own request deadlines.
  timeout() {}
  upgrade() {
    return false;
  }
}

export interface H2StreamsOptions {
  readonly log: Logger;
  /** The handler of the listener's current server (null before it starts). */
  readonly handler: () => H2Handler | null;
  /** An idle session (no open stream) is closed after this long. */
  readonly idleMs: number;
  /** Client cancellations per second per connection before GOAWAY (limits.ts). */
  readonly resets: number | undefined;
  /** True once a shutdown drain began: sessions get GOAWAY after their streams. */
  readonly draining?: () => boolean;
  /** The listener is stopping: a new session is closed at once. */
  readonly stopping: () => boolean;
  /** Requests in flight, counted with the listener's HTTP/1.1 ones. */
  readonly pending: { n: number };
  /** The request's URL scheme, as Bun.serve builds `req.url` on this port. */
  readonly scheme: "http" | "https";
  readonly onAbuse?: (reason: string) => void;
}

export interface H2Streams {
  readonly sessions: Set<ServerHttp2Session>;
  onSession(session: ServerHttp2Session): void;
  onStream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, flags: number, raw?: string[]): void;
}

export function createH2Streams(o: H2StreamsOptions): H2Streams {
  const { log } = o;
  const sessions = new Set<ServerHttp2Session>();
  const peers = new WeakMap<object, Peer>();

  function onSession(session: ServerHttp2Session): void {
    sessions.add(session);
    // An 'error' without a listener would throw out of the event loop: a client's protocol
    // error must never take the process down.
    session.on("error", noop);
    session.on("frameError", noop);
    session.once("close", () => sessions.delete(session));
    const p = new Peer(session.socket?.remoteAddress ?? "", "h2", o.resets, session.socket);
    peers.set(session, p);
    session.setTimeout(o.idleMs, () => {
      if (p.streams === 0) session.close();
    });
    if (o.stopping()) session.close();
  }

  function abuse(session: ServerHttp2Session, p: Peer): void {
    if (p.abusive) return;
    p.abusive = true;
    log.warn("http2: a client cancelled streams faster than allowed; closing its connection", { client: p.requestIP().address });
    try {
      o.onAbuse?.("rapid-reset");
    } catch {}
    // RFC 9113 §5.4.1: GOAWAY with the error, then close; ENHANCE_YOUR_CALM (§7) says why.
    try {
      session.goaway(H2_ENHANCE_YOUR_CALM);
    } catch {}
    setImmediate(() => session.destroy());
  }

  function refuse(stream: ServerHttp2Stream, why: Refusal): void {
    log.debug("http2: request refused before routing", { why: REFUSED[why] });
    void sendH2(stream, errorResponse("BadRequest"), false).catch(noop);
  }

  function onStream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, _flags: number, raw?: string[]): void {
    const session = stream.session as ServerHttp2Session | undefined;
    const p = session === undefined ? undefined : peers.get(session);
    stream.on("error", noop);
    const h = o.handler();
    if (session === undefined || p === undefined || p.abusive || h === null) {
      stream.close(H2_ENHANCE_YOUR_CALM);
      return;
    }
    o.pending.n++;
    p.streams++;
    const ac = new AbortController();
    let done = false;
    stream.once("close", () => {
      o.pending.n--;
      p.streams--;
      if (done) return;
      // The stream ended before our response did: the client cancelled it (RST_STREAM) or
      // its connection died. Aborting stops the upstream request; counting stops rapid reset.
      ac.abort();
      if (p.budget.spend(performance.now())) abuse(session, p);
    });
    const body = (declared: number | null) => bodyStream(stream, { declared, onMalformed: () => stream.close(H2_PROTOCOL_ERROR) });
    const req = requestFromH2(headers, raw, stream.endAfterHeaders, body, ac.signal, o.scheme);
    if (typeof req === "string") {
      done = true;
      return refuse(stream, req);
    }
    const head = req.method === "HEAD";
    void (async () => {
      try {
        const res = (await h.fetch(req, p)) ?? errorResponse("BadRequest");
        await sendH2(stream, res, head);
      } catch (e) {
        log.error("http2: request failed outside the handler", { err: String((e as Error)?.stack ?? e) });
        if (!stream.headersSent && !stream.destroyed) await sendH2(stream, errorResponse("Internal"), head).catch(noop);
      } finally {
        done = true;
      }
      // Draining: where HTTP/1.1 answers carry Connection: close, an HTTP/2 connection gets a
      // graceful GOAWAY (RFC 9113 §6.8): streams in flight finish, new ones go elsewhere. The
      // handler's other reason for Connection: close, a request body left unread, does not
      // apply to HTTP/2, whose streams are framed apart; sendH2 drops the field either way.
      if (o.draining?.() === true && !session.closed) session.close();
    })();
  }

  return { sessions, onSession, onStream };
}
