// Gateway API hostname rules (HTTPRouteSpec.hostnames, Listener.hostname in apis/v1):
// - a `*.` label matches one or more labels (`*.example.com` matches `a.example.com` and
//   `a.b.example.com`, not `example.com`), unlike Ingress, where `*` is exactly one label;
// - a route attaches to a listener only where their hostnames intersect, and route hostnames
//   that do not intersect the listener's are ignored;
// - the port in the Host header is ignored.
// Hostnames are compared lowercased (DNS names are case-insensitive, RFC 4343).

/** `host` lowercased without a port; IPv6 literals keep their brackets. */
export function requestHostname(hostHeader: string): string {
  let h = hostHeader;
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    h = end === -1 ? h : h.slice(0, end + 1);
  } else {
    const colon = h.lastIndexOf(":");
    if (colon !== -1) h = h.slice(0, colon);
  }
  if (h.endsWith(".")) h = h.slice(0, -1); // the absolute form names the same host (RFC 1034 §3.1)
  return h.toLowerCase();
}

export const isWildcard = (h: string): boolean => h.startsWith("*.");

/** Does hostname pattern `pattern` (exact or `*.suffix`) match the concrete name `host`? */
export function hostnameMatches(pattern: string, host: string): boolean {
  if (!isWildcard(pattern)) return pattern === host;
  const suffix = pattern.slice(1); // ".example.com"
  return host.length > suffix.length && host.endsWith(suffix);
}

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

/**
 * How specific a hostname pattern is, for "the most specific listener wins" and for the
 * route hostname precedence (HTTPRouteSpec.hostnames: the most characters in a matching
 * non-wildcard hostname, then in a matching hostname). Higher wins; `*` (any) is lowest.
 */
export function hostnameSpecificity(pattern: string | null): number {
  if (pattern === null || pattern === "*") return 0;
  return isWildcard(pattern) ? pattern.length : 1_000 + pattern.length;
}

/** Among patterns, the most specific one matching `host`, or undefined. `*`/null match any host. */
export function bestHostname<T extends string | null>(patterns: Iterable<T>, host: string): T | undefined {
  let best: T | undefined;
  let bestScore = -1;
  for (const p of patterns) {
    if (p !== null && p !== "*" && !hostnameMatches(p, host)) continue;
    const s = hostnameSpecificity(p);
    if (s > bestScore) {
      best = p;
      bestScore = s;
    }
  }
  return best;
}
