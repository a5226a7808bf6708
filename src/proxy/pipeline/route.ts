// Step 2, route: the table's answer for the request (Gateway API rules first where a Gateway
// serves the host, then the Ingress table: docs/design.md, "Gateway API"), and what the rest
// of the pipeline reads from the route and the peer once: the client's address and scheme,
// HSTS, the deadlines.
import type { Match } from "../../table/types.ts";
import { ProxyError } from "../errors.ts";
import { gatewayLookup } from "../policies/gateway.ts";
import { hstsValue } from "../policies/redirect.ts";
import { clientIpOf } from "../upstream/headers.ts";
import type { Exchange } from "./context.ts";

/** The first hop's X-Forwarded-Proto ("https, http" lists the client's first). */
function clientScheme(xfp: string | null): "http" | "https" | null {
  if (xfp === null) return null;
  const first = xfp.split(",")[0]?.trim().toLowerCase();
  return first === "https" || first === "http" ? first : null;
}

/** Finds the route into `x`, or the 404 of no route. */
export function route(x: Exchange): ProxyError | null {
  const { p, req } = x;
  const table = p.deps.table();
  // Absent for Ingress-only tables: one check.
  const gw = table.gateway;
  const match: Match | null =
    (gw != null ? gatewayLookup(gw, p.scheme === "https", x.hostname, req.method, x.path, x.query, req.headers) : null) ??
    p.deps.lookup(table, x.hostname, x.path);
  if (match === null) return new ProxyError("NoRoute");
  const r = match.route;
  x.match = match;
  x.route = r;
  x.backend = r.backend;
  x.rec.ingress = `${r.ingress.namespace}/${r.ingress.name}`;
  x.rec.service = r.backend.id;
  // Behind a trusted TLS-terminating proxy the client's scheme is the one it reports
  // (X-Forwarded-Proto), or every request would be redirected to itself forever.
  const trusted = p.isTrusted(x.peer);
  // The client's address (the peer, or X-Forwarded-For from a trusted proxy), once: the
  // policies, the error request and the forwarded X-Real-IP all use it.
  x.clientIp = clientIpOf(x.peer, req.headers.get("x-forwarded-for"), trusted, p.isTrusted);
  x.appendForwardedFor = trusted && p.config.computeFullForwardedFor;
  // ingress-nginx's enable-real-ip believes the address alone (nginx.tmpl real_ip_header);
  // only use-forwarded-headers also takes -Proto, -Host, -Port (lua_ingress.lua rewrite()).
  x.trusted = trusted && p.config.trustedProxyHeaders === "all";
  if (x.trusted) x.scheme = clientScheme(req.headers.get("x-forwarded-proto")) ?? p.scheme;
  const hsts = x.scheme === "https" ? hstsValue(p.config, r) : null;
  x.hsts = hsts;
  if (hsts !== null) x.responseHeaders["strict-transport-security"] = hsts;
  const o = r.options;
  x.responseTimeoutMs = o.responseTimeoutMs ?? p.config.responseTimeoutMs;
  x.connectTimeoutMs = o.connectTimeoutMs ?? p.config.connectTimeoutMs;
  return null;
}
