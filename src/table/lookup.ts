// The data-plane lookup: host entry first, then the path inside that entry only
// (DESIGN §4, no fallthrough across host tiers), then the default route, else null (404).
// Host is lowercased and port-stripped, path decoded and query-free: the proxy did that.
// Allocation-light: Match objects are prebuilt; only segment substrings are created.
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

/** Best route of one host entry for `path`, or null. */
export function matchPath(entry: HostRoutes, path: string): Match | null {
  let node = entry.root;
  let best = node.prefix;
  let bestLen = node.prefixLen;
  let bestRank = node.prefixRank;
  let end = path.length;
  if (end > 1 && path.charCodeAt(end - 1) === 47) end--;
  let pos = path.charCodeAt(0) === 47 ? 1 : 0;
  if (end > pos) {
    for (;;) {
      let j = path.indexOf("/", pos);
      if (j < 0 || j > end) j = end;
      const child = node.children.get(path.slice(pos, j));
      if (child === undefined) break;
      node = child;
      const len = node.prefixLen;
      if (len > bestLen || (len === bestLen && len >= 0 && node.prefixRank < bestRank)) {
        best = node.prefix;
        bestLen = len;
        bestRank = node.prefixRank;
      }
      if (j >= end) break;
      pos = j + 1;
    }
  }
  if (entry.exactPaths.size > 0) {
    const exact = entry.exactPaths.get(path);
    // At equal written length Exact beats Prefix (DESIGN §4).
    if (exact !== undefined && path.length >= bestLen) return exact;
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
