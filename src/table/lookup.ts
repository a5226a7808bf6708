// The data-plane lookup: host entry first, then the path inside that entry only
// (no fallthrough across host tiers: docs/design.md "Ingress decisions"), then the default
// route, else null (404).
// Host is lowercased and port-stripped, path decoded and query-free: the proxy did that.
// Allocation-light: Match objects are prebuilt; only candidate substrings are created.
import type { HostRoutes, Match, RouteTable } from "./types.ts";

/** Pick the host entry: exact host, then `*.suffix` (exactly one extra label), then hostless. */
export function selectHost(table: RouteTable, host: string): HostRoutes | null {
  const exact = table.exact.get(host);
  if (exact) return exact;
  if (table.wildcard.size > 0) {
    const dot = host.indexOf(".");
    // A wildcard covers one whole, non-empty first label (`*.foo.com` ∌ `.foo.com`).
    if (dot > 0) {
      const wild = table.wildcard.get(host.slice(dot + 1));
      if (wild) return wild;
    }
  }
  return table.any;
}

/**
 * Best route of one host entry for `path`, or null. Prefix candidates are the request's
 * leading path elements, longest first, each a slice of `path` (types.ts PathSlot); every
 * candidate is checked and the same precedence as the rules decides (longest written rule
 * path, then rank), so the result does not depend on the order of the probes.
 */
export function matchPath(entry: HostRoutes, path: string): Match | null {
  const paths = entry.paths;
  let best: Match | null = null;
  let bestLen = -1;
  let bestRank = -1;
  let end = path.length;
  if (end > 1 && path.charCodeAt(end - 1) === 47) end--;
  const start = path.charCodeAt(0) === 47 ? 1 : 0;
  // Candidates: path[start, cut) for cut = end, then each "/" from the right; "" (the "/" rule) last.
  let cut = end > start ? end : start;
  for (;;) {
    const slot = paths[cut === start ? "" : path.slice(start, cut)];
    if (slot !== undefined && slot.prefix !== null) {
      const len = slot.prefixLen;
      if (len > bestLen || (len === bestLen && slot.prefixRank < bestRank)) {
        best = slot.prefix;
        bestLen = len;
        bestRank = slot.prefixRank;
      }
    }
    if (cut === start) break;
    const j = path.lastIndexOf("/", cut - 1);
    cut = j >= start ? j : start;
  }
  if (entry.hasExact) {
    const exact = paths[path]?.exact;
    // At equal written length Exact beats Prefix (Kubernetes Ingress concept page, "Multiple
    // matches").
    if (exact != null && path.length >= bestLen) return exact;
  }
  return best;
}

/** Route for a request, or null (404). */
export function lookup(table: RouteTable, host: string, path: string): Match | null {
  const entry = selectHost(table, host);
  if (entry !== null) {
    const m = matchPath(entry, path);
    if (m !== null) return m;
  }
  return table.defaultMatch;
}
