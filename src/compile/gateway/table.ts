// The Gateway API part of the route table, and how a request finds its rule.
//
// A request on Portico's HTTP port is matched against the HTTP listeners of every Gateway of
// ours, one on the HTTPS port against the HTTPS listeners (docs/design.md "Gateway API").
// Lookup, in the spec's order:
// 1. the most specific listener hostname matching the request's host (exact, then the longest
//    wildcard, then listeners without a hostname); listeners of several Gateways with the same
//    hostname are merged;
// 2. within the routes attached there, the most specific route hostname (HTTPRouteSpec.hostnames:
//    non-wildcard first, then the longest);
// 3. the first match in precedence order (HTTPRouteRule.matches): Exact path, then the longest
//    PathPrefix, then a method, then more header matches, then more query matches, then the
//    oldest route, then namespace/name, then rule and match order.
// Nothing matched → null: the caller falls back to the Ingress table (the host is not claimed).
import type { HTTPRoute } from "../../model/gateway.ts";
import type { Backend } from "../../table/types.ts";
import type { Snapshot } from "../../store/types.ts";
import type { BackendRef, ResolvedBackend } from "../backends.ts";
import { attachRoute, cond, ourClasses, ourGateways, type ClassState, type Condition, type GatewayState, type PortClass, type RouteParentState } from "./attach.ts";
import { bestHostname, hostnameMatches, isWildcard } from "./hostnames.ts";
import { compileRoute, type CompiledMatch, type CompiledRule } from "./rules.ts";

export interface GatewayEntry {
  readonly match: CompiledMatch;
  readonly rule: CompiledRule;
  /** The listener's declared port: redirects use it (RequestRedirect.port). */
  readonly listenerPort: number;
  readonly listenerProtocol: "HTTP" | "HTTPS";
}

interface HostIndex {
  readonly exact: Map<string, GatewayEntry[]>;
  /** Wildcard patterns, most specific first. */
  readonly wildcards: [string, GatewayEntry[]][];
  any: GatewayEntry[] | null;
}

export interface GatewayTable {
  /** By listener hostname ("*" for none), per Portico port. */
  readonly http: ReadonlyMap<string, HostIndex>;
  readonly https: ReadonlyMap<string, HostIndex>;
}

export interface RouteStatus {
  readonly key: string;
  readonly generation: number | null;
  readonly parents: readonly { readonly state: RouteParentState; readonly conditions: readonly Condition[] }[];
}

export interface GatewayCompileResult {
  readonly classes: ReadonlyMap<string, ClassState>;
  readonly gateways: ReadonlyMap<string, GatewayState>;
  readonly routes: readonly RouteStatus[];
  /** Null when no route is attached anywhere: the request path then pays one null check. */
  readonly table: GatewayTable | null;
}

const routeTime = (r: HTTPRoute) => r.metadata.creationTimestamp ?? "";

/** Compile every Gateway API object of ours. Pure; deterministic whatever the Map order. */
export function compileGateways(snapshot: Snapshot, controllerName: string, resolve: (ref: BackendRef) => ResolvedBackend): GatewayCompileResult {
  const classes = ourClasses(snapshot, controllerName);
  const gateways = classes.size === 0 ? new Map<string, GatewayState>() : ourGateways(snapshot, classes);
  if (gateways.size === 0) return { classes, gateways, routes: [], table: null };
  // Oldest first, then namespace/name: the route order of the precedence rules.
  const routes = [...snapshot.httpRoutes.entries()].sort(([ka, a], [kb, b]) => {
    const ta = routeTime(a);
    const tb = routeTime(b);
    if (ta !== tb) return ta < tb ? -1 : 1;
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
  const statuses: RouteStatus[] = [];
  const entries = { http: new Map<string, Map<string, GatewayEntry[]>>(), https: new Map<string, Map<string, GatewayEntry[]>>() };
  let attached = 0;
  for (const [key, route] of routes) {
    const parents = attachRoute(snapshot, gateways, route);
    if (parents.length === 0) continue;
    const compiled = compileRoute(snapshot, route, resolve);
    const out: RouteStatus["parents"][number][] = [];
    for (const p of parents) {
      const accepted = p.accepted.status === "True" && compiled.unsupported !== null ? compiled.unsupported : p.accepted;
      out.push({ state: p, conditions: [accepted, compiled.resolvedRefs] });
      // A route with an unsupported value is not accepted; its supported rules still serve
      // (the spec lets an implementation keep the valid parts), so a typo does not drop them.
      for (const a of p.attachments) {
        const cls = a.listener.portClass;
        if (cls === null) continue;
        const byListener = entries[cls];
        const lkey = a.listener.hostname ?? "*";
        let hosts = byListener.get(lkey);
        if (!hosts) byListener.set(lkey, (hosts = new Map()));
        for (const h of a.hostnames) {
          let list = hosts.get(h);
          if (!list) hosts.set(h, (list = []));
          for (const rule of compiled.rules) {
            for (const match of rule.matches) {
              list.push({ match, rule, listenerPort: a.listener.port, listenerProtocol: cls === "https" ? "HTTPS" : "HTTP" });
              attached++;
            }
          }
        }
      }
    }
    statuses.push({ key, generation: route.metadata.generation ?? null, parents: out });
  }
  const order = precedence(routeOrder(routes));
  const build = (m: Map<string, Map<string, GatewayEntry[]>>) => {
    const out = new Map<string, HostIndex>();
    for (const [lkey, hosts] of m) {
      const idx: HostIndex = { exact: new Map(), wildcards: [], any: null };
      for (const [h, list] of hosts) {
        const sorted = dedupe(list).sort(order);
        if (h === "*") idx.any = sorted;
        else if (isWildcard(h)) idx.wildcards.push([h, sorted]);
        else idx.exact.set(h, sorted);
      }
      idx.wildcards.sort(([a], [b]) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0));
      out.set(lkey, idx);
    }
    return out;
  };
  const table = attached === 0 ? null : { http: build(entries.http), https: build(entries.https) };
  return { classes, gateways, routes: statuses, table };
}

/** The same rule attached through two listeners with one hostname is kept once. */
function dedupe(list: GatewayEntry[]): GatewayEntry[] {
  const seen = new Set<CompiledMatch>();
  return list.filter((e) => (seen.has(e.match) ? false : (seen.add(e.match), true)));
}

function routeOrder(routes: readonly [string, HTTPRoute][]): Map<string, number> {
  const m = new Map<string, number>();
  routes.forEach(([key], i) => m.set(key, i));
  return m;
}

/** HTTPRouteRule.matches precedence; ties fall to route order (age, then name), rule and match order. */
function precedence(order: ReadonlyMap<string, number>) {
  return (a: GatewayEntry, b: GatewayEntry): number => {
    const ma = a.match;
    const mb = b.match;
    if (ma.pathType !== mb.pathType) return ma.pathType === "Exact" ? -1 : 1;
    if (ma.pathType === "PathPrefix" && ma.path.length !== mb.path.length) return mb.path.length - ma.path.length;
    if ((ma.method === null) !== (mb.method === null)) return ma.method === null ? 1 : -1;
    if (ma.headers.length !== mb.headers.length) return mb.headers.length - ma.headers.length;
    if (ma.query.length !== mb.query.length) return mb.query.length - ma.query.length;
    const ra = order.get(`${a.rule.route.namespace}/${a.rule.route.name}`) ?? 0;
    const rb = order.get(`${b.rule.route.namespace}/${b.rule.route.name}`) ?? 0;
    if (ra !== rb) return ra - rb;
    if (a.rule.ruleIndex !== b.rule.ruleIndex) return a.rule.ruleIndex - b.rule.ruleIndex;
    return a.rule.matches.indexOf(ma) - b.rule.matches.indexOf(mb);
  };
}

/** What a request carries that matching reads. */
export interface GatewayRequest {
  /** Lowercased, without port (hostnames.ts requestHostname). */
  readonly host: string;
  readonly method: string;
  /** The path without the query. */
  readonly path: string;
  /** The raw query string without `?`. */
  readonly query: string;
  header(name: string): string | null;
}

/** Does a request path fall under a PathPrefix (per path element; a trailing `/` ignored)? */
export function prefixMatches(prefix: string, path: string): boolean {
  if (prefix === "") return true;
  if (!path.startsWith(prefix)) return false;
  return path.length === prefix.length || path.charCodeAt(prefix.length) === 47; // "/"
}

function queryValue(query: string, name: string): string | null {
  if (query === "") return null;
  // The first value of the name (HTTPQueryParamMatch leaves repeated names implementation-specific).
  for (const part of query.split("&")) {
    const eq = part.indexOf("=");
    const k = eq === -1 ? part : part.slice(0, eq);
    let dk: string;
    try {
      dk = decodeURIComponent(k.replace(/\+/g, " "));
    } catch {
      dk = k;
    }
    if (dk !== name) continue;
    const v = eq === -1 ? "" : part.slice(eq + 1);
    try {
      return decodeURIComponent(v.replace(/\+/g, " "));
    } catch {
      return v;
    }
  }
  return null;
}

export function matchesRequest(m: CompiledMatch, req: GatewayRequest): boolean {
  if (m.pathType === "Exact" ? req.path !== m.path : !prefixMatches(m.path, req.path)) return false;
  if (m.method !== null && m.method !== req.method) return false;
  for (const h of m.headers) if (req.header(h.name) !== h.value) return false;
  for (const q of m.query) if (queryValue(req.query, q.name) !== q.value) return false;
  return true;
}

/** The rule a request gets on Portico's `port` listener, or null (not claimed by Gateway API). */
export function matchGateway(table: GatewayTable, port: PortClass, req: GatewayRequest): GatewayEntry | null {
  const listeners = port === "https" ? table.https : table.http;
  if (listeners.size === 0) return null;
  const lkey = bestHostname(listeners.keys(), req.host);
  if (lkey === undefined) return null;
  const idx = listeners.get(lkey)!;
  // Route hostname precedence (HTTPRouteSpec.hostnames) first, then match precedence: the
  // exact hostname's rules, then each matching wildcard's (longest first), then the routes
  // without a hostname; the first list holding a matching rule wins.
  const exact = idx.exact.get(req.host);
  if (exact !== undefined) for (const e of exact) if (matchesRequest(e.match, req)) return e;
  for (const [p, l] of idx.wildcards) {
    if (!hostnameMatches(p, req.host)) continue;
    for (const e of l) if (matchesRequest(e.match, req)) return e;
  }
  if (idx.any !== null) for (const e of idx.any) if (matchesRequest(e.match, req)) return e;
  return null;
}

/** Which backend a request goes to: weighted random; null = an invalid ref's share (500). */
export function pickBackend(rule: CompiledRule, random: () => number = Math.random): { backend: Backend | null } | null {
  if (rule.backends.length === 0 || rule.totalWeight === 0) return null;
  let x = random() * rule.totalWeight;
  for (const b of rule.backends) {
    if (x < b.weight) return { backend: b.backend };
    x -= b.weight;
  }
  return { backend: rule.backends[rule.backends.length - 1]!.backend };
}

export { cond };
