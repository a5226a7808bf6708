// The Gateway API part of the route table (docs/design.md "Gateway API"), and how a request
// finds its rule. compile/gateway/ builds it; the proxy asks it before the Ingress table, and
// only when it exists (RouteTable.gateway), so a table without Gateway API objects costs one
// property check per request.
//
// Lookup, in the spec's order (apis/v1 httproute_types.go, HTTPRouteSpec.hostnames and
// HTTPRouteRule.matches):
// 1. the most specific listener hostname matching the request's host (exact, then the longest
//    wildcard, then listeners without a hostname); listeners of several Gateways with the same
//    hostname are merged;
// 2. within the routes attached there, the route hostnames in precedence order (exact, then
//    the longest wildcard, then routes without hostnames), each list in match precedence:
//    Exact path, then the longest PathPrefix, then the longest RegularExpression, then a
//    method, then more header matches, then more query matches, then the oldest route, then
//    namespace/name, then rule and match order. The first matching entry wins.
// On a host an Ingress names, step 2 asks the listener's `held` list for that host instead:
// only the entries of routes in the namespaces of the Ingresses naming it
// (compile/gateway/ingress-hosts.ts; docs/design.md "Gateway API").
// Nothing matched → null: the request goes on to the Ingress table.
import type { GatewayEntry, GatewayHeld, GatewayHosts, GatewayMatch, GatewayRoutes, HeaderMatch, Match } from "./types.ts";
import { compileHeaderPattern, compilePathRegex } from "../regex/index.ts";

/** What matching reads of a request. */
export interface GatewayRequest {
  /** Lowercased, without the port (the port in Host is ignored: HTTPRouteSpec.hostnames). */
  readonly host: string;
  readonly method: string;
  /** The path without the query. */
  readonly path: string;
  /** The query without `?` ("" for none). */
  readonly query: string;
  header(name: string): string | null;
}

export const isWildcardHost = (h: string): boolean => h.startsWith("*.");

/** A `*.` label matches one or more labels, never the bare suffix (unlike an Ingress wildcard). */
export function hostnameMatches(pattern: string, host: string): boolean {
  if (!isWildcardHost(pattern)) return pattern === host;
  const suffix = pattern.slice(1);
  return host.length > suffix.length && host.endsWith(suffix);
}

/** Higher is more specific: exact names over wildcards, longer over shorter; `*` lowest. */
export function hostnameSpecificity(pattern: string | null): number {
  if (pattern === null || pattern === "*") return 0;
  return isWildcardHost(pattern) ? pattern.length : 1_000 + pattern.length;
}

/** Among patterns, the most specific one matching `host`; `*` matches any host. */
export function bestHostname(patterns: Iterable<string>, host: string): string | undefined {
  let best: string | undefined;
  let bestScore = -1;
  for (const p of patterns) {
    if (p !== "*" && !hostnameMatches(p, host)) continue;
    const s = hostnameSpecificity(p);
    if (s > bestScore) {
      best = p;
      bestScore = s;
    }
  }
  return best;
}

/** PathPrefix: element by element, a trailing `/` ignored (`/abc` matches `/abc/def`, not `/abcd`). */
export function prefixMatches(prefix: string, path: string): boolean {
  if (prefix === "") return true;
  if (!path.startsWith(prefix)) return false;
  return path.length === prefix.length || path.charCodeAt(prefix.length) === 47; // "/"
}

function decode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, " "));
  } catch {
    return s;
  }
}

// The query as parameters, parsed once per query string (the last one this process saw). A
// lookup asks it once per query match, and routes may hold thousands: parsed per match, a
// query of 2000 parameters cost about 0.3 ms a match (measured), so well over half a second a
// request, which any client could ask for. Keyed by the query text, one parse serves a whole
// lookup (and the next request's, when it has the same query).
let parsedQuery: string | null = null;
let parsedParams: ReadonlyMap<string, string> = new Map();

function parseQuery(query: string): ReadonlyMap<string, string> {
  const out = new Map<string, string>();
  for (const part of query.split("&")) {
    const eq = part.indexOf("=");
    const name = decode(eq === -1 ? part : part.slice(0, eq));
    if (!out.has(name)) out.set(name, eq === -1 ? "" : decode(part.slice(eq + 1)));
  }
  return out;
}

/** The first value of a query parameter (repeated names are implementation-specific: HTTPQueryParamMatch). */
export function queryValue(query: string, name: string): string | null {
  if (query === "") return null;
  if (query !== parsedQuery) {
    parsedParams = parseQuery(query);
    parsedQuery = query;
  }
  return parsedParams.get(name) ?? null;
}

// RegularExpression matches (implementation-specific in Gateway API; docs/design.md "Gateway
// API"): a path is matched as ingress-nginx matches a use-regex path (`location ~* "^<path>"`:
// anchored at the start, case-insensitive), a header or query value as canary-by-header-pattern
// is (unanchored, case-sensitive), both on the linear-time engine (src/regex/). The table
// crosses to the workers as data, so each process compiles a pattern on its first use, keyed by
// the match object (it dies with the table). The compiler refused the patterns that do not
// compile; one that did not here would match nothing.
const NEVER = (): boolean => false;
const pathRegexes = new WeakMap<GatewayMatch, (path: string) => boolean>();
const valueRegexes = new WeakMap<HeaderMatch, (value: string) => boolean>();

/**
 * What RegularExpression matches may scan in one lookup: each test costs its text's length plus
 * REGEX_TEST_COST. The engine is linear, but linear in the text times the pattern (up to 1000
 * instructions): an unanchored `.*` or `(.*)(.*)(.*)` over an 8 KiB header took 5 to 12 ms on
 * re2js (measured), and routes may hold thousands of such matches, each tried in turn on a
 * request that reaches them, on the worker's one thread: seconds per request, for any client.
 * The budget bounds a request's regex work whatever the routes hold (about 0.2 s at the very
 * worst) and stays far above what ordinary matches spend (a thousand tests of 50-character
 * paths or values). Once it is spent, every further RegularExpression match of the lookup does
 * not match: the request goes where it would go without them (docs/design.md "Gateway API").
 */
export const REGEX_LOOKUP_BUDGET = 131_072;
const REGEX_TEST_COST = 32;
let regexLeft = REGEX_LOOKUP_BUDGET;

/** Starts one lookup's regex budget (findGatewayEntry, explain's walk). */
export function startLookup(): void {
  regexLeft = REGEX_LOOKUP_BUDGET;
}

function spend(text: string): boolean {
  const cost = text.length + REGEX_TEST_COST;
  if (cost > regexLeft) {
    regexLeft = 0;
    return false;
  }
  regexLeft -= cost;
  return true;
}

function regexPath(m: GatewayMatch, path: string): boolean {
  if (!spend(path)) return false;
  let test = pathRegexes.get(m);
  if (test === undefined) {
    const c = compilePathRegex(m.path);
    test = c.ok ? (p) => c.re.test(p) : NEVER;
    pathRegexes.set(m, test);
  }
  return test(path);
}

function valueMatches(h: HeaderMatch, value: string | null): boolean {
  if (h.regex !== true) return value === h.value;
  if (value === null || !spend(value)) return false;
  let test = valueRegexes.get(h);
  if (test === undefined) {
    const c = compileHeaderPattern(h.value);
    test = c.ok ? (v) => c.re.test(v) : NEVER;
    valueRegexes.set(h, test);
  }
  return test(value);
}

/**
 * A gRPC call's path `/<service>/<method>` with any one service and this method (`suffix` is
 * `/<method>`): GRPCMethodMatch with a method and no service.
 */
export function grpcMethodMatches(suffix: string, path: string): boolean {
  const at = path.length - suffix.length;
  return at > 1 && path.charCodeAt(0) === 47 && path.endsWith(suffix) && path.indexOf("/", 1) === at;
}

export function matchesRequest(m: GatewayMatch, req: GatewayRequest): boolean {
  if (
    m.pathType === "Exact"
      ? req.path !== m.path
      : m.pathType === "PathPrefix"
        ? !prefixMatches(m.path, req.path)
        : m.pathType === "GRPCMethod"
          ? !grpcMethodMatches(m.path, req.path)
          : !regexPath(m, req.path)
  )
    return false;
  if (m.method !== null && m.method !== req.method) return false;
  for (const h of m.headers) if (!valueMatches(h, req.header(h.name))) return false;
  for (const q of m.query) if (!valueMatches(q, queryValue(req.query, q.name))) return false;
  return true;
}

/**
 * On a host an Ingress names, the only entries asked: those of routes in the namespaces of the
 * Ingresses naming it (docs/design.md "Gateway API"); undefined for any other host. An exact
 * name first, then an Ingress wildcard, which covers one whole first label as the Ingress
 * table's does (table/lookup.ts selectHost).
 */
export function heldEntries(held: GatewayHeld, host: string): readonly GatewayEntry[] | undefined {
  const exact = held.exact.get(host);
  if (exact !== undefined || held.wildcard.size === 0) return exact;
  const dot = host.indexOf(".");
  return dot > 0 ? held.wildcard.get(host.slice(dot + 1)) : undefined;
}

/** The entry a request gets on Portico's HTTP or HTTPS listener, or null. */
export function findGatewayEntry(routes: GatewayRoutes, https: boolean, req: GatewayRequest): GatewayEntry | null {
  const listeners = https ? routes.https : routes.http;
  if (listeners.size === 0) return null;
  const lkey = bestHostname(listeners.keys(), req.host);
  if (lkey === undefined) return null;
  const idx = listeners.get(lkey)!;
  regexLeft = REGEX_LOOKUP_BUDGET;
  const held = idx.held == null ? undefined : heldEntries(idx.held, req.host);
  if (held !== undefined) {
    for (const e of held) if (matchesRequest(e.match, req)) return e;
    return null;
  }
  const exact = idx.exact.get(req.host);
  if (exact !== undefined) for (const e of exact) if (matchesRequest(e.match, req)) return e;
  for (const [p, l] of idx.wildcards) {
    if (!hostnameMatches(p, req.host)) continue;
    for (const e of l) if (matchesRequest(e.match, req)) return e;
  }
  if (idx.any !== null) for (const e of idx.any) if (matchesRequest(e.match, req)) return e;
  return null;
}

/** One of an entry's choices by weight; `random` in [0, 1). Null when every weight is 0. */
export function chooseWeighted(entry: GatewayEntry, random: number): Match | null {
  if (entry.totalWeight === 0) return null;
  let x = random * entry.totalWeight;
  for (const c of entry.choices) {
    if (x < c.weight) return c.match;
    x -= c.weight;
  }
  return entry.choices[entry.choices.length - 1]!.match;
}

/** HTTPRequestRedirectFilter.statusCode: one of the CRD's enum, 302 (its default) otherwise. */
export function gatewayRedirectCode(v: unknown): 301 | 302 | 303 | 307 | 308 {
  return v === 301 || v === 303 || v === 307 || v === 308 ? v : 302;
}

/**
 * HTTPPathModifier applied to a request path: ReplaceFullPath replaces it whole;
 * ReplacePrefixMatch replaces `matched` (the PathPrefix the rule matched, without its trailing
 * `/`), one `/` kept between the replacement and the rest (`/strip-prefix/three` with `/` →
 * `/three`), and an empty result is `/`. No modifier, or a prefix replacement without a
 * prefix match, keeps the path.
 */
export function modifyPath(path: string, type: string | null, value: string | null, matched: string | null): string {
  if (type === "ReplaceFullPath" && value !== null) return value;
  if (type !== "ReplacePrefixMatch" || value === null || matched === null) return path;
  const rest = path.slice(matched.length);
  const out = value.endsWith("/") && rest.startsWith("/") ? value + rest.slice(1) : value + rest;
  return out === "" ? "/" : out;
}

/** Host header → the name matching uses: lowercased, without the port or a final dot. */
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
