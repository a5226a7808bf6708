// The request handler shared by the HTTP and HTTPS listeners: validate → route → redirect →
// limits → forward (or WebSocket relay) → stream back, with one access record per request.
import type { ServerWebSocket, WebSocketHandler } from "bun";
import type { Backend, Match } from "../../table/types.ts";
import { createBalancer, type Balancer } from "../upstream/balancer.ts";
import { gatewayLookup } from "../policies/gateway.ts";
import { meterRequestBody, pipelineGuard } from "./body.ts";
import { bufferRequestBody, createBodyBudget, type BodyBudget, type BufferedBody } from "./buffer.ts";
import { cidrMatcher } from "../../config/cidr.ts";
import { errorPath, errorRequestHeaders, fallbackFields, replaces } from "./error-pages.ts";
import { errorBodyBytes, errorResponse, ProxyError, statusOf, type ProxyErrorCode } from "../errors.ts";
import type { ExternalResolver } from "../upstream/external.ts";
import { createAttemptControl, forward } from "../upstream/forward.ts";
import { grpcErrorResponse, grpcStatusOf, isGrpc } from "../upstream/grpc-status.ts";
import { isGrpcBackend } from "../upstream/grpc.ts";
import { clientIpOf, downstreamHeaders, requestIdOf, upstreamHeaders, type ForwardContext } from "../upstream/headers.ts";
import { createInflight, type Inflight } from "./inflight.ts";
import { IDLE_TIMEOUT_S } from "./keepalive.ts";
import { POLICY_KINDS } from "../policies/registry.ts";
import { createPolicyRunner } from "../policies/run.ts";
import type { PolicyFlow } from "../policies/types.ts";
import { hstsValue, httpsRedirect, wantsHttpsRedirect } from "../policies/redirect.ts";
import { relayResponse } from "../upstream/respond.ts";
import type { AccessRecord, ProxyDeps, RequestServer } from "../types.ts";
import { targetOf, validateRequest } from "./validate.ts";
import { guardRequest, sweep, type Watchdog } from "../upstream/watchdog.ts";
import { connectUpstreamWs, isWebSocketUpgrade, upgradeClient, websocketHandler, type WsData } from "../upstream/websocket.ts";

export interface ProxyHandler {
  fetch(req: Request, server: RequestServer): Promise<Response | undefined>;
  readonly websocket: WebSocketHandler<WsData>;
  error(e: Error): Response;
  readonly inflight: Inflight;
  /** Close every relayed WebSocket (drain: 1001 Going Away, RFC 6455 §7.4.1). */
  closeWebSockets(code: number, reason: string): void;
  /** Abort every upstream request still running (end of the shutdown grace period). */
  abortInflight(): void;
  readonly balancer: Balancer;
}

// nginx sends every other method again after a failure (ngx_http_upstream_next); these only
// with proxy-next-upstream's `non_idempotent`.
const NON_IDEMPOTENT = new Set(["POST", "LOCK", "PATCH"]);

/** The statuses nginx's add_header (without `always`) applies to. */
const ADD_HEADER_STATUSES = new Set([200, 201, 204, 206, 301, 302, 303, 304, 307, 308]);

/** A policy's Set-Cookie lines (PolicyFlow.setCookies) on an answer with this status. */
function addCookies(h: Headers, status: number, c: PolicyFlow["setCookies"]): void {
  if (c === null || (!c.always && !ADD_HEADER_STATUSES.has(status))) return;
  for (const val of c.values) h.append("set-cookie", val);
}

/** The first hop's X-Forwarded-Proto ("https, http" lists the client's first). */
function clientScheme(xfp: string | null): "http" | "https" | null {
  if (xfp === null) return null;
  const first = xfp.split(",")[0]?.trim().toLowerCase();
  return first === "https" || first === "http" ? first : null;
}

function peerOf(req: Request, server: RequestServer): string {
  const a = server.requestIP(req)?.address ?? "";
  // An IPv4 client on a dual-stack socket shows up as ::ffff:a.b.c.d.
  return a.startsWith("::ffff:") && a.includes(".") ? a.slice(7) : a;
}

/** The upstream request fields a policy set (PolicyFlow.upstreamRequestHeaders): each replaces Portico's or the client's; null removes. */
function withPolicyFields(h: Headers, flow: PolicyFlow | null): Headers {
  const set = flow?.upstreamRequestHeaders;
  if (set == null) return h;
  for (const [k, val] of Object.entries(set)) {
    if (val === null) h.delete(k);
    else h.set(k, val);
  }
  return h;
}

export function createProxyHandler(
  deps: ProxyDeps & { balancer?: Balancer; external?: ExternalResolver; bodyBudget?: BodyBudget },
): ProxyHandler {
  const { config, hooks, log, scheme } = deps;
  const balancer = deps.balancer ?? createBalancer();
  // One per process when serving passes it (both listeners share it): --request-buffer-budget.
  const bodyBudget = deps.bodyBudget ?? createBodyBudget(config.requestBufferBudget);
  const isTrusted = cidrMatcher(config.trustedProxies);
  // Portico's own answers carry nginx's pages under --ingress-nginx-compat (status-page.ts).
  const compat = config.ingressNginxCompat;
  const inflight = createInflight();
  const sockets = new Set<ServerWebSocket<WsData>>();
  const hardStop = new AbortController();
  const runPolicies = createPolicyRunner(deps.policyKinds ?? POLICY_KINDS, { config });

  const emit = (r: AccessRecord) => {
    try {
      hooks?.onRequestDone?.(r);
    } catch {}
  };

  async function handle(req: Request, server: RequestServer): Promise<Response | undefined> {
    const started = Date.now();
    const t0 = performance.now();
    const peer = peerOf(req, server);
    const requestId = requestIdOf(req.headers);
    const rec: AccessRecord = {
      time: started, requestId, client: peer, method: req.method, host: "", path: "", status: 0,
      bytesIn: 0, bytesOut: 0, durationMs: 0, upstream: null, upstreamStatus: null, upstreamMs: null,
      ingress: null, service: null, websocket: false, error: null, scheme,
      protocol: server.transport ?? "h1", grpcStatus: null,
    };
    inflight.enter();
    let done = false;
    let guard: Watchdog | null = null;
    // The route's policies' view of the request, once they ran: their Set-Cookie lines go on
    // every later answer, and a stage may hold something until the request ends (flow.release).
    let flow: PolicyFlow | null = null;
    const finish = (status: number, error: string | null) => {
      if (done) return;
      done = true;
      inflight.leave();
      guard?.stop();
      if (flow !== null && flow.release !== null) flow.release();
      rec.status = status;
      rec.error = error;
      rec.durationMs = performance.now() - t0;
      emit(rec);
    };
    // RFC 9112 §6.3: an HTTP/1.1 request has a body only when Content-Length or
    // Transfer-Encoding says so (touching req.body would also make Bun build a stream for every
    // GET). An HTTP/2 or HTTP/3 request may carry DATA without either (RFC 9113 §8.1.1), and
    // Bun.serve adds neither, so a request of a method that can have content and declares no
    // length asks Bun whether a body stream exists: on HTTP/1.1 Bun answers null (measured).
    const cl = req.headers.get("content-length");
    const hasBody = (cl !== null && cl !== "0") || req.headers.has("transfer-encoding") || (cl === null && mayCarryContent(req.method) && req.body !== null);
    // Headers of every answer Portico gives itself (errors, redirects, policy answers), never
    // of a relayed one. Such an answer to a request with a body ends the connection, like the
    // answers that always do (errors.ts): the body may be unread, and what follows it on the
    // connection is not known to start a new request.
    const common: Record<string, string> = { "x-request-id": requestId };
    if (inflight.draining || hasBody) common.connection = "close";
    // Once switched off it stays off for the connection's later keep-alive idling too
    // (measured), so it is set back to IDLE_TIMEOUT_S just before the response ends; Bun
    // ignores the call once the response is complete, hence "before".
    let timerOff = false;
    const timerOffNow = () => {
      timerOff = true;
      server.timeout(req, 0);
    };
    const timerBack = () => {
      if (timerOff) server.timeout(req, IDLE_TIMEOUT_S);
    };
    // The route's error pages once it is known (null: none, or one was asked for already: nginx's
    // recursive_error_pages is off, so a failing error request gets Portico's own answer).
    let page: ((status: number, own: ProxyErrorCode | null, up?: Response) => Promise<Response> | null) | null = null;
    const fail = (e: ProxyError): Response | Promise<Response> => {
      if (page !== null) {
        const paged = page(statusOf(e.code), e.code);
        if (paged !== null) return paged;
      }
      timerBack();
      // A gRPC client reads failures from grpc-status, not from the HTTP status (grpc-status.ts);
      // asked only here, on the error path, so a request that succeeds never pays for it.
      const grpc = isGrpc(req.headers);
      // Our own answer's body is what the client gets (none for HEAD, RFC 9110 §9.3.2); a
      // gRPC client gets a Trailers-Only answer, no body.
      rec.bytesOut = req.method === "HEAD" || grpc ? 0 : errorBodyBytes(e.code, compat, req);
      if (grpc) rec.grpcStatus = grpcStatusOf(e.code);
      finish(grpc ? 200 : statusOf(e.code), e.code);
      if (e.code === "Internal") log.error("proxy internal error", { err: e.detail, requestId });
      const res = grpc ? grpcErrorResponse(e.code, common) : errorResponse(e.code, common, compat, req);
      if (flow !== null) addCookies(res.headers, res.status, flow.setCookies);
      return res;
    };

    try {
      const v = validateRequest(req);
      if (v instanceof ProxyError) return fail(v);
      rec.host = v.hostname;
      rec.path = v.target.path;
      let pathAndQuery = v.target.path + v.target.query;

      const table = deps.table();
      // Gateway API rules first where a Gateway serves the host; the Ingress table decides the
      // rest (docs/design.md "Gateway API"). Absent for Ingress-only tables: one check.
      const gw = table.gateway;
      const match: Match | null =
        (gw != null ? gatewayLookup(gw, scheme === "https", v.hostname, req.method, v.target.path, v.target.query, req.headers) : null) ??
        deps.lookup(table, v.hostname, v.target.path);
      if (match === null) return fail(new ProxyError("NoRoute"));
      const route = match.route;
      let backend = route.backend;
      rec.ingress = `${route.ingress.namespace}/${route.ingress.name}`;
      rec.service = backend.id;

      // Behind a trusted TLS-terminating proxy the client's scheme is the one it reports
      // (X-Forwarded-Proto), or every request would be redirected to itself forever.
      const trusted = isTrusted(peer);
      // The client's address (the peer, or X-Forwarded-For from a trusted proxy), once: the
      // policies, the error request and the forwarded X-Real-IP all use it.
      const clientIp = clientIpOf(peer, req.headers.get("x-forwarded-for"), trusted, isTrusted);
      const seen = trusted ? clientScheme(req.headers.get("x-forwarded-proto")) ?? scheme : scheme;
      const hsts = seen === "https" ? hstsValue(config, route) : null;
      if (hsts !== null) common["strict-transport-security"] = hsts;
      let upstreamHost: string | null = null;
      // Per-route policies, in their fixed stage order, with the HTTPS redirect and the
      // no-endpoints check between them where ingress-nginx makes them (docs/design.md,
      // "Annotations and policies"). A route without any pays this null check, and gets the
      // HTTPS redirect here and the endpoints check below.
      const stages = route.options.stages;
      const opts = route.options;
      const responseTimeoutMs = opts.responseTimeoutMs ?? config.responseTimeoutMs;
      const connectTimeoutMs = opts.connectTimeoutMs ?? config.connectTimeoutMs;
      let added: Readonly<Record<string, string>> | null = null;
      let removeHeaders: readonly string[] | null = null;
      if (stages === null) {
        if (wantsHttpsRedirect(seen, route)) {
          const redirect = httpsRedirect(config, v.hostname, pathAndQuery, route, common);
          if (redirect === null) return fail(new ProxyError("BadRequest", "no host to redirect to"));
          finish(redirect.status, null);
          return redirect;
        }
      } else {
        flow = {
          req, route, match, hostname: v.hostname, path: v.target.path, query: v.target.query, scheme: seen,
          connectionScheme: scheme, host: v.host, port: v.port, localPort: server.port ?? (scheme === "https" ? config.httpsPort : config.httpPort), trusted, config,
          clientIp,
          requestId, underscores: config.enableUnderscoresInHeaders, connectTimeoutMs, responseTimeoutMs,
          maxResponseHeaderBytes: config.maxResponseHeaderSize,
          responseHeaders: common, upstreamResponseHeaders: null, upstreamRequestHeaders: null, setCookies: null,
          pathAndQuery, backend, removeHeaders: null, choice: null, release: null, upstreamHost,
          tls: () => (scheme === "https" ? server.tlsOf?.(req) ?? null : null),
          log,
        };
        const answer = await runPolicies(stages, flow);
        if (answer !== null) {
          addCookies(answer.headers, answer.status, flow.setCookies);
          finish(answer.status, null);
          return answer;
        }
        pathAndQuery = flow.pathAndQuery;
        backend = flow.backend;
        added = flow.upstreamResponseHeaders;
        removeHeaders = flow.removeHeaders;
        upstreamHost = flow.upstreamHost;
        rec.service = backend.id;
      }
      // Bun.serve cannot send response trailers, and every gRPC answer but a Trailers-Only one
      // ends with them (gRPC's PROTOCOL-HTTP2.md); Bun's Server is the one RequestServer without
      // a `transport`. On the HTTPS port a gRPC route moves the port to node:http2
      // (serving/https.ts), so this meets only calls that reached the outgoing Bun.serve server
      // during that hand-over's drain: UNAVAILABLE, which a retry on a new connection gets past.
      // The plain port has no such listener (node:http2's cleartext server cannot serve HTTP/1.1
      // beside h2c), so a gRPC call there is UNIMPLEMENTED with the reason. Either way the call
      // never reaches the backend and never ends without a status (docs/design.md, "HTTP/2 and gRPC").
      if (server.transport === undefined && isGrpcBackend(backend)) {
        const status = scheme === "http" ? GRPC_UNIMPLEMENTED : GRPC_UNAVAILABLE;
        rec.grpcStatus = status;
        finish(200, "GrpcNeedsTrailers");
        const message = scheme === "http" ? "gRPC is served over TLS only: cleartext HTTP/2 here cannot send trailers" : "listener changing over, retry";
        return new Response(null, { status: 200, headers: { ...common, "content-type": "application/grpc", "grpc-status": String(status), "grpc-message": message } });
      }
      const pages = route.errorPages;
      if (pages !== undefined) {
        // The error request: CUSTOM_ERRORS in ingress-nginx's nginx.tmpl, sent to the error backend
        // with the client's method (error_page to a named location keeps it), no body, the path
        // `/` and the client's query; its answer is relayed as it is ("NGINX does not change the
        // response", docs/user-guide/custom-errors.md). No error backend: 404, the answer of
        // ingress-nginx's built-in default server.
        const errorPage = async (to: Backend | null, status: number): Promise<Response> => {
          try {
            if (to === null) return await fail(new ProxyError("NoRoute", `custom-http-errors ${status}: no default backend`));
            const ctx: ForwardContext = {
              peer, trusted, scheme, host: v.host, port: v.port, requestId, underscores: config.enableUnderscoresInHeaders, remove: removeHeaders,
            };
            const headers = errorRequestHeaders(req.headers, ctx, clientIp, route, status, targetOf(req.url).target);
            const ac = new AbortController();
            const control = createAttemptControl(ac);
            guard?.stop();
            guard = guardRequest(req.signal, hardStop.signal, control);
            const result = await forward(
              {
                method: req.method, pathAndQuery: errorPath(v.target.query), headers, body: null, idempotent: !NON_IDEMPOTENT.has(req.method),
                retry: null, backend: to, clientSignal: req.signal, stopSignal: hardStop.signal, signal: ac.signal,
                responseTimeoutMs: config.responseTimeoutMs, connectTimeoutMs: config.connectTimeoutMs, maxHeaderBytes: config.maxResponseHeaderSize,
                balancer, hooks, external: deps.external, record: rec,
              },
              control,
            );
            const up = result.response;
            rec.service = to.id;
            rec.upstream = result.upstream.authority;
            rec.upstreamStatus = up.status;
            rec.upstreamMs = result.upstreamMs;
            const out = downstreamHeaders(up.headers, requestId, hsts, null, result.scan, compat);
            // The client's body may be unread (no endpoint, or a pod that answered first).
            if (hasBody) out.set("connection", "close");
            return await relayResponse({
              up, req, headers: out, draining: inflight.draining,
              idleMs: config.streamIdleTimeoutMs, control, rec, finish, timerOffNow, timerBack, grpc: isGrpcBackend(to),
            });
          } catch (e) {
            if (req.signal.aborted || hardStop.signal.aborted) {
              finish(499, req.signal.aborted ? "ClientClosed" : "Shutdown");
              return new Response(null, { status: 499 });
            }
            return await fail(e instanceof ProxyError ? e : new ProxyError("Internal", String((e as Error)?.stack ?? e)));
          }
        };
        page = (status, own, up) => {
          if (!replaces(pages, status, own)) return null;
          page = null;
          up?.body?.cancel().catch(() => {});
          return errorPage(pages.backend, status);
        };
      }
      // default-backend takes the requests of a Service without endpoints (docs/design.md, "Error pages").
      let extra: Readonly<Record<string, string>> | null = null;
      if (route.fallback !== undefined && backend === route.backend && backend.status !== "ok") {
        backend = route.fallback;
        rec.service = backend.id;
        extra = fallbackFields(req.headers, route, requestId);
      }
      if (backend.status !== "ok" || backend.endpoints.length === 0) return fail(new ProxyError("NoEndpoints", backend.status));

      const idleMs = opts.streamIdleTimeoutMs ?? config.streamIdleTimeoutMs;
      // Body limit (--max-body-size / portico.dev/max-body-size): a declared length over the
      // limit is refused before any upstream is contacted.
      const limit = opts.maxBodySize ?? config.maxBodySize;
      if (limit !== null && cl !== null && Number(cl) > limit) return fail(new ProxyError("BodyTooLarge"));
      // Bun hands a GET, HEAD or TRACE request no body (req.body is null; it skips the bytes)
      // and its fetch refuses to send one (measured on 1.4.5), so such a body cannot be
      // forwarded as nginx would. Forwarding the request without it would change its meaning
      // silently (a search sent as GET with a query body would run unfiltered); RFC 9110
      // §9.3.1-2 warns that content on GET and HEAD "might lead some implementations to reject
      // the request", and §9.3.8 forbids it on TRACE. So: 400, and the connection closes.
      const body = hasBody ? req.body : null;
      if (hasBody && body === null) return fail(new ProxyError("BadRequest", `${req.method} with a body`));

      // Bun's per-request timer (the listener's idleTimeout, or server.timeout()) runs from the
      // start of the request and is not pushed back by body bytes (measured: a 2 s timer kills
      // an upload sending every 300 ms at ~4 s; uSockets ticks every 4 s). Our own watchdogs
      // answer 504 and close idle streams, so Bun's timer is switched off wherever a request
      // may outlive it: uploads, response deadlines near IDLE_TIMEOUT_S, streamed responses
      // (below). The call is not free (~15% of a small proxied request), hence not always.
      if (hasBody || responseTimeoutMs > (IDLE_TIMEOUT_S - 10) * 1000) timerOffNow();

      const ctx: ForwardContext = {
        peer, trusted, scheme, host: v.host, port: v.port, requestId, underscores: config.enableUnderscoresInHeaders, remove: removeHeaders, extra,
        upstreamHost,
      };

      // Pipelining: Bun runs the handler as soon as a request head is parsed, and when the
      // same read holds another request it closes the connection and aborts this one, whose
      // answer is then never written (measured on 1.4.5; docs/design.md, "Request framing and
      // bodies"). The rest of the read is parsed within the same I/O callback, so one turn
      // later the signal tells (some more over TLS: pipelineGuard); a request Bun has given up
      // on never reaches an upstream. The node:http2 listener (a RequestServer with a
      // transport) queues pipelined requests itself, so one turn does there.
      await pipelineGuard(scheme === "https" && server.transport === undefined);
      if (req.signal.aborted) {
        finish(499, "ClientClosed");
        return new Response(null, { status: 499 });
      }

      if (isWebSocketUpgrade(req)) {
        rec.websocket = true;
        const proto = req.headers.get("sec-websocket-protocol");
        const { ws, upstream } = await connectUpstreamWs({
          backend, balancer, choice: flow?.choice, pathAndQuery,
          headers: withPolicyFields(upstreamHeaders(req.headers, ctx, clientIp, true), flow),
          protocols: proto === null ? [] : proto.split(",").map((s) => s.trim()).filter((s) => s !== ""),
          timeoutMs: responseTimeoutMs, external: deps.external,
          record: rec,
        });
        const wsCookie = flow?.choice?.setCookie() ?? null;
        if (wsCookie !== null) common["set-cookie"] = wsCookie;
        rec.upstream = upstream.authority;
        rec.upstreamStatus = 101;
        rec.upstreamMs = performance.now() - t0;
        const ok = upgradeClient(req, server, ws, common, idleMs, (bytesIn, bytesOut, error) => {
          rec.bytesIn = bytesIn;
          rec.bytesOut = bytesOut;
          finish(101, error);
        });
        if (!ok) return fail(new ProxyError("BadRequest", "upgrade refused"));
        return undefined;
      }

      // One abort switch per request (forward.ts says why not AbortSignal.any). The client's
      // signal must reach the upstream fetch, or a client that leaves before the response
      // headers does not abort it; the guard goes with the request (finish() stops it).
      const abort = new AbortController();
      const clientSignal = req.signal;
      const control = createAttemptControl(abort);
      if (hardStop.signal.aborted) abort.abort(hardStop.signal.reason);
      else if (clientSignal.aborted) abort.abort(clientSignal.reason);
      // Polled by the shared watchdog sweep (watchdog.ts says why not an abort listener).
      // Through the control: a retry after a deadline replaces the request's switch.
      else guard = guardRequest(clientSignal, hardStop.signal, control);
      const metered = body !== null
        ? meterRequestBody(body, {
            limit,
            declared: cl === null ? null : Number(cl),
            gapMs: config.clientBodyTimeoutMs,
            minRate: config.clientBodyMinRate,
            clientGone: () => clientSignal.aborted,
            onProgress: () => control.touch(),
            onAbort: (err) => control.abort(err),
          })
        : null;
      // Request buffering (proxy-request-buffering, default on): the body is read whole
      // before any upstream is contacted, within the route's bound and the process budget
      // (buffer.ts; docs/design.md, "Request buffering"). A route with `off`, or a request
      // without a body, skips it, and so does a gRPC call: its messages stream both ways, so a
      // client-streaming or bidirectional call could never finish its body before an answer.
      const streamed = isGrpcBackend(backend);
      const bufferSize = streamed ? 0 : opts.requestBufferSize ?? config.requestBufferSize;
      let held: BufferedBody | null = null;
      let result;
      try {
        if (metered !== null && bufferSize > 0) held = await bufferRequestBody(metered.stream, cl === null ? null : Number(cl), bufferSize, bodyBudget);
        result = await forward(
          {
            method: req.method, pathAndQuery, headers: withPolicyFields(upstreamHeaders(req.headers, ctx, clientIp, false, v.filtered), flow),
            body: held?.body ?? metered?.stream ?? null, idempotent: !NON_IDEMPOTENT.has(req.method), retry: opts.retry,
            backend, clientSignal, stopSignal: hardStop.signal, signal: abort.signal, responseTimeoutMs,
            connectTimeoutMs, maxHeaderBytes: config.maxResponseHeaderSize,
            balancer, choice: flow?.choice, hooks, external: deps.external, record: rec,
          },
          control,
        );
      } finally {
        held?.release();
        rec.bytesIn = metered?.bytes() ?? 0;
      }
      const up = result.response;
      if (page !== null) {
        const paged = page(up.status, null, up);
        if (paged !== null) return await paged;
      }
      rec.upstream = result.upstream.authority;
      rec.upstreamStatus = up.status;
      rec.upstreamMs = result.upstreamMs;
      const down = downstreamHeaders(up.headers, requestId, hsts, added, result.scan, compat);
      if (flow !== null) {
        addCookies(down, up.status, flow.setCookies);
        // Affinity's cookie, when this request chose a new pod (proxy/policies/affinity.ts).
        const cookie = flow.choice?.setCookie() ?? null;
        if (cookie !== null) down.append("set-cookie", cookie);
      }
      const out = relayResponse({
        up, req, headers: down, draining: inflight.draining,
        idleMs, control, rec, finish, timerOffNow, timerBack, grpc: streamed, scan: result.scan,
      });
      // Ready at once for most small answers (respond.ts): no extra turn through a promise.
      return out instanceof Response ? out : await out;
    } catch (e) {
      // Bun has answered 400 itself and closed (body.ts): recorded as what the client saw.
      if (e instanceof ProxyError && e.code === "BadFraming") return fail(e);
      if (req.signal.aborted || hardStop.signal.aborted) {
        finish(499, req.signal.aborted ? "ClientClosed" : "Shutdown");
        return new Response(null, { status: 499 });
      }
      if (e instanceof ProxyError) return fail(e);
      return fail(new ProxyError("Internal", String((e as Error)?.stack ?? e)));
    }
  }

  return {
    fetch: handle,
    websocket: websocketHandler(sockets, (d) => {
      try {
        hooks?.onWebsocket?.(d);
      } catch {}
    }),
    error(e) {
      log.error("proxy handler crashed", { err: String(e?.stack ?? e) });
      return errorResponse("Internal");
    },
    inflight,
    closeWebSockets(code, reason) {
      for (const ws of sockets) ws.close(code, reason);
    },
    abortInflight() {
      const reason = new Error("shutdown");
      hardStop.abort(reason);
      // Every running request's guard sees hardStop now rather than at the next tick.
      sweep();
    },
    balancer,
  };
}

/** gRPC statuses 12 and 14 (gRPC's statuscodes.md). */
const GRPC_UNIMPLEMENTED = 12;
const GRPC_UNAVAILABLE = 14;

/** Bun.serve gives these no body stream (docs/design.md, "Bun facts measured here"). */
function mayCarryContent(method: string): boolean {
  return method !== "GET" && method !== "HEAD" && method !== "TRACE";
}
