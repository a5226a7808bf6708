// The data-plane lookup: host entry first, then the path inside that entry only (no
// fallthrough across host tiers: docs/design.md "Ingress decisions"), then the default route,
// else null (404). Host is lowercased and port-stripped, the path normalised and query-free
// (src/request/): the proxy did that. Allocation-light: Match objects are prebuilt; only
// candidate substrings are created (and, on a regex host, a Match carrying captures).
import { matchRegex } from "./regex.ts";
import { implicitRootMatch } from "./routes.ts";
import type { HostRoutes, Match, RouteTable } from "./types.ts";

/** Pick the host entry: exact host (or alias), then `*.suffix` (exactly one extra label), then hostless. */
export function selectHost(table: RouteTable, host: string): HostRoutes | null {
  return table.exact.get(host) ?? selectOther(table, host);
}

/** selectHost for a host that has no exact entry. */
function selectOther(table: RouteTable, host: string): HostRoutes | null {
  // server-alias names are exact names too (nginx's server_name): before the wildcards.
  if (table.aliases.size > 0) {
    const alias = table.aliases.get(host);
    if (alias) return alias;
  }
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
 * leading path elements, longest first, each a slice of `path` (types.ts PathSlot); only
 * element counts that some Prefix key has are probed (HostRoutes.prefixDepths), so a path of
 * thousands of elements costs one scan rather than a slice and a hash per element. Every
 * candidate is checked and the same precedence as the rules decides (longest written rule
 * path, then rank), so the result does not depend on the order of the probes. A host in
 * regex mode runs its locations instead (table/regex.ts).
 */
export function matchPath(entry: HostRoutes, path: string): Match | null {
  if (entry.regex !== null) {
    // app-root answers `/` before any location (nginx's server-level `if`; build.ts).
    if (entry.appRoot !== null && path === "/") return entry.appRoot;
    return matchRegex(entry.regex, path);
  }
  const paths = entry.paths;
  const depths = entry.prefixDepths;
  let best: Match | null = null;
  let bestLen = -1;
  let bestRank = -1;
  let end = path.length;
  if (end > 1 && path.charCodeAt(end - 1) === 47) end--;
  const start = path.charCodeAt(0) === 47 ? 1 : 0;
  const maxDepth = depths.length - 1;
  if (maxDepth >= 0) {
    // The longest candidate: path[start, cut) holding min(maxDepth, all) elements.
    let cut = start;
    let depth = 0;
    if (end > start && maxDepth > 0) {
      depth = 1;
      for (let i = start; ; depth++) {
        const j = path.indexOf("/", i);
        if (j < 0 || j >= end) {
          cut = end;
          break;
        }
        if (depth === maxDepth) {
          cut = j;
          break;
        }
        i = j + 1;
      }
    }
    // Then each shorter one, at each "/" from the right; "" (the "/" rule) last. The key ""
    // only ever has 0 elements (pathSegments drops the one a path like "//" would give).
    if (cut === start) depth = 0;
    for (;;) {
      if (depths[depth] === 1) {
        const slot = paths[cut === start ? "" : path.slice(start, cut)];
        if (slot !== undefined && slot.prefix !== null) {
          const len = slot.prefixLen;
          if (len > bestLen || (len === bestLen && slot.prefixRank < bestRank)) {
            best = slot.prefix;
            bestLen = len;
            bestRank = slot.prefixRank;
          }
        }
      }
      if (cut === start) break;
      const j = path.lastIndexOf("/", cut - 1);
      cut = j >= start ? j : start;
      depth = cut === start ? 0 : depth - 1;
    }
  }
  if (entry.hasExact) {
    const exact = paths[path]?.exact;
    // At equal written length Exact beats Prefix (Kubernetes Ingress concept page, "Multiple
    // matches").
    if (exact != null && path.length >= bestLen) return exact;
  }
  return best;
}

/**
 * The redirect of a host whose other name (`www.` added or removed) is `host`, when `host` is
 * no host entry of its own (checked before: ingress-nginx skips the redirect server when an
 * Ingress has that name). An exact name wins over wildcards in nginx, so this is asked before
 * the wildcard and hostless entries. `www.x` is the other name of both `x` and `www.www.x`:
 * ingress-nginx writes its redirect servers in host name order and nginx serves a repeated
 * name from the first, so the smaller name wins.
 */
function wwwRedirect(table: RouteTable, host: string): Match | null {
  const longer = `www.${host}`;
  const viaLonger = table.exact.get(longer)?.wwwRedirect ?? null;
  if (!host.startsWith("www.")) return viaLonger;
  const bare = host.slice(4);
  // A bare name that starts with `www.` has its `www.` removed, not added: `host` is not its other name.
  const viaBare = bare.startsWith("www.") ? null : (table.exact.get(bare)?.wwwRedirect ?? null);
  if (viaBare === null || viaLonger === null) return viaBare ?? viaLonger;
  return bare < longer ? viaBare : viaLonger;
}

/** Route for a request, or null (404). */
export function lookup(table: RouteTable, host: string, path: string): Match | null {
  let entry = table.exact.get(host) ?? null;
  if (entry === null) {
    // Only hosts with no exact entry pay for the www probe and the aliases, and only while
    // the table has some.
    if (table.wwwRedirects > 0) {
      const m = wwwRedirect(table, host);
      if (m !== null) return m;
    }
    entry = selectOther(table, host);
  }
  if (entry !== null) {
    const m = matchPath(entry, path);
    if (m !== null) return m;
    // ingress-nginx's `/` location of the host: its first Ingress's policies, then the default backend.
    if (entry.root !== null) return implicitRootMatch(entry.root, table.defaultRoute);
  }
  return table.defaultMatch;
}
