// Step 5, forward: the body's checks, then the request to the chosen backend (upstream/forward.ts:
// endpoint choice, deadlines, retries) or the WebSocket's upgrade (upstream/websocket.ts). The
// error request of error-pages.ts goes through the same forwardTo.
import type { Backend } from "../../table/types.ts";
import { ProxyError } from "../../http/errors.ts";
import type { ForwardInput, ForwardResult, RequestControl } from "../upstream/forward-types.ts";
import { createAttemptControl, forward } from "../upstream/forward.ts";
import { isGrpcBackend } from "../upstream/grpc.ts";
import { upstreamHeaders, type ForwardContext } from "../../http/headers.ts";
import { guardRequest } from "../upstream/watchdog.ts";
import { connectUpstreamWs, upgradeClient, UpgradeDeclined } from "../upstream/websocket.ts";
import { bodyMinRate, meterRequestBody } from "./body.ts";
import { bufferRequestBody, type BufferedBody } from "./buffer.ts";
import type { Exchange } from "./context.ts";
import { IDLE_TIMEOUT_S } from "./keepalive.ts";

// nginx sends every other method again after a failure (ngx_http_upstream_next); these only
// with proxy-next-upstream's `non_idempotent`.
const NON_IDEMPOTENT = new Set(["POST", "LOCK", "PATCH"]);

/** The body limit and the methods whose body cannot be forwarded; Bun's timer off where the request may outlive it. */
export function checkBody(x: Exchange): ProxyError | null {
  const { cl, hasBody } = x;
  const opts = x.route.options;
  // Body limit (--max-body-size / portico.dev/max-body-size): a declared length over the
  // limit is refused before any upstream is contacted.
  const limit = opts.maxBodySize ?? x.p.config.maxBodySize;
  if (limit !== null && cl !== null && Number(cl) > limit) return new ProxyError("BodyTooLarge");
  // Bun hands a GET, HEAD or TRACE request no body (req.body is null; it skips the bytes)
  // and its fetch refuses to send one (measured on 1.4.5), so such a body cannot be
  // forwarded as nginx would. Forwarding the request without it would change its meaning
  // silently (a search sent as GET with a query body would run unfiltered); RFC 9110
  // §9.3.1-2 warns that content on GET and HEAD "might lead some implementations to reject
  // the request", and §9.3.8 forbids it on TRACE. So: 400, and the connection closes.
  if (hasBody && x.req.body === null) return new ProxyError("BadRequest", `${x.req.method} with a body`);
  // Bun's per-request timer (the listener's idleTimeout, or server.timeout()) runs from the
  // start of the request and is not pushed back by body bytes (measured: a 2 s timer kills
  // an upload sending every 300 ms at ~4 s; uSockets ticks every 4 s). Our own watchdogs
  // answer 504 and close idle streams, so Bun's timer is switched off wherever a request
  // may outlive it: uploads, response deadlines near IDLE_TIMEOUT_S, streamed responses
  // (respond.ts). The call is not free (~15% of a small proxied request), hence not always.
  if (hasBody || x.responseTimeoutMs > (IDLE_TIMEOUT_S - 10) * 1000) x.timerOffNow();
  return null;
}

// One context object refilled per request: upstreamHeaders() reads it synchronously and keeps
// nothing of it, so no request sees another's (one object fewer per plain GET,
// bench/allocations.ts).
const fc: { -readonly [K in keyof ForwardContext]-?: ForwardContext[K] } = {
  peer: "", trusted: false, appendForwardedFor: false, scheme: "http", host: "", port: null, proxyHttps: false, requestId: "",
  underscores: false, remove: null, extra: null, upstreamHost: null, connection: null,
};

/** What the upstream request carries of the request and the route (headers.ts); valid until the next call. */
function forwardContext(x: Exchange): ForwardContext {
  fc.peer = x.peer;
  fc.trusted = x.trusted;
  fc.appendForwardedFor = x.appendForwardedFor;
  fc.scheme = x.p.scheme;
  fc.host = x.host;
  fc.port = x.proxyPort ?? x.port;
  fc.proxyHttps = x.proxyPort === "443";
  fc.requestId = x.requestId;
  fc.underscores = x.p.config.enableUnderscoresInHeaders;
  fc.remove = x.removeHeaders;
  fc.extra = x.extra;
  fc.upstreamHost = x.upstreamHost;
  fc.connection = x.connectionField;
  return fc;
}

/** The upstream request fields a policy set (PolicyFlow.upstreamRequestHeaders): each replaces Portico's or the client's; null removes. */
function withPolicyFields(h: Headers, x: Exchange): Headers {
  const set = x.upstreamRequestHeaders;
  if (set === null) return h;
  for (const [k, val] of Object.entries(set)) {
    if (val === null) h.delete(k);
    else h.set(k, val);
  }
  return h;
}

/**
 * The request's abort switch, made before its body is read. One per request (upstream/forward.ts
 * says why not AbortSignal.any): the client's signal must reach the upstream fetch, or a client
 * that leaves before the response headers does not abort it; the guard goes with the request
 * (finish() stops it), polled by the shared watchdog sweep (watchdog.ts says why not an abort
 * listener), through the control: a retry after a deadline replaces the request's switch.
 */
export function arm(x: Exchange): void {
  const abort = new AbortController();
  const control = createAttemptControl(abort);
  x.abort = abort;
  x.control = control;
  const clientSignal = x.req.signal;
  const stop = x.p.hardStop.signal;
  if (stop.aborted) abort.abort(stop.reason);
  else if (clientSignal.aborted) abort.abort(clientSignal.reason);
  else {
    x.guard?.stop();
    x.guard = guardRequest(clientSignal, stop, control);
  }
}

/**
 * The request to `to` on the switch arm() made: the route's request (`errorRequest` false: its
 * retries, endpoint choice and deadlines) or error-pages.ts's (none of those: the flags' deadlines).
 */
export function forwardTo(
  x: Exchange, to: Backend, pathAndQuery: string, headers: Headers, body: ForwardInput["body"], errorRequest: boolean,
): Promise<ForwardResult> {
  const { p, req } = x;
  const c = p.config;
  return forward(
    {
      method: req.method, pathAndQuery, headers, body, idempotent: !NON_IDEMPOTENT.has(req.method),
      retry: errorRequest ? null : x.route.options.retry,
      backend: to, clientSignal: req.signal, stopSignal: p.hardStop.signal, signal: (x.abort as AbortController).signal,
      responseTimeoutMs: errorRequest ? c.responseTimeoutMs : x.responseTimeoutMs,
      connectTimeoutMs: errorRequest ? c.connectTimeoutMs : x.connectTimeoutMs,
      maxHeaderBytes: c.maxResponseHeaderSize,
      balancer: p.balancer, choice: errorRequest ? null : x.choice, hooks: p.deps.hooks, external: p.external, record: x.rec,
      slot: x,
      upstreamTls: errorRequest ? null : x.route.options.upstreamTls,
    },
    x.control as RequestControl,
  );
}

/**
 * The route's request upstream. Without a body, the upstream call's own promise: no async frame
 * of its own for the plain request. With one (an async function around the call, as at first
 * for every request) a small proxied GET was 0.981× main; without it 1.002×
 * (bench/paired.ts; bench/results/pipeline-vs-main.md).
 */
export function forwardRequest(x: Exchange): Promise<ForwardResult> {
  if (x.hasBody) return forwardWithBody(x);
  arm(x);
  const headers = withPolicyFields(upstreamHeaders(x.req.headers, forwardContext(x), x.clientIp, false, x.filtered), x);
  return forwardTo(x, x.backend, x.pathAndQuery, headers, null, false);
}

/** The request with its body metered and (proxy-request-buffering) held whole first. */
async function forwardWithBody(x: Exchange): Promise<ForwardResult> {
  const { p, req, cl } = x;
  const c = p.config;
  const opts = x.route.options;
  arm(x);
  const control = x.control as RequestControl;
  const metered = meterRequestBody(req.body as ReadableStream<Uint8Array>, {
    limit: opts.maxBodySize ?? c.maxBodySize,
    declared: cl === null ? null : Number(cl),
    gapMs: c.clientBodyTimeoutMs,
    minRate: bodyMinRate(c.clientBodyMinRate),
    clientGone: () => req.signal.aborted,
    // The node listeners (a RequestServer with a transport) hand over a body only once its
    // message has ended; Bun.serve's HTTP/1.1 ends a chunked body before its tail is parsed.
    endIsFinal: x.server.transport !== undefined,
    onProgress: () => control.touch(),
    onAbort: (err) => control.abort(err),
  });
  // Request buffering (proxy-request-buffering, default on): the body is read whole
  // before any upstream is contacted, within the route's bound and the process budget
  // (buffer.ts; docs/design.md, "Request buffering"). A route with `off`, or a request
  // without a body, skips it, and so does a gRPC call: its messages stream both ways, so a
  // client-streaming or bidirectional call could never finish its body before an answer.
  const bufferSize = isGrpcBackend(x.backend) ? 0 : opts.requestBufferSize ?? c.requestBufferSize;
  let held: BufferedBody | null = null;
  try {
    const headers = withPolicyFields(upstreamHeaders(req.headers, forwardContext(x), x.clientIp, false, x.filtered), x);
    if (bufferSize > 0) held = await bufferRequestBody(metered.stream, cl === null ? null : Number(cl), bufferSize, p.bodyBudget);
    // A mirror's copy of the body (kinds/mirror.ts): only a body held whole, never a stream.
    if (x.bodyTap !== null && held !== null && held.body instanceof Uint8Array) x.bodyTap(held.body);
    return await forwardTo(x, x.backend, x.pathAndQuery, headers, held?.body ?? metered.stream, false);
  } finally {
    held?.release();
    x.rec.bytesIn = metered.bytes();
  }
}

/**
 * A WebSocket handshake: the pod's socket, then the client's upgrade (undefined: Bun answered
 * 101). A pod that answers other than 101 has its answer relayed as an ordinary proxied answer
 * (a ForwardResult for the pipeline's error pages and relay), as nginx does: until the pod says
 * 101 the handshake is a plain GET to it (docs/design.md, "WebSocket handshakes the pod
 * refuses").
 */
export async function forwardWebSocket(x: Exchange): Promise<ProxyError | ForwardResult | undefined> {
  const { p, req, rec } = x;
  rec.websocket = true;
  const proto = req.headers.get("sec-websocket-protocol");
  let connected;
  try {
    connected = await connectUpstreamWs({
      backend: x.backend, balancer: p.balancer, choice: x.choice, pathAndQuery: x.pathAndQuery,
      headers: withPolicyFields(upstreamHeaders(req.headers, forwardContext(x), x.clientIp, true), x),
      protocols: proto === null ? [] : proto.split(",").map((s) => s.trim()).filter((s) => s !== ""),
      timeoutMs: x.responseTimeoutMs, external: p.external,
      record: rec, upstreamTls: x.route.options.upstreamTls,
    });
  } catch (e) {
    if (!(e instanceof UpgradeDeclined) || e.answer === null) throw e;
    // The answer's body is relayed under the request's switch (arm): a client that leaves, the
    // body idle timeout or the shutdown's end gives it up and releases the pod's connection.
    arm(x);
    const answer = e.answer;
    const signal = (x.abort as AbortController).signal;
    if (signal.aborted) answer.abort(signal.reason);
    else signal.addEventListener("abort", () => answer.abort(signal.reason), { once: true });
    // The refusal is the pod's answer to a plain GET (docs/design.md "WebSocket handshakes the
    // pod refuses"); connectUpstreamWs kept its attempt for --access-log-template's $upstream_*,
    // so an error page that takes it starts a second group after it, and the relay records its
    // body's length (respond.ts).
    return { response: answer.response, upstream: e.upstream, upstreamMs: performance.now() - x.t0 };
  }
  const { ws } = connected;
  const wsCookie = x.choice?.setCookie() ?? null;
  if (wsCookie !== null) x.responseHeaders["set-cookie"] = wsCookie;
  rec.upstreamStatus = 101;
  rec.upstreamMs = performance.now() - x.t0;
  // The route's idle time is its proxy-read-timeout unless stream-idle-timeout is set
  // (annotations/timeouts.ts): nginx closes a tunnel quiet both ways for proxy_read_timeout.
  const idleMs = x.route.options.streamIdleTimeoutMs ?? p.config.streamIdleTimeoutMs;
  const ok = upgradeClient(req, x.server, ws, x.responseHeaders, idleMs, (bytesIn, bytesOut, error) => {
    rec.bytesIn = bytesIn;
    rec.bytesOut = bytesOut;
    x.finish(101, error);
  });
  return ok ? undefined : new ProxyError("BadRequest", "upgrade refused");
}
