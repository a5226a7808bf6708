// WebSocket proxying: connect upstream first, then upgrade the client with the
// subprotocol the backend chose, relay frames and close codes both ways. Nothing is
// ever dropped silently: past the buffer bound both sides are closed with 1011.
import type { ServerWebSocket, WebSocketHandler } from "bun";
import type { Backend, Upstream, UpstreamTls } from "../../table/types.ts";
import type { Balancer, EndpointChoice } from "../../kinds/types.ts";
import { ProxyError } from "../../http/errors.ts";
import { hostForName, sharedExternalResolver, type ExternalResolver } from "./external.ts";
import type { RequestServer } from "../types.ts";
import { createWatchdog, type Watchdog } from "./watchdog.ts";
import { upstreamTlsH2Options } from "./upstream-tls.ts";
import type { ClientRequest, IncomingMessage } from "node:http";
import { answerTry, beginTry, endTry, type UpstreamTry } from "../../log/upstream-tries.ts";

/** Per-direction bound on data queued but not yet written. */
export const WS_BUFFER_LIMIT = 16 * 1024 * 1024;

type Frame = string | ArrayBuffer | Uint8Array;

export interface WsData {
  readonly upstream: UpstreamWs;
  /** Upstream frames that arrived before the client side opened. */
  pending: Frame[] | null;
  pendingBytes: number;
  client: ServerWebSocket<WsData> | null;
  closed: boolean;
  /** Close frame the upstream sent before the client side opened, to pass on at open. */
  upstreamClose: { code: number | undefined; reason: string } | null;
  /** Called once when the relay ends; `error` is "StreamIdle" when the idle timer ended it. */
  readonly onClose: (bytesIn: number, bytesOut: number, error: string | null) => void;
  bytesIn: number;
  bytesOut: number;
  /** The route's idle time (--stream-idle-timeout, or its proxy-read-timeout): touched by every frame either way, ping and pong included. */
  idle: Watchdog | null;
  error: string | null;
}

// RFC 6455 §7.4.1: 1005, 1006 and 1015 must never be sent in a Close frame.
function sendableCode(code: number | undefined): number | undefined {
  if (code === undefined) return undefined;
  if ((code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999)) return code;
  return undefined;
}

function size(f: Frame): number {
  return typeof f === "string" ? Buffer.byteLength(f) : f.byteLength;
}

/**
 * How long the upstream may take to answer our Close frame before its connection is cut.
 * RFC 6455 §7.1.1 has the endpoint that sent Close wait for the peer's and §7.1.7 lets it give
 * up on a peer that does not answer; a pod that never reads, or ignores a Close, otherwise
 * held its connection for good (measured: still open 40 s after a 1011, the idle watchdog
 * already stopped). nginx tunnels the bytes and closes the pod's connection with the client's.
 */
export const WS_CLOSE_GRACE_MS = 5_000;

/** Close the upstream socket gracefully, and abruptly once WS_CLOSE_GRACE_MS has passed. */
function closeUpstream(ws: UpstreamWs, code: number | undefined, reason: string | undefined): void {
  try {
    ws.close(code, reason);
  } catch {}
  if (ws.readyState === WebSocket.CLOSED) return;
  const dog = createWatchdog(WS_CLOSE_GRACE_MS, () => {
    try {
      ws.terminate();
    } catch {}
  });
  ws.addEventListener("close", () => dog.stop(), { once: true });
}

function closeBoth(d: WsData, code: number, reason: string): void {
  d.idle?.stop();
  if (d.closed) return;
  d.closed = true;
  closeUpstream(d.upstream, code, reason);
  try {
    d.client?.close(code, reason);
  } catch {}
}

/**
 * Whether a frame handed to the client's socket was dropped: ServerWebSocket's send, ping and
 * pong return the bytes sent (>0), -1 when queued under backpressure, and 0 when dropped; but an
 * empty payload also returns 0 on success (measured on Bun 1.4.5: `ping()`, `send(new
 * Uint8Array(0))`), so a 0 only means dropped for a non-empty one. An empty frame Bun did drop
 * carries no data: its socket is past backpressureLimit and closeOnBackpressureLimit closes it
 * (websocketHandler), which closes the pod's side too. The HTTP/2 bridge returns the same.
 */
function dropped(sent: number, payload: number): boolean {
  return sent === 0 && payload > 0;
}

/** Send to the client; a frame Bun dropped closes the pair instead (RFC 6455 §7.4.1: 1011). */
function toClient(d: WsData, f: Frame): void {
  d.idle?.touch();
  const ws = d.client;
  if (ws === null) {
    d.pending?.push(f);
    d.pendingBytes += size(f);
    if (d.pendingBytes > WS_BUFFER_LIMIT) closeBoth(d, 1011, "backpressure");
    return;
  }
  const n = size(f);
  d.bytesOut += n;
  if (dropped(ws.send(f), n)) closeBoth(d, 1011, "backpressure");
}

export interface WsConnectInput {
  readonly backend: Backend;
  readonly balancer: Balancer;
  /** The route's way of choosing endpoints (backend stage), or null for round robin. */
  readonly choice?: EndpointChoice | null;
  readonly pathAndQuery: string;
  readonly headers: Headers;
  readonly protocols: string[];
  readonly timeoutMs: number;
  /** Resolves and checks ExternalName upstreams; default: the process-wide one. */
  readonly external?: ExternalResolver | undefined;
  /**
   * Receives each endpoint as it is tried, so a failed connect still logs which one (access
   * log), and the status a pod answered the handshake with instead of 101.
   */
  readonly record?: { upstream: string | null; upstreamStatus?: number | null; tries?: UpstreamTry[] | null };
  /** The route's proxy-ssl-* (RouteOptions.upstreamTls), for a wss:// pod; null or absent: none. */
  readonly upstreamTls?: UpstreamTls | null | undefined;
}

/**
 * The upstream side of the relay: the calls and events the relay uses, which `ws`'s client
 * (below) offers as the WHATWG WebSocket does (onmessage's `data`, onclose's `code`/`reason`).
 */
export interface UpstreamWs {
  readonly readyState: number;
  readonly protocol: string;
  readonly bufferedAmount: number;
  binaryType: string;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  addEventListener(type: "close", f: () => void, o: { once: true }): void;
  /** `ws`'s control frame events (RFC 6455 §5.5.2, §5.5.3), with the frame's payload. */
  on(ev: "ping" | "pong", f: (data: Buffer) => void): unknown;
  send(f: Frame): void;
  ping(data: Buffer): void;
  pong(data: Buffer): void;
  close(code?: number, reason?: string): void;
  terminate(): void;
}

/** The client side of `ws` as used here (its handshake events, RFC 6455 §4.1). */
interface WsClient extends UpstreamWs {
  on(ev: "open", f: () => void): void;
  on(ev: "error", f: (e: Error) => void): void;
  on(ev: "unexpected-response", f: (req: ClientRequest, res: IncomingMessage) => void): void;
  on(ev: "ping" | "pong", f: (data: Buffer) => void): unknown;
}
type WsClientCtor = new (url: string, protocols: string[], options: Record<string, unknown>) => WsClient;

/**
 * `ws`'s client, which Bun resolves to its own built-in one (before node_modules): the handshake
 * is a node:http request, so a pod's answer other than 101 reaches us whole (status, fields and
 * body: 'unexpected-response'), and a 101 gives a socket whose frames Bun's native code reads
 * (measured on 1.4.5). Bun's global WebSocket only names the status of such an answer, in its
 * error event's message (docs/bun-upstream-reports.md).
 */
let wsClient: WsClientCtor | null = null;
function clientCtor(): WsClientCtor {
  wsClient ??= (require("ws") as { WebSocket: WsClientCtor }).WebSocket;
  return wsClient;
}

/** The statuses a Response may carry without a body (Fetch: null body status). */
const NULL_BODY = new Set([204, 205, 304]);

/** The pod's answer to a handshake it refused (declinedAnswer). */
export interface DeclinedAnswer {
  readonly response: Response;
  /** Give up on the body (the request was aborted: client gone, body idle, shutdown). */
  readonly abort: (reason: unknown) => void;
}

/**
 * The pod's answer to a handshake it refused, as a Response: its status, every field line in
 * order, its body streamed with backpressure. The pod's connection is closed once the body has
 * ended, was cancelled or was given up on: nothing is pooled after a refused handshake.
 */
function declinedAnswer(req: ClientRequest, res: IncomingMessage): DeclinedAnswer {
  const done = () => {
    res.destroy();
    req.destroy();
  };
  let fail: (reason: unknown) => void = done;
  const headers = new Headers();
  const raw = res.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    try {
      headers.append(raw[i]!, raw[i + 1]!);
    } catch {
      // A line the Fetch Headers refuse (node's parser took it): dropped, as fetch drops it.
    }
  }
  const status = res.statusCode ?? 0;
  if (NULL_BODY.has(status)) {
    done();
    return { response: new Response(null, { status, statusText: res.statusMessage ?? "", headers }), abort: done };
  }
  res.pause();
  // Once the stream is closed, errored or cancelled, events already queued on `res` (a 'data'
  // after cancel) find nothing to feed: a controller call then would throw outside any handler.
  let open = true;
  const body = new ReadableStream<Uint8Array>({
    start(ctl) {
      res.on("data", (c: Buffer) => {
        if (!open) return;
        ctl.enqueue(new Uint8Array(c.buffer, c.byteOffset, c.byteLength));
        if ((ctl.desiredSize ?? 0) <= 0) res.pause();
      });
      res.on("end", () => {
        if (open) {
          open = false;
          ctl.close();
        }
        done();
      });
      fail = (reason) => {
        if (open) {
          open = false;
          ctl.error(reason);
        }
        done();
      };
      // A body cut short (the pod closed mid-body) ends the client's answer abruptly, as a
      // proxied body cut short does (respond.ts).
      const cut = () => fail(new ProxyError("UpstreamConnect", "websocket refusal body cut"));
      res.on("error", cut);
      res.on("aborted", cut);
      res.on("close", () => {
        if (!res.complete) cut();
      });
    },
    pull() {
      res.resume();
    },
    cancel() {
      open = false;
      done();
    },
  }, { highWaterMark: 64 * 1024, size: (c) => c?.byteLength ?? 0 });
  return { response: new Response(body, { status, statusText: res.statusMessage ?? "", headers }), abort: (r) => fail(r) };
}

function connectOnce(b: Backend, u: Upstream, input: WsConnectInput): Promise<UpstreamWs> {
  const scheme = b.scheme === "https" || b.scheme === "grpcs" ? "wss" : "ws";
  const headers: Record<string, string> = {};
  for (const [k, v] of input.headers) headers[k] = v;
  const Ctor = clientCtor();
  let ws: WsClient;
  try {
    ws = construct(Ctor, scheme, u, input, headers);
  } catch {
    // `ws` checks the offered subprotocols (RFC 6455 §4.1: distinct tokens) before connecting:
    // the client's handshake is malformed, and no endpoint was tried.
    return Promise.reject(new ProxyError("BadRequest", "invalid Sec-WebSocket-Protocol"));
  }
  return handshake(ws, u, input);
}

function construct(Ctor: WsClientCtor, scheme: string, u: Upstream, input: WsConnectInput, headers: Record<string, string>): WsClient {
  const b = input.backend;
  const ws = new Ctor(`${scheme}://${u.authority}${input.pathAndQuery}`, input.protocols, {
    headers,
    // A redirect is the pod's answer, relayed to the client as any other (nginx's proxy_redirect
    // rewrites Location, it never follows one).
    followRedirects: false,
    // The pod's pings are relayed to the client and the client's pongs back (upgradeClient), as
    // nginx's byte tunnel passes them: the pod's ping then tests the whole path to the client.
    // Answered here, a pod would keep seeing a client alive after its path died.
    autoPong: false,
    // The same TLS as a request to the pod (forward.ts): the route's proxy-ssl-* (CA, name and
    // depth check, client certificate, versions, ciphers, SNI) in node:tls's spelling, which the
    // handshake's node:https request takes (measured on 1.4.5; test/proxy/upstream-tls.test.ts);
    // without them pod certificates are not verifiable for an IP.
    ...(scheme === "wss" ? (input.upstreamTls ? upstreamTlsH2Options(input.upstreamTls) : { servername: b.serverName, rejectUnauthorized: false }) : {}),
  });
  ws.binaryType = "arraybuffer";
  return ws;
}

function handshake(ws: WsClient, u: Upstream, input: WsConnectInput): Promise<UpstreamWs> {
  return new Promise<UpstreamWs>((resolve, reject) => {
    let settled = false;
    const t = setTimeout(() => {
      settled = true;
      try {
        ws.terminate();
      } catch {}
      reject(new ProxyError("UpstreamTimeout", "websocket handshake"));
    }, input.timeoutMs);
    ws.on("open", () => {
      clearTimeout(t);
      if (settled) return;
      settled = true;
      resolve(ws);
    });
    ws.on("unexpected-response", (req, res) => {
      clearTimeout(t);
      if (settled) {
        req.destroy();
        return;
      }
      settled = true;
      const status = res.statusCode ?? 0;
      // Only a status a Response can carry is relayed; anything else is an invalid answer.
      if (status < 200 || status > 599) {
        req.destroy();
        reject(new UpgradeDeclined(status, null, u));
        return;
      }
      const answer = declinedAnswer(req, res);
      reject(new UpgradeDeclined(status, answer, u));
    });
    // `ws` is an EventEmitter: an 'error' without a listener would throw. This one stays for the
    // socket's life (the relay adds its own, upgradeClient), so a late error after a refusal or
    // a timeout is harmless.
    ws.on("error", () => {
      clearTimeout(t);
      if (settled) return;
      settled = true;
      reject(new ProxyError("UpstreamConnect", "websocket handshake failed"));
    });
  });
}

/**
 * The pod answered the handshake, with another status than 101: it is up and chose not to
 * upgrade (401, 403, 404, a 200 page). Not a connection failure: nginx's proxy_next_upstream
 * (ingress-nginx: `error timeout`) tries another endpoint only on an error or a timeout, never on
 * an answer, so the endpoint is not backed off and no second pod gets the handshake. The answer
 * is relayed to the client as nginx relays it: until the pod says 101 the handshake is an
 * ordinary proxied GET (ingress-nginx's nginx.tmpl sets Upgrade and Connection from
 * `$http_upgrade`/`$connection_upgrade` and proxy_pass relays whatever comes back). `answer` is
 * null for a status no Response can carry (below 200 or above 599): the client gets 502.
 */
export class UpgradeDeclined extends ProxyError {
  readonly status: number;
  readonly answer: DeclinedAnswer | null;
  /** The endpoint that answered. */
  readonly upstream: Upstream;
  constructor(status: number, answer: DeclinedAnswer | null, upstream: Upstream) {
    super("UpstreamInvalid", `websocket handshake answered ${status}`);
    this.status = status;
    this.answer = answer;
    this.upstream = upstream;
  }
}

/** Open the upstream socket, trying a second endpoint once if the first fails. */
export async function connectUpstreamWs(input: WsConnectInput): Promise<{ ws: UpstreamWs; upstream: Upstream }> {
  const tried = new Set<string>();
  for (let attempt = 0; attempt < 2; attempt++) {
    const u = input.choice ? input.choice.pick(input.backend, input.balancer, tried) : input.balancer.pick(input.backend, tried);
    if (u === null) break;
    tried.add(u.authority);
    // As in forward.ts: the WebSocket client gets the checked address, never the name.
    const ext = input.backend.externalName ? (input.external ?? sharedExternalResolver()) : null;
    const to = ext === null ? u : await ext.target(u, input.timeoutMs);
    if (ext !== null && !input.headers.has("host")) input.headers.set("host", hostForName(u, input.backend.scheme));
    // The address connected to (an ExternalName's checked one); one refused before any
    // connection (external.ts) was not tried and leaves the record as it was.
    if (input.record) input.record.upstream = to.authority;
    // Each endpoint the handshake went to is an attempt for --access-log-template's $upstream_*
    // (log/upstream-tries.ts; null without one), as nginx keeps a state per peer tried: its
    // answer (101, or the status of a refusal) with the time to it, or the 502 (504 for the
    // deadline) of ngx_http_upstream_next. Pushed once the outcome is known: a handshake `ws`
    // refuses to build (BadRequest) reached no endpoint.
    const start = performance.now();
    try {
      const ws = await connectOnce(input.backend, to, input);
      answerTry(beginTry(input.record?.tries, to.authority, start), 101);
      input.balancer.succeeded(u);
      return { ws, upstream: to };
    } catch (e) {
      if (e instanceof ProxyError && e.code === "BadRequest") throw e;
      const at = beginTry(input.record?.tries, to.authority, start);
      if (e instanceof UpgradeDeclined) {
        if (input.record) input.record.upstreamStatus = e.status;
        answerTry(at, e.status);
        throw e;
      }
      const timeout = e instanceof ProxyError && e.code === "UpstreamTimeout";
      endTry(at, timeout ? 504 : 502);
      if (timeout) throw e;
      input.balancer.failed(u);
      ext?.forget(u.address);
    }
  }
  throw new ProxyError(tried.size === 0 ? "NoEndpoints" : "UpstreamConnect", "websocket");
}

/**
 * Wire the upstream socket's events to the relay and upgrade the client. False when Bun refused
 * the upgrade. A relay with no frame (data, ping or pong) in either direction for `idleMs` is closed on both
 * sides with 1001 Going Away (RFC 6455 §7.4.1), as an HTTP stream idle that long is cut: one
 * idle time covers both, as nginx's proxy_read_timeout, which ngx_http_upstream_process_upgraded
 * re-arms on every event of either side (docs/design.md "Upstream timeouts").
 */
export function upgradeClient(
  req: Request,
  server: RequestServer,
  upstream: UpstreamWs,
  extraHeaders: Record<string, string>,
  idleMs: number,
  onClose: WsData["onClose"],
): boolean {
  const d: WsData = {
    upstream, pending: [], pendingBytes: 0, client: null, closed: false, upstreamClose: null, onClose, bytesIn: 0, bytesOut: 0,
    idle: null, error: null,
  };
  d.idle = createWatchdog(idleMs, () => {
    if (d.closed) return;
    d.error = "StreamIdle";
    closeBoth(d, 1001, "idle timeout");
  });
  upstream.onmessage = (ev) => toClient(d, ev.data as Frame);
  upstream.onclose = (ev) => {
    if (d.closed) return;
    d.closed = true;
    const code = sendableCode(ev.code);
    if (d.client === null) {
      d.upstreamClose = { code: ev.code === 1006 ? 1011 : code, reason: code === undefined ? "" : ev.reason };
      return;
    }
    // An abnormal upstream end (1006) is passed on as an abrupt end, not a clean close.
    if (ev.code === 1006) d.client.terminate();
    else d.client.close(code, code === undefined ? undefined : ev.reason);
  };
  upstream.onerror = () => closeBoth(d, 1011, "upstream error");
  // Control frames from the pod (docs/design.md "Upstream timeouts"): each re-arms the idle
  // time, as any byte re-arms nginx's read timer, and is passed on to the client. Before the
  // client side has opened a ping is answered here (RFC 6455 §5.5.2: as soon as practical) and
  // a pong, which cannot answer a ping of a client not yet open, needs no answer (§5.5.3).
  for (const kind of ["ping", "pong"] as const) {
    upstream.on(kind, (data) => {
      if (d.closed) return;
      d.idle?.touch();
      if (d.client === null) {
        if (kind === "ping") upstream.pong(data);
      } else if (dropped(d.client[kind](data), data.byteLength)) closeBoth(d, 1011, "backpressure");
    });
  }
  const headers: Record<string, string> = { ...extraHeaders };
  // Answer with the subprotocol the backend chose, or none. Bun echoes the first
  // offered protocol when the header is absent, and leaves it out when it is "" (measured).
  headers["sec-websocket-protocol"] = upstream.protocol;
  const ok = server.upgrade(req, { data: d, headers });
  if (!ok) closeBoth(d, 1011, "upgrade failed");
  return ok;
}

/**
 * The bound on what waits for the pod, checked after every frame the client sends, data or
 * control: `ws` queues without limit, so a client flooding pings to a pod that does not read
 * would otherwise grow it for good.
 */
function toPodBounded(d: WsData): void {
  if (d.upstream.bufferedAmount > WS_BUFFER_LIMIT) closeBoth(d, 1011, "backpressure");
}

/** A client's ping or pong, relayed to the pod as the same kind of frame (websocketHandler). */
function controlToPod(d: WsData, kind: "ping" | "pong", data: Buffer): void {
  if (d.closed) return;
  d.idle?.touch();
  d.upstream[kind](data);
  toPodBounded(d);
}

export function websocketHandler(open: Set<ServerWebSocket<WsData>>, onCount: (delta: 1 | -1) => void): WebSocketHandler<WsData> {
  return {
    // Bun drops a send() past the limit silently unless told to close: close instead.
    backpressureLimit: WS_BUFFER_LIMIT,
    closeOnBackpressureLimit: true,
    // No idle timer and no pings of Bun's own (its default: 120 s, pinging the client before
    // it expires): the route's idle time is the relay's watchdog alone, and a pong is then
    // always the client's answer to a ping it was relayed, never to one Portico made up, which
    // would otherwise re-arm the watchdog every 2 minutes and keep any tunnel open for good.
    idleTimeout: 0,
    sendPings: false,
    open(ws) {
      const d = ws.data;
      d.client = ws;
      open.add(ws);
      onCount(1);
      const pending = d.pending ?? [];
      d.pending = null;
      for (const f of pending) toClient(d, f);
      if (d.upstreamClose !== null) ws.close(d.upstreamClose.code, d.upstreamClose.reason);
      else if (d.closed || d.upstream.readyState >= 2) ws.close(1011, "upstream closed");
    },
    message(ws, msg) {
      const d = ws.data;
      if (d.closed) return;
      d.idle?.touch();
      d.bytesIn += size(msg);
      d.upstream.send(msg);
      toPodBounded(d);
    },
    // The client's control frames: re-arm the idle time and go on to the pod, as nginx relays
    // them. Bun has already answered a ping itself (it always does, measured on 1.4.5), so the
    // pod's pong to the relayed one reaches the client as a second, unsolicited pong, which
    // RFC 6455 §5.5.3 allows and asks no answer for; the pod sees the client's liveness as
    // behind nginx (a read deadline re-armed by pings stays met).
    ping: (ws, data) => controlToPod(ws.data, "ping", data),
    pong: (ws, data) => controlToPod(ws.data, "pong", data),
    close(ws, code, reason) {
      const d = ws.data;
      d.idle?.stop();
      open.delete(ws);
      onCount(-1);
      if (!d.closed) {
        d.closed = true;
        const c = sendableCode(code);
        closeUpstream(d.upstream, c, c === undefined ? undefined : reason);
      }
      d.onClose(d.bytesIn, d.bytesOut, d.error);
    },
  };
}
