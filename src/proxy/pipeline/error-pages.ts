// Error pages as ingress-nginx's template makes them (rootfs/etc/nginx/template/nginx.tmpl at
// dbb11b92): `error_page N = @custom_<upstream>_N` in the location (~1398-1405), and the named
// location CUSTOM_ERRORS (~834-866) that proxies the error request. docs/design.md, "Error
// pages". The compiler resolves which backend (compile/error-pages.ts); this file builds the
// requests, decides which answers are replaced, and wraps the pipeline's own forward and relay
// steps (forward.ts, relay.ts) around the error request.
import type { Backend, Route, RouteErrorPages } from "../../table/types.ts";
import { ProxyError, type ProxyErrorCode } from "../../http/errors.ts";
import { dropped, type ForwardContext } from "../../http/headers.ts";
import { gone, isGone, ownAnswer } from "./answer.ts";
import type { Exchange } from "./context.ts";
import { arm, forwardTo } from "./forward.ts";
import { relay } from "./relay.ts";
import { targetOf } from "../../request/target.ts";
import { newGroup } from "../../log/upstream-tries.ts";

/**
 * Portico's own answers nginx's error_page would catch for a route: the 503 of a backend
 * without endpoints (ingress-nginx's Lua `ngx.exit(503)` in the rewrite phase, balancer.lua
 * `_M.rewrite`) and the 502/504 nginx makes when the upstream fails. error_page applies to
 * those whatever proxy_intercept_errors says (that directive covers the pod's own answers
 * only). Answers that end the connection (400, 413...: errors.ts CLOSES) and the 404 of no
 * route are left as they are.
 */
const OWN: ReadonlySet<ProxyErrorCode> = new Set<ProxyErrorCode>([
  "NoEndpoints", "UpstreamConnect", "UpstreamReset", "UpstreamAddressForbidden", "UpstreamInvalid", "UpstreamTimeout",
]);

/** Whether `status` from the pod (`own` false) or from Portico (`own` true, with its code) goes to the error backend. */
export function replaces(pages: RouteErrorPages, status: number, own: ProxyErrorCode | null): boolean {
  if (own !== null ? !OWN.has(own) : !pages.intercept) return false;
  return pages.codes.includes(status);
}

/** The error request's path: CUSTOM_ERRORS `rewrite (.*) / break;` replaces the path and keeps the arguments (nginx appends none when the replacement has no `?`). */
export function errorPath(query: string): string {
  return `/${query}`;
}

/**
 * The location's variables (nginx.tmpl `set $namespace`... from getIngressInformation in
 * template.go): the route's Ingress and the Service its path names, the port as written.
 * nginx sends no field whose proxy_set_header value is empty (a default route has no Ingress).
 */
function setFields(out: Headers | Record<string, string>, route: Route, incoming: Headers, code: number, requestId: string): void {
  const set = (k: string, v: string | null) => {
    if (v === null || v === "") return;
    if (out instanceof Headers) out.set(k, v);
    else out[k] = v;
  };
  const b = route.backend;
  const resource = b.service.startsWith("resource:");
  set("x-code", String(code));
  set("x-format", incoming.get("accept"));
  set("x-namespace", route.ingress.namespace);
  set("x-ingress-name", route.ingress.name);
  set("x-service-name", resource ? "" : b.service);
  set("x-service-port", resource ? "" : b.port);
  set("x-request-id", requestId);
}

/**
 * Headers of the error request. CUSTOM_ERRORS sets X-Code, X-Format ($http_accept),
 * X-Original-URI ($request_uri), X-Namespace, X-Ingress-Name, X-Service-Name, X-Service-Port,
 * X-Request-ID ($req_id), X-Forwarded-For ($remote_addr) and Host ($best_http_host); the
 * client's other fields pass (proxy_pass_request_headers), less those nginx's proxy module
 * blanks (Connection, Keep-Alive, TE, Expect, Upgrade) and, here, those upstreamHeaders()
 * never forwards (hop-by-hop, unchecked forwarding fields, names with `_`) and those a policy
 * removed (basic authentication's Authorization). No body is sent, so no framing fields.
 */
export function errorRequestHeaders(
  incoming: Headers,
  ctx: ForwardContext,
  clientIp: string,
  route: Route,
  code: number,
  requestUri: string,
): Headers {
  const listed = new Set((incoming.get("connection") ?? "").split(",").map((s) => s.trim().toLowerCase()));
  const out = new Headers();
  for (const [k, v] of incoming) {
    if (listed.has(k) || dropped(k, ctx, true) || k === "content-length") continue;
    out.append(k, v);
  }
  if (ctx.remove) for (const n of ctx.remove) out.delete(n);
  if (ctx.host !== "") out.set("host", ctx.host);
  setFields(out, route, incoming, code, ctx.requestId);
  out.set("x-original-uri", requestUri);
  out.set("x-forwarded-for", clientIp);
  return out;
}

/**
 * Fields added to a request the no-endpoints fallback sends to the default-backend Service:
 * nginx.tmpl ~1380-1388 sets X-Code 503, X-Format, X-Namespace, X-Ingress-Name,
 * X-Service-Name, X-Service-Port and X-Request-ID in a location whose backend was switched
 * (`custom-default-backend-` upstream), and ingress-nginx's e2e default_backend.go expects them.
 */
export function fallbackFields(incoming: Headers, route: Route, requestId: string): Record<string, string> {
  const out: Record<string, string> = {};
  setFields(out, route, incoming, 503, requestId);
  return out;
}

/**
 * The error backend's answer instead of `status` (Portico's own with its code `own`, or the
 * pod's `up`), when the route's error pages take it; null otherwise. Once only: nginx's
 * recursive_error_pages is off, so a failing error request gets Portico's own answer.
 */
export function errorPage(x: Exchange, status: number, own: ProxyErrorCode | null, up?: Response): Promise<Response> | null {
  const pages = x.pages;
  if (pages === null || !replaces(pages, status, own)) return null;
  x.pages = null;
  up?.body?.cancel().catch(() => {});
  return sendErrorRequest(x, pages.backend, status);
}

/**
 * The error request: CUSTOM_ERRORS in ingress-nginx's nginx.tmpl, sent to the error backend
 * with the client's method (error_page to a named location keeps it), no body, the path `/`
 * and the client's query; its answer is relayed as it is ("NGINX does not change the
 * response", docs/user-guide/custom-errors.md). No error backend: 404, the answer of
 * ingress-nginx's built-in default server.
 */
async function sendErrorRequest(x: Exchange, to: Backend | null, status: number): Promise<Response> {
  try {
    if (to === null) return ownAnswer(x, new ProxyError("NoRoute", `custom-http-errors ${status}: no default backend`));
    const ctx: ForwardContext = {
      peer: x.peer, trusted: x.trusted, scheme: x.p.scheme, host: x.host, port: x.proxyPort ?? x.port, proxyHttps: x.proxyPort === "443", requestId: x.requestId,
      underscores: x.p.config.enableUnderscoresInHeaders, remove: x.removeHeaders,
    };
    const headers = errorRequestHeaders(x.req.headers, ctx, x.clientIp, x.route, status, targetOf(x.req.url).target);
    arm(x);
    // A new upstream group for $upstream_* (nginx's error_page to a named location: " : ").
    newGroup(x.rec.tries);
    const result = await forwardTo(x, to, errorPath(x.query), headers, null, true);
    x.rec.service = to.id;
    return await relay(x, to, result, true);
  } catch (e) {
    if (isGone(x)) return gone(x);
    return ownAnswer(x, e instanceof ProxyError ? e : new ProxyError("Internal", String((e as Error)?.stack ?? e)));
  }
}
