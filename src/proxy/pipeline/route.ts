// Step 2, route: the table's answer for the request (Gateway API rules first where a Gateway
// serves the host, then the Ingress table: docs/design.md, "Gateway API"), and what the rest
// of the pipeline reads from the route and the peer once: the client's address and scheme,
// HSTS, the deadlines.
import type { Config } from "../../config/types.ts";
import { chooseWeighted, findGatewayEntry } from "../../table/gateway.ts";
import type { GatewayRoutes, Match, Route } from "../../table/types.ts";
import { ProxyError } from "../../http/errors.ts";
import { hstsField } from "../../kinds/redirect.ts";
import { clientIpOf } from "../../http/headers.ts";
import { blockingOn, isBlocked } from "./block.ts";
import { setProxyHeaders } from "./global-headers.ts";
import type { Exchange } from "./context.ts";

/**
 * The Match of the Gateway API rule a request gets, or null (the Ingress table decides).
 * `hostname` is the validated request host without its port; `query` is "" or "?…".
 */
function gatewayLookup(routes: GatewayRoutes, https: boolean, hostname: string, method: string, path: string, query: string, headers: Headers): Match | null {
  const entry = findGatewayEntry(routes, https, {
    host: hostname,
    method,
    path,
    query: query.startsWith("?") ? query.slice(1) : query,
    header: (name) => headers.get(name),
  });
  return entry === null ? null : chooseWeighted(entry, Math.random());
}

/** The first hop's X-Forwarded-Proto ("https, http" lists the client's first). */
function clientScheme(xfp: string | null): "http" | "https" | null {
  if (xfp === null) return null;
  const first = xfp.split(",")[0]?.trim().toLowerCase();
  return first === "https" || first === "http" ? first : null;
}

// Strict-Transport-Security as the flags give it (redirect.ts hstsField), remade only when they
// change: the HSTS fields are live (config/live.ts), and the same string serves every HTTPS
// answer until then rather than a new one per request.
let hstsAge = -1;
let hstsSub = false;
let hstsPre = false;
let hstsLast = "";
function hstsOf(c: Config): string | null {
  if (!c.hsts) return null;
  if (c.hstsMaxAge !== hstsAge || c.hstsIncludeSubdomains !== hstsSub || c.hstsPreload !== hstsPre) {
    hstsLast = hstsField(c);
    hstsAge = c.hstsMaxAge;
    hstsSub = c.hstsIncludeSubdomains;
    hstsPre = c.hstsPreload;
  }
  return hstsLast;
}

// `namespace/name` of a route's Ingress for the access record and the metrics, made once per
// Ingress of the table (the table's objects are frozen, so it is kept beside them) rather than
// once per request: one string fewer per plain GET (bench/allocations.ts), and the metrics'
// series lookup hashes a string it has seen before.
const refs = new WeakMap<Route["ingress"], string>();
function ingressRef(i: Route["ingress"]): string {
  let s = refs.get(i);
  if (s === undefined) refs.set(i, (s = `${i.namespace}/${i.name}`));
  return s;
}

/**
 * The client's address: the peer, or X-Forwarded-For from a trusted proxy (looked up only
 * then), as nginx's realip module gives it.
 */
function clientIpFor(x: Exchange, trusted: boolean): string {
  return trusted ? clientIpOf(x.peer, x.req.headers.get("x-forwarded-for"), true, x.p.isTrusted) : x.peer;
}

/** Finds the route into `x`, or the 404 of no route. */
export function route(x: Exchange): ProxyError | null {
  const { p, req } = x;
  const table = p.deps.table();
  x.table = table;
  // The Bun.serve side of the SNI-split HTTPS port serves only the hosts that need no
  // node:http2 (serving/tls-split.ts): any other is 421, and the client retries on a new
  // connection (RFC 9110 §15.5.20, RFC 9113 §9.1.1), which the front routes by its SNI.
  const mis = x.server.misdirected;
  if (mis !== undefined && mis(table, x.hostname)) return new ProxyError("Misdirected");
  // Absent for Ingress-only tables: one check.
  const gw = table.gateway;
  const match: Match | null =
    (gw != null ? gatewayLookup(gw, p.scheme === "https", x.hostname, req.method, x.path, x.query, req.headers) : null) ??
    p.deps.lookup(table, x.hostname, x.path);
  if (match === null) {
    // nginx.tmpl writes the block checks into the catch-all server too.
    const c = p.config;
    if (!blockingOn(c)) return new ProxyError("NoRoute");
    return new ProxyError(isBlocked(c, clientIpFor(x, p.isTrusted(x.peer)), req.headers) ? "Blocked" : "NoRoute");
  }
  const r = match.route;
  x.match = match;
  x.route = r;
  x.backend = r.backend;
  x.rec.ingress = ingressRef(r.ingress);
  x.rec.service = r.backend.id;
  // enable-access-log: "false" (nginx.tmpl's `access_log off;` in the location).
  if (r.options.accessLog === false) x.rec.logged = false;
  // Behind a trusted TLS-terminating proxy the client's scheme is the one it reports
  // (X-Forwarded-Proto), or every request would be redirected to itself forever.
  const trusted = p.isTrusted(x.peer);
  // The client's address, once: the policies, the error request and the forwarded X-Real-IP
  // all use it.
  x.clientIp = clientIpFor(x, trusted);
  const c = p.config;
  x.appendForwardedFor = trusted && c.computeFullForwardedFor;
  if (blockingOn(c) && isBlocked(c, x.clientIp, req.headers)) return new ProxyError("Blocked");
  // ingress-nginx's enable-real-ip believes the address alone (nginx.tmpl real_ip_header);
  // only use-forwarded-headers also takes -Proto, -Host, -Port (lua_ingress.lua rewrite()).
  x.trusted = trusted && c.trustedProxyHeaders === "all";
  if (x.trusted) x.scheme = clientScheme(req.headers.get("x-forwarded-proto")) ?? p.scheme;
  // --use-proxy-protocol: the port the load balancer was addressed on is the client's
  // ($pass_server_port is $proxy_protocol_server_port, nginx.tmpl), and 443 there means the
  // client used HTTPS, whatever this listener's scheme or a forwarded header says
  // (lua_ingress.lua rewrite(): use_proxy_protocol, after use_forwarded_headers).
  if (c.useProxyProtocol) {
    const dp = x.server.proxyDestPort;
    if (dp !== undefined) {
      x.proxyPort = String(dp);
      if (dp === 443) x.scheme = "https";
    }
  }
  const hsts = x.scheme === "https" && r.options.hsts ? hstsOf(c) : null;
  x.hsts = hsts;
  if (hsts !== null) x.responseHeaders["strict-transport-security"] = hsts;
  const o = r.options;
  x.responseTimeoutMs = o.responseTimeoutMs ?? c.responseTimeoutMs;
  x.connectTimeoutMs = o.connectTimeoutMs ?? c.connectTimeoutMs;
  // proxy-set-headers, before the policies add theirs. The request-headers kind keeps a field
  // already set (kinds/forwarding.ts), so the platform's ConfigMap value wins over an Ingress's
  // portico.dev/request-headers of the same name: a tenant cannot override it.
  // Only add-headers set, or neither: one property check, no per-request lookup.
  const global = table.globalHeaders;
  if (global != null && global.request?.length > 0) setProxyHeaders(x, global);
  return null;
}
