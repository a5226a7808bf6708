// A deliberately naive matcher for tests: a linear scan over every route of the table, written
// straight from the Ingress v1 matching rules (an exact host beats a wildcard beats no host;
// the longest path wins, Exact over Prefix at equal length; Prefix matches whole path elements)
// without the table's path maps or host maps; a host in ingress-nginx's regex mode tries its
// locations one at a time, each compiled afresh. The lookup suite and a property test run
// against both this and `lookup`, and the goldens check every expected request against both.
import { compilePathRegex } from "../../src/regex/index.ts";
import { isSegmentPrefix, pathSegments } from "../../src/table/segments.ts";
import { allRoutes, implicitRootMatch } from "../../src/table/routes.ts";
import type { HostRoutes, Match, Route, RouteTable } from "../../src/table/types.ts";

function hostMatches(ruleHost: string, host: string): boolean {
  if (!ruleHost.startsWith("*.")) return false;
  const labels = host.split(".");
  // `*.foo.com` matches exactly one extra, non-empty label.
  return labels.length >= 2 && labels[0] !== "" && labels.slice(1).join(".") === ruleHost.slice(2);
}

function pathMatches(route: Route, path: string): boolean {
  if (route.pathType === "Exact") return route.path === path;
  return isSegmentPrefix(pathSegments(route.path), pathSegments(path));
}

/** The host entry holding `route`. */
function entryOf(table: RouteTable, route: Route): HostRoutes | undefined {
  for (const e of [...table.exact.values(), ...table.wildcard.values(), ...(table.any ? [table.any] : [])]) {
    if (e.routes.includes(route)) return e;
  }
  return undefined;
}

/** Same contract as `lookup`, computed the slow, obvious way. */
export function referenceLookup(table: RouteTable, host: string, path: string): Match | null {
  const routes = allRoutes(table);
  // Host tiers: exact beats wildcard beats hostless; the first tier with any route is chosen.
  let tier = routes.filter((r) => r.host === host);
  let via: Match["via"] = "exact-host";
  if (tier.length === 0) {
    tier = routes.filter((r) => r.host !== null && hostMatches(r.host, host));
    via = "wildcard-host";
  }
  if (tier.length === 0) {
    tier = routes.filter((r) => r.host === null);
    via = "any-host";
  }
  // A host in regex mode: its locations one by one, in order, each compiled afresh (the lookup
  // runs one set pass over the cached ones), on the fully decoded path.
  const rx = tier.length > 0 ? entryOf(table, tier[0] as Route)?.regex : null;
  if (rx) {
    let uri: string;
    try {
      uri = decodeURIComponent(path);
    } catch {
      uri = "";
    }
    for (const spec of rx.specs) {
      const re = compilePathRegex(spec.path);
      if (!re.ok || !re.re.test(uri)) continue;
      if (spec.route < 0) break;
      const route = (entryOf(table, tier[0] as Route) as HostRoutes).routes[spec.route] as Route;
      return { route, hostKey: route.host ?? "*", via };
    }
    return implicitRoot(table, tier);
  }
  let best: Route | null = null;
  let bestIndex = -1;
  tier.forEach((r, index) => {
    if (!pathMatches(r, path)) return;
    if (best === null) {
      best = r;
      bestIndex = index;
      return;
    }
    const b: Route = best;
    const longer = r.path.length > b.path.length;
    const sameLen = r.path.length === b.path.length;
    const exactOverPrefix = sameLen && r.pathType === "Exact" && b.pathType === "Prefix";
    const sameKind = sameLen && r.pathType === b.pathType;
    if (longer || exactOverPrefix || (sameKind && index < bestIndex)) {
      best = r;
      bestIndex = index;
    }
  });
  if (best !== null) {
    const route: Route = best;
    return { route, hostKey: route.host ?? "*", via };
  }
  return implicitRoot(table, tier);
}

/** No route of the tier matched: its host's implicit "/" location, else the default route. */
function implicitRoot(table: RouteTable, tier: readonly Route[]): Match | null {
  const root = tier.length > 0 ? entryOf(table, tier[0] as Route)?.root : null;
  if (root) return implicitRootMatch(root, table.defaultRoute);
  return table.defaultRoute ? { route: table.defaultRoute, hostKey: "", via: "default" } : null;
}
