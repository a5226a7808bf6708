// Builds the frozen RouteTable from routes that compile/ already validated and de-conflicted.
// Input order is priority order (oldest Ingress first, then rule and path index); the
// table orders each host's routes by precedence (Kubernetes Ingress concept page, "Multiple
// matches"): longest written path first, Exact before Prefix at equal length, then priority.
// Immutability: every type is readonly and the table object is frozen; the many small
// objects (host entries, routes, path slots, matches, upstreams) are not, because
// Object.freeze on 100k fresh objects costs ~15% of a 10k-Ingress compile. Path slots are
// built once and handed out as they are (readonly types), not copied.
// The incremental compiler builds host entries one by one (buildHost) and reuses the
// unchanged ones in the next table (assembleTable).
import { APP_ROOT_KIND, deepFreeze, WWW_REDIRECT_KIND, type StagePolicy } from "../policy/stages.ts";
import { compileRewriteTarget, needsRewrite } from "../regex/index.ts";
import { buildRegexRoutes, compilePath, matchRegex } from "./regex.ts";
import { type RegexLocationSpec } from "./types.ts";
import { pathSegments } from "./segments.ts";
import type { HostRoutes, Match, Route, RouteTable } from "./types.ts";

interface MutableSlot {
  exact: Match | null;
  prefix: Match | null;
  prefixLen: number;
  prefixRank: number;
}

/** Precedence between two routes of one host: negative when `a` wins. Stable on priority. */
export function comparePrecedence(a: Route, b: Route): number {
  if (a.path.length !== b.path.length) return b.path.length - a.path.length;
  if (a.pathType !== b.pathType) return a.pathType === "Exact" ? -1 : 1;
  return 0;
}

/** The table-wide host key of a route: the host, or `*` for hostless rules. */
export function hostKeyOf(route: Route): string {
  return route.host ?? "*";
}

/** How a host key is reached: `*` is hostless, `*.x` a wildcard, anything else an exact host. */
export function viaOf(hostKey: string): Match["via"] {
  return hostKey === "*" ? "any-host" : hostKey.startsWith("*.") ? "wildcard-host" : "exact-host";
}

const NO_DEPTHS = new Uint8Array(0);

/**
 * The shared `prefixDepths` of hosts whose Prefix keys have the same element counts, by the
 * counts as bits (up to 30 elements). Most hosts have one of a few patterns, and a Uint8Array
 * costs ~64 bytes of JS heap in JSC: at 10k hosts, 10,000 arrays were 2 shared ones
 * (docs/design.md "Sources at start-up"). Nothing writes one once built (the table is
 * read-only). Bounded: past 256 patterns a host gets its own array.
 */
const sharedDepths = new Map<number, Uint8Array>();
const SHARED_DEPTHS_MAX = 256;

function depthsOf(depths: readonly (number | undefined)[]): Uint8Array {
  let bits = 0;
  const shareable = depths.length <= 30;
  if (shareable) for (let i = 0; i < depths.length; i++) if (depths[i] === 1) bits |= 1 << i;
  const known = shareable ? sharedDepths.get(bits) : undefined;
  if (known !== undefined) return known;
  const out = new Uint8Array(depths.length);
  for (let i = 0; i < depths.length; i++) out[i] = depths[i] ?? 0;
  if (shareable && sharedDepths.size < SHARED_DEPTHS_MAX) sharedDepths.set(bits, out);
  return out;
}

/**
 * One host entry from its routes in priority order. With `regex` (the host is in regex mode),
 * the routes stay in the order given, which the specs' route indexes refer to, and the
 * lookup runs the locations instead of the path map.
 */
export function buildHost(
  host: string,
  routes: readonly Route[],
  via: Match["via"],
  regex: readonly RegexLocationSpec[] | null = null,
  implicitRoot: Route | null = null,
): HostRoutes {
  const root = rootOf(implicitRoot, host, via, regex !== null);
  if (regex !== null) {
    const rx = buildRegexRoutes(regex, routes, host, via);
    // app-root (hostAppRoot) answers `/` before the locations run, as nginx's server-level `if`.
    const app = hostAppRoot(routes);
    const appRoot = app === null ? null : { route: withAppRoot(matchRegex(rx, "/")?.route ?? app.route, app.policy), hostKey: host, via };
    const wwwRedirect = via === "exact-host" ? wwwRedirectOf(host, routes) : null;
    return { host, paths: Object.create(null), hasExact: false, prefixDepths: NO_DEPTHS, routes, regex: rx, wwwRedirect, appRoot, root };
  }
  // Array.prototype.sort is stable, so equal precedence keeps priority order.
  const sorted = routes.length > 1 ? [...routes].sort(comparePrecedence) : routes;
  const paths: Record<string, MutableSlot> = Object.create(null);
  const slot = (key: string): MutableSlot => {
    let sl = paths[key];
    if (sl === undefined) paths[key] = sl = { exact: null, prefix: null, prefixLen: -1, prefixRank: -1 };
    return sl;
  };
  let hasExact = false;
  const depths: number[] = [];
  sorted.forEach((route, rank) => {
    const match: Match = { route, hostKey: host, via };
    if (route.pathType === "Exact") {
      hasExact = true;
      const sl = slot(route.path);
      if (sl.exact === null) sl.exact = match;
      return;
    }
    // Sorted input: the first Prefix route reaching a key is its best one. The key is the
    // rule's path elements joined by "/" (PathSlot).
    const elements = pathSegments(route.path);
    const sl = slot(elements.join("/"));
    depths[elements.length] = 1;
    if (sl.prefix === null) {
      sl.prefix = match;
      sl.prefixLen = route.path.length;
      sl.prefixRank = rank;
    }
  });
  const prefixDepths = depthsOf(depths);
  const appRoot = hostAppRoot(sorted);
  if (appRoot !== null) {
    // ingress-nginx writes app-root as `if ($uri = /) { return 302 ...; }` in the server
    // block, before any location is chosen: `/` redirects whichever Ingress of the host owns
    // `/`, or none does. The redirect is put where `/` is looked up, as an Exact `/` route
    // (Exact wins over Prefix at equal length): the route `/` would have reached, or the
    // app-root route itself, with the app-root policy first. Only `/` pays for it.
    const base = paths["/"]?.exact?.route ?? paths[""]?.prefix?.route ?? appRoot.route;
    slot("/").exact = { route: withAppRoot(base, appRoot.policy), hostKey: host, via };
    hasExact = true;
  }
  const wwwRedirect = via === "exact-host" ? wwwRedirectOf(host, sorted) : null;
  const entry: HostRoutes = { host, paths, hasExact, prefixDepths, routes: sorted, regex: null, wwwRedirect, appRoot: null, root };
  return entry;
}

/**
 * The implicit `/` location's Match. On a regex host it rewrites as ingress-nginx's location
 * `/` does with the first Ingress's rewrite-target (template.go buildProxyPass writes
 * `rewrite "(?i)/" <target> break;` for it): the captures of `/` are always the same (`$0` is
 * the first "/", no groups), so they are taken once here. A target that does not compile
 * against `/` (a group `/` lacks) leaves the location without a rewrite.
 */
function rootOf(route: Route | null, host: string, via: Match["via"], regexMode: boolean): Match | null {
  if (route === null) return null;
  const plain: Match = { route, hostKey: host, via };
  if (!regexMode) return plain;
  const target = route.options.stages?.find((p) => p.kind === "rewrite-target")?.params.target;
  if (typeof target !== "string" || !needsRewrite({ path: "/", rewriteTarget: target })) return plain;
  const r = compilePath("/");
  if (!r.ok || !compileRewriteTarget(target, r.re).ok) return plain;
  return { route, hostKey: host, via, regex: { location: "/", re: r.re, captures: r.re.match("/") } };
}

/**
 * `base` (the route `/` would reach) answering `/` with the host's app-root. The answer comes
 * from the server block (nginx's server-level `if`, in the server's rewrite phase, before a
 * location is chosen), so of `base`'s stages (compile/stages.ts assembled them) only the
 * client-certificate check, which nginx makes when it reads the request, comes before it, and
 * none of the location's can follow: the app-root answers every request for `/`. So the list
 * is `base`'s `certificate` stage and the app-root, already in stage order, not re-sorted. No
 * HSTS on it: ingress-nginx adds the header in its locations' header filter.
 */
function withAppRoot(base: Route, policy: StagePolicy): Route {
  const stages = Object.freeze([...(base.options.stages?.filter((p) => p.stage === "certificate") ?? []), deepFreeze(policy)]);
  return { ...base, options: { ...base.options, hsts: false, stages } };
}

/**
 * The app-root that answers `/` on this host: ingress-nginx emits one server-level `if` per
 * location that has it, in its location order (longest path first, then reverse byte order),
 * and the first one returns. Null when no route has one.
 */
function hostAppRoot(sorted: readonly Route[]): { route: Route; policy: StagePolicy } | null {
  let best: { route: Route; policy: StagePolicy } | null = null;
  for (const route of sorted) {
    const policy = route.options.stages?.find((p) => p.kind === APP_ROOT_KIND);
    if (policy === undefined) continue;
    if (best === null || route.path.length > best.route.path.length || (route.path.length === best.route.path.length && route.path > best.route.path)) {
      best = { route, policy };
    }
  }
  return best;
}

/** The host's other name: `www.` removed, or added (ingress-nginx's BuildRedirects). */
export function otherWwwName(host: string): string {
  return host.startsWith("www.") ? host.slice(4) : `www.${host}`;
}

/**
 * ingress-nginx adds a server for the other name of every host with a location that has
 * from-to-www-redirect; it answers every request with a redirect to this host. Here it is a
 * route with that one policy, reached by lookup for the other name (lookup.ts).
 */
function wwwRedirectOf(host: string, sorted: readonly Route[]): Match | null {
  const marked = sorted.find((r) => r.options.fromToWwwRedirect);
  if (marked === undefined) return null;
  // The www redirect's policy (kinds/server.ts WWW_REDIRECT: `{ to }`, the host redirected to).
  const policy: StagePolicy = { stage: "server", kind: WWW_REDIRECT_KIND, params: { to: host } };
  // No HSTS: ingress-nginx's redirect server has no location, where its header filter runs.
  const options = { ...marked.options, hsts: false, stages: Object.freeze([deepFreeze(policy)]) };
  const route: Route = { ...marked, host: otherWwwName(host), path: "/", pathType: "Prefix", options };
  return { route, hostKey: otherWwwName(host), via: "exact-host" };
}

const NO_ALIASES: ReadonlyMap<string, never> = new Map<string, never>();

/** The host entries the aliases name, in these maps (an alias whose host has no entry is left out). */
function resolveAliases(
  keys: ReadonlyMap<string, string>,
  exact: ReadonlyMap<string, HostRoutes>,
  wildcard: ReadonlyMap<string, HostRoutes>,
): ReadonlyMap<string, HostRoutes> {
  if (keys.size === 0) return NO_ALIASES;
  const out = new Map<string, HostRoutes>();
  for (const [alias, k] of keys) {
    const e = k.startsWith("*.") ? wildcard.get(k.slice(2)) : exact.get(k);
    if (e !== undefined) out.set(alias, e);
  }
  return out;
}

/** Group routes by host and build the exact map, the wildcard map and the hostless entry. */
export function buildTable(routes: readonly Route[], defaultRoute: Route | null, aliasKeys: ReadonlyMap<string, string> = NO_ALIASES): RouteTable {
  const byHost = new Map<string, Route[]>();
  for (const r of routes) {
    const k = hostKeyOf(r);
    const list = byHost.get(k);
    if (list) list.push(r);
    else byHost.set(k, [r]);
  }
  const keys = [...byHost.keys()].sort();
  return assembleTable(
    keys.map((k) => buildHost(k, byHost.get(k) ?? [], viaOf(k))),
    defaultRoute,
    routes.length,
    aliasKeys,
  );
}

/**
 * The table from built host entries, given in sorted host-key order (the map order every
 * table has, so encodings and the reference matcher see the same order).
 */
export function assembleTable(
  entries: readonly HostRoutes[],
  defaultRoute: Route | null,
  routeCount: number,
  aliasKeys: ReadonlyMap<string, string> = NO_ALIASES,
): RouteTable {
  const exact = new Map<string, HostRoutes>();
  const wildcard = new Map<string, HostRoutes>();
  let any: HostRoutes | null = null;
  let wwwRedirects = 0;
  for (const e of entries) {
    const k = e.host;
    if (k === "*") any = e;
    else if (k.startsWith("*.")) wildcard.set(k.slice(2), e);
    else {
      exact.set(k, e);
      if (e.wwwRedirect !== null) wwwRedirects++;
    }
  }
  const defaultMatch: Match | null = defaultRoute
    ? Object.freeze({ route: defaultRoute, hostKey: "", via: "default" as const })
    : null;
  const aliases = resolveAliases(aliasKeys, exact, wildcard);
  return Object.freeze({ exact, wildcard, any, defaultRoute, defaultMatch, routeCount, wwwRedirects, aliasKeys, aliases });
}

/**
 * The next table from the previous one: host entries replaced or removed (null) by key. The
 * maps are copied (the previous table stays as it was for requests still reading it); keys
 * keep their order, so a change must not add a key (use assembleTable then) unless
 * `appendNew` says map order does not matter to the caller (lookups never depend on it).
 */
export function patchTable(
  prev: RouteTable,
  changes: readonly (readonly [string, HostRoutes | null])[],
  defaultRoute: Route | null,
  routeCount: number,
  appendNew = false,
  aliasKeys: ReadonlyMap<string, string> = prev.aliasKeys,
): RouteTable {
  let exact: Map<string, HostRoutes> | null = null;
  let wildcard: Map<string, HostRoutes> | null = null;
  let any = prev.any;
  let wwwRedirects = prev.wwwRedirects;
  for (const [k, e] of changes) {
    if (k === "*") {
      any = e;
      continue;
    }
    const wild = k.startsWith("*.");
    const map = wild ? (wildcard ??= new Map(prev.wildcard)) : (exact ??= new Map(prev.exact));
    const key = wild ? k.slice(2) : k;
    if (!wild) wwwRedirects += (e?.wwwRedirect ? 1 : 0) - (map.get(key)?.wwwRedirect ? 1 : 0);
    if (e === null) map.delete(key);
    else {
      if (!appendNew && !map.has(key)) throw new Error(`patchTable: host ${k} is new; build the table with assembleTable`);
      map.set(key, e);
    }
  }
  const defaultMatch: Match | null =
    defaultRoute === prev.defaultRoute
      ? prev.defaultMatch
      : defaultRoute
        ? Object.freeze({ route: defaultRoute, hostKey: "", via: "default" as const })
        : null;
  const nextExact = exact ?? prev.exact;
  const nextWildcard = wildcard ?? prev.wildcard;
  // The aliases point at entries: resolved again when either could have moved.
  const aliases = aliasKeys === prev.aliasKeys && exact === null && wildcard === null ? prev.aliases : resolveAliases(aliasKeys, nextExact, nextWildcard);
  return Object.freeze({ exact: nextExact, wildcard: nextWildcard, any, defaultRoute, defaultMatch, routeCount, wwwRedirects, aliasKeys, aliases });
}
