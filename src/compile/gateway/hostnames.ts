// Gateway API hostname rules (HTTPRouteSpec.hostnames, Listener.hostname in apis/v1):
// - a `*.` label matches one or more labels (`*.example.com` matches `a.example.com` and
//   `a.b.example.com`, not `example.com`), unlike Ingress, where `*` is exactly one label;
// - a route attaches to a listener only where their hostnames intersect, and route hostnames
//   that do not intersect the listener's are ignored;
// - the port in the Host header is ignored.
// Hostnames are compared lowercased (DNS names are case-insensitive, RFC 4343).

export { bestHostname, hostnameMatches, hostnameSpecificity, isWildcardHost as isWildcard, requestHostname } from "../../table/gateway.ts";
import { hostnameMatches, isWildcardHost as isWildcard } from "../../table/gateway.ts";

/**
 * The names a route hostname serves through a listener hostname, or null when they do not
 * intersect. Both wildcards: the narrower one (`*.a.example.com` under `*.example.com`).
 */
export function intersectHostname(listener: string | null, route: string): string | null {
  const r = route.toLowerCase();
  if (listener === null) return r;
  const l = listener.toLowerCase();
  if (l === r) return r;
  if (!isWildcard(r)) return hostnameMatches(l, r) ? r : null;
  if (!isWildcard(l)) return hostnameMatches(r, l) ? l : null;
  // Both wildcards: one suffix must contain the other.
  if (r.length > l.length && r.endsWith(l.slice(1))) return r;
  if (l.length > r.length && l.endsWith(r.slice(1))) return l;
  return null;
}

/**
 * The hostnames a route serves on a listener: the intersections of its hostnames with the
 * listener's (duplicates removed, in the route's order). `["*"]` stands for "any host" (neither
 * side names one). An empty result means the route does not attach to this listener
 * (NoMatchingListenerHostname).
 */
export function effectiveHostnames(listener: string | null | undefined, routeHostnames: readonly string[]): string[] {
  const l = listener ? listener.toLowerCase() : null;
  if (routeHostnames.length === 0) return [l ?? "*"];
  const out: string[] = [];
  for (const h of routeHostnames) {
    const x = intersectHostname(l, h);
    if (x !== null && !out.includes(x)) out.push(x);
  }
  return out;
}

