// The route table as JSON-safe plain data, for handing a compiled table from the primary
// process to its data-plane workers (docs/design.md, "Workers"). Pure: no I/O, no clock.
//
// Two forms: the whole table (a worker's first table, after a restart or a resync), and a
// delta from the previous table (every other change): the host entries whose HostRoutes
// object changed, the default route if it changed, and the backends those refer to that the
// worker does not hold yet. Both ends keep a BackendRegistry (id → Backend) updated the same
// way: a full table resets it to that table's backends, a delta adds the backends it carries.
// A delta names a backend by id when the registry already holds that very object, so the
// worker keeps its own Backend object (and the proxy's state keyed on it) for it.
//
// Shape: every Backend is listed once in `backends` and routes refer to it by index; each
// backend's `endpoints` are indexes into its own `allEndpoints` (compile/backends.ts builds
// them as a subset of the same objects). Bun's IPC serialises with JSON, which turns
// Infinity into null, so non-finite numbers in RouteOptions (an explicitly unlimited body
// size) are spelled as strings. A route's stage policies are JSON already (policy/stages.ts)
// and go as they are; the receiver freezes them again. A route's canary backend (Route.canary)
// is listed and referred to exactly as its backend is, and so are its error pages' backend and
// its no-endpoints fallback (Route.errorPages, Route.fallback). The path maps are not shipped:
// decodeTable() rebuilds them with buildHost(), the same code that built the original. A host
// in regex mode ships its locations as data (the patterns as written, table/regex.ts) and the
// receiver compiles them again: compiled regexes are not data.
//
// Both forms list host entries one by one, each with its own routes, including an entry with
// no routes at all: a host whose every path was refused is still a host (ingress-nginx keeps a
// server block for it, so its requests never reach another host's rules: docs/design.md,
// "Workers"), and a receiver that rebuilt hosts from the routes alone would lose it. A receiver
// may build the entries one at a time (TableProblem): an entry it cannot build is reported,
// naming the host and its Ingresses, and replaced by the one it had (else by an empty one,
// which answers as a host with no paths does), so one bad entry never costs the others.
import { assembleTable, buildHost, patchTable, viaOf } from "./build.ts";
import { deepFreeze, type StagePolicy } from "../policy/stages.ts";
import type { RegexLocationSpec } from "./types.ts";
import type { Backend, HostRoutes, Match, Route, RouteCanary, RouteErrorPages, RouteOptions, RouteTable, Upstream, GlobalHeaders } from "./types.ts";
import type { GatewayEntry, GatewayHeld, GatewayHosts, GatewayMatch, GatewayPort, GatewayRoutes } from "./types.ts";

export const WIRE_VERSION = 3;

/** A number that JSON can carry: finite numbers as is, the rest spelled out. */
export type WireNumber = number | "Infinity" | "-Infinity" | "NaN";

type NumberOptions = Omit<RouteOptions, "stages" | "retry">;

export type WireOptions = { readonly [K in keyof NumberOptions]: NumberOptions[K] extends boolean ? boolean : WireNumber | null } & {
  readonly stages: readonly StagePolicy[] | null;
  readonly retry: RouteOptions["retry"];
};

export interface WireBackend extends Omit<Backend, "endpoints" | "allEndpoints"> {
  readonly allEndpoints: readonly Upstream[];
  /** Indexes into allEndpoints, or an inline Upstream for one that is not in it. */
  readonly endpoints: readonly (number | Upstream)[];
}

export interface WireRoute extends Omit<Route, "backend" | "options" | "canary" | "errorPages" | "fallback"> {
  /** Index into the message's `backends`; in a delta, or a string: the id of a registry backend. */
  readonly backend: number | string;
  readonly options: WireOptions;
  /** The canary's backend, referred to as `backend` is. */
  readonly canary?: { readonly ingress: RouteCanary["ingress"]; readonly backend: number | string };
  /** The error pages, their backend referred to as `backend` is (null: none, the 404). */
  readonly errorPages?: Omit<RouteErrorPages, "backend"> & { readonly backend: number | string | null };
  /** The no-endpoints fallback, referred to as `backend` is. */
  readonly fallback?: number | string;
}

/** id → Backend held by the receiving end (see the top of this file). */
export type BackendRegistry = Map<string, Backend>;

/**
 * One host entry by key (`foo.com`, `*.foo.com`, `*`): its routes in the entry's order (none
 * for a host whose paths were all refused); `regex`: the locations of a host in regex mode
 * (indexes into `routes`).
 */
export interface WireHost {
  readonly host: string;
  readonly routes: readonly WireRoute[];
  readonly regex?: readonly RegexLocationSpec[];
  /** The host's implicit `/` location (HostRoutes.root), when it has one. */
  readonly root?: WireRoute;
}

export interface WireDelta {
  readonly v: typeof WIRE_VERSION;
  /** Backends the routes below refer to by index (the ones the registry does not hold). */
  readonly backends: readonly WireBackend[];
  /** Changed host entries (WireHost); routes null = removed. */
  readonly hosts: readonly (Omit<WireHost, "routes"> & { readonly routes: readonly WireRoute[] | null })[];
  /** Absent: the default route did not change. */
  readonly defaultRoute?: WireRoute | null;
  readonly routeCount: number;
  /** server-alias names → host keys: absent when they did not change, else all of them. */
  readonly aliases?: readonly (readonly [string, string])[];
  /** Absent: the Gateway API part did not change; null: there is none now. */
  readonly gateway?: WireGateway | null;
  /**
   * The Gateway API part as changes to the receiver's (when both tables have one): only the
   * listener hostname groups and route hostname lists that are not the same objects.
   */
  readonly gatewayDelta?: WireGatewayDelta;
  /** Absent: the Gateways' own ports did not change; null: there are none now; else all of them. */
  readonly gatewayPorts?: readonly WireGatewayPort[] | null;
  /** Absent: add-headers and proxy-set-headers did not change; null: none now (RouteTable.globalHeaders). */
  readonly globalHeaders?: GlobalHeaders | null;
}

/** One Gateway's own port (RouteTable.gatewayPorts). */
interface WireGatewayPort {
  readonly port: number;
  readonly gateway: string;
  readonly declared: number;
  readonly https: boolean;
  readonly routes: WireGateway | null;
}

/** One listener hostname group's changes: removed, or its changed route hostname lists. */
interface WireGatewayHostsDelta {
  readonly key: string;
  readonly removed?: true;
  /** Changed exact route hostnames; null = removed. */
  readonly exact?: readonly (readonly [string, readonly WireGatewayEntry[] | null])[];
  /** Absent: unchanged; else all of them. */
  readonly wildcards?: readonly (readonly [string, readonly WireGatewayEntry[]])[];
  /** Absent: unchanged. */
  readonly any?: readonly WireGatewayEntry[] | null;
  /** Absent: unchanged; null: none. Resolved against the group's lists after the changes above. */
  readonly held?: WireGatewayHeld | null;
}

/**
 * GatewayHosts.held, its entries named where they sit in the group's own lists (they are some
 * of those entries): `[list, index]`, the list being an exact route hostname, a wildcard route
 * hostname (`*.`), or null for the routes without hostnames.
 */
interface WireGatewayHeld {
  readonly exact: readonly (readonly [string, readonly WireHeldRef[]])[];
  readonly wildcard: readonly (readonly [string, readonly WireHeldRef[]])[];
}
type WireHeldRef = readonly [string | null, number];

export interface WireGatewayDelta {
  readonly http: readonly WireGatewayHostsDelta[];
  readonly https: readonly WireGatewayHostsDelta[];
}

/** The Gateway API part (RouteTable.gateway): its matches as data, its routes as wire routes. */
export interface WireGateway {
  readonly http: readonly WireGatewayHosts[];
  readonly https: readonly WireGatewayHosts[];
}

interface WireGatewayEntry {
  readonly match: GatewayMatch;
  readonly choices: readonly { readonly route: WireRoute; readonly weight: number; readonly hostKey: string; readonly via: Match["via"] }[];
  readonly totalWeight: number;
}

interface WireGatewayHosts {
  readonly key: string;
  readonly exact: readonly (readonly [string, readonly WireGatewayEntry[]])[];
  readonly wildcards: readonly (readonly [string, readonly WireGatewayEntry[]])[];
  readonly any: readonly WireGatewayEntry[] | null;
  /** Absent: none. */
  readonly held?: WireGatewayHeld;
}

export interface WireTable {
  readonly v: typeof WIRE_VERSION;
  /** Absent: none (RouteTable.gateway). */
  readonly gateway?: WireGateway;
  /** Absent: none (RouteTable.gatewayPorts). */
  readonly gatewayPorts?: readonly WireGatewayPort[];
  readonly backends: readonly WireBackend[];
  /** Every host entry of the table, in table order, those with no routes included. */
  readonly hosts: readonly WireHost[];
  readonly defaultRoute: WireRoute | null;
  /** server-alias names → host keys (RouteTable.aliasKeys). */
  readonly aliases: readonly (readonly [string, string])[];
  /** Absent: none (RouteTable.globalHeaders). Plain data; checked again where the proxy uses it. */
  readonly globalHeaders?: GlobalHeaders;
}

function encodeNumber(n: number): WireNumber {
  if (Number.isFinite(n)) return n;
  return Number.isNaN(n) ? "NaN" : n > 0 ? "Infinity" : "-Infinity";
}

function decodeNumber(n: WireNumber): number {
  return typeof n === "number" ? n : n === "Infinity" ? Infinity : n === "-Infinity" ? -Infinity : Number.NaN;
}

function encodeOptions(o: RouteOptions): WireOptions {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) out[k] = typeof v === "number" ? encodeNumber(v) : v;
  return out as WireOptions;
}

function decodeOptions(o: WireOptions): RouteOptions {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    if (k === "stages") out[k] = v === null ? null : deepFreeze(v as StagePolicy[]);
    else if (k === "retry" || k === "upstreamTls") out[k] = v === null ? null : deepFreeze(v as object);
    else out[k] = typeof v === "boolean" || v === null ? v : decodeNumber(v as WireNumber);
  }
  return out as unknown as RouteOptions;
}

function encodeBackend(b: Backend): WireBackend {
  const { endpoints, allEndpoints, ...rest } = b;
  const at = new Map(allEndpoints.map((u, j) => [u, j] as const));
  return { ...rest, allEndpoints, endpoints: endpoints.map((u) => at.get(u) ?? u) };
}

function decodeBackend(b: WireBackend): Backend {
  const { endpoints, allEndpoints, ...rest } = b;
  const resolved = endpoints.map((e) => {
    if (typeof e !== "number") return e;
    const u = allEndpoints[e];
    if (u === undefined) throw new Error(`backend ${b.id}: endpoint index ${e} out of range`);
    return u;
  });
  return Object.freeze({ ...rest, allEndpoints, endpoints: resolved });
}

/** Routes → wire routes, listing each backend once; `known(b)` may name it by id instead. */
function routeEncoder(known: (b: Backend) => boolean) {
  const index = new Map<Backend, number>();
  const backends: WireBackend[] = [];
  const sent: Backend[] = [];
  const backendRef = (b: Backend): number | string => {
    if (known(b)) return b.id;
    let i = index.get(b);
    if (i === undefined) {
      i = backends.length;
      index.set(b, i);
      backends.push(encodeBackend(b));
      sent.push(b);
    }
    return i;
  };
  const route = (r: Route): WireRoute => {
    const { backend, options, canary, errorPages, fallback, ...rest } = r;
    let out: WireRoute = { ...rest, backend: backendRef(backend), options: encodeOptions(options) };
    if (canary !== undefined) out = { ...out, canary: { ingress: canary.ingress, backend: backendRef(canary.backend) } };
    if (errorPages !== undefined) out = { ...out, errorPages: { ...errorPages, backend: errorPages.backend === null ? null : backendRef(errorPages.backend) } };
    if (fallback !== undefined) out = { ...out, fallback: backendRef(fallback) };
    return out;
  };
  return { route, backends, sent };
}

function routeDecoder(backends: readonly Backend[], registry: ReadonlyMap<string, Backend> | null) {
  const find = (r: WireRoute, ref: number | string): Backend => {
    const backend = typeof ref === "number" ? backends[ref] : registry?.get(ref);
    if (backend === undefined) throw new Error(`route ${r.path}: backend ${JSON.stringify(ref)} is not known`);
    return backend;
  };
  return (r: WireRoute): Route => {
    const { canary, errorPages, fallback, ...rest } = r;
    let route: Route = { ...rest, backend: find(r, r.backend), options: decodeOptions(r.options) };
    if (canary !== undefined) route = { ...route, canary: { ingress: canary.ingress, backend: find(r, canary.backend) } };
    if (errorPages !== undefined) {
      const backend = errorPages.backend === null ? null : find(r, errorPages.backend);
      route = { ...route, errorPages: Object.freeze({ codes: Object.freeze([...errorPages.codes]), intercept: errorPages.intercept, backend }) };
    }
    if (fallback !== undefined) route = { ...route, fallback: find(r, fallback) };
    return route;
  };
}

function gatewayEntryEncoder(route: (r: Route) => WireRoute): (e: GatewayEntry) => WireGatewayEntry {
  return (e) => ({
    match: e.match,
    choices: e.choices.map((c) => ({ route: route(c.match.route), weight: c.weight, hostKey: c.match.hostKey, via: c.match.via })),
    totalWeight: e.totalWeight,
  });
}

function gatewayEntryDecoder(route: (r: WireRoute) => Route): (e: WireGatewayEntry) => GatewayEntry {
  return (e) =>
    Object.freeze({
      match: deepFreeze(e.match),
      // Arrays not frozen: JSC keeps a frozen array in a slower, larger form (the types keep them read-only).
      choices: e.choices.map((c) => Object.freeze({ match: Object.freeze({ route: route(c.route), hostKey: c.hostKey, via: c.via }), weight: c.weight })),
      totalWeight: e.totalWeight,
    });
}

function encodeHeld(h: GatewayHosts, held: GatewayHeld): WireGatewayHeld {
  const at = new Map<GatewayEntry, WireHeldRef>();
  for (const [k, l] of h.exact) l.forEach((e, i) => at.set(e, [k, i]));
  for (const [k, l] of h.wildcards) l.forEach((e, i) => at.set(e, [k, i]));
  h.any?.forEach((e, i) => at.set(e, [null, i]));
  // Every held entry is one of the group's (compile/gateway/ingress-hosts.ts); one that were not
  // would be left out, so the receiver asks fewer routes first, never more.
  const refs = (l: readonly GatewayEntry[]): WireHeldRef[] => {
    const out: WireHeldRef[] = [];
    for (const e of l) {
      const r = at.get(e);
      if (r !== undefined) out.push(r);
    }
    return out;
  };
  return { exact: [...held.exact].map(([k, l]) => [k, refs(l)] as const), wildcard: [...held.wildcard].map(([k, l]) => [k, refs(l)] as const) };
}

function decodeHeld(h: Omit<GatewayHosts, "held">, w: WireGatewayHeld): GatewayHeld {
  const wild = new Map(h.wildcards);
  const resolve = (refs: readonly WireHeldRef[]): readonly GatewayEntry[] => {
    const out: GatewayEntry[] = [];
    for (const [k, i] of refs) {
      const e = (k === null ? h.any : k.startsWith("*.") ? wild.get(k) : h.exact.get(k))?.[i];
      if (e !== undefined) out.push(e);
    }
    return out;
  };
  return Object.freeze({ exact: new Map(w.exact.map(([k, r]) => [k, resolve(r)] as const)), wildcard: new Map(w.wildcard.map(([k, r]) => [k, resolve(r)] as const)) });
}

/**
 * The changes from `prev` to `next` (compile/gateway/table.ts replaces only the groups and
 * lists it rebuilt, so identity says what is unchanged): an HTTPRoute edit sends its route
 * hostname lists, not the whole Gateway part.
 */
function encodeGatewayDelta(prev: GatewayRoutes, next: GatewayRoutes, route: (r: Route) => WireRoute): WireGatewayDelta {
  const entry = gatewayEntryEncoder(route);
  const groups = (a: ReadonlyMap<string, GatewayHosts>, b: ReadonlyMap<string, GatewayHosts>): WireGatewayHostsDelta[] => {
    const out: WireGatewayHostsDelta[] = [];
    for (const key of a.keys()) if (!b.has(key)) out.push({ key, removed: true });
    for (const [key, h] of b) {
      const old = a.get(key);
      if (old === h) continue;
      const exact: [string, readonly WireGatewayEntry[] | null][] = [];
      for (const [k, l] of h.exact) if (old?.exact.get(k) !== l) exact.push([k, l.map(entry)]);
      if (old !== undefined) for (const k of old.exact.keys()) if (!h.exact.has(k)) exact.push([k, null]);
      out.push({
        key,
        ...(exact.length > 0 ? { exact } : {}),
        ...(old?.wildcards === h.wildcards ? {} : { wildcards: h.wildcards.map(([k, l]) => [k, l.map(entry)] as const) }),
        ...(old !== undefined && old.any === h.any ? {} : { any: h.any === null ? null : h.any.map(entry) }),
        ...((old?.held ?? null) === (h.held ?? null) ? {} : { held: h.held == null ? null : encodeHeld(h, h.held) }),
      });
    }
    return out;
  };
  return { http: groups(prev.http, next.http), https: groups(prev.https, next.https) };
}

function applyGatewayDelta(current: GatewayRoutes, d: WireGatewayDelta, route: (r: WireRoute) => Route): GatewayRoutes {
  const entry = gatewayEntryDecoder(route);
  const list = (es: readonly WireGatewayEntry[]): readonly GatewayEntry[] => es.map(entry);
  const groups = (m: ReadonlyMap<string, GatewayHosts>, changes: readonly WireGatewayHostsDelta[]): Map<string, GatewayHosts> => {
    const out = new Map(m);
    for (const c of changes) {
      if (c.removed) {
        out.delete(c.key);
        continue;
      }
      const old = out.get(c.key);
      const exact = new Map(old?.exact ?? []);
      for (const [k, es] of c.exact ?? []) {
        if (es === null) exact.delete(k);
        else exact.set(k, list(es));
      }
      const lists = {
        exact,
        wildcards: c.wildcards === undefined ? (old?.wildcards ?? Object.freeze([])) : Object.freeze(c.wildcards.map(([k, es]) => Object.freeze([k, list(es)] as const))),
        any: c.any === undefined ? (old?.any ?? null) : c.any === null ? null : list(c.any),
      };
      const held = c.held === undefined ? (old?.held ?? null) : c.held === null ? null : decodeHeld(lists, c.held);
      out.set(c.key, Object.freeze(held === null ? lists : { ...lists, held }));
    }
    // Listener hostname groups stay in key order (table/gateway.ts asks them in map order only
    // to find the most specific, so order does not change an answer; kept for a stable view).
    return new Map([...out.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  };
  return Object.freeze({ http: groups(current.http, d.http), https: groups(current.https, d.https) });
}

function encodeGateway(g: GatewayRoutes, route: (r: Route) => WireRoute): WireGateway {
  const entry = gatewayEntryEncoder(route);
  const hosts = (m: ReadonlyMap<string, GatewayHosts>): WireGatewayHosts[] =>
    [...m].map(([key, h]) => ({
      key,
      exact: [...h.exact].map(([k, l]) => [k, l.map(entry)] as const),
      wildcards: h.wildcards.map(([k, l]) => [k, l.map(entry)] as const),
      any: h.any === null ? null : h.any.map(entry),
      ...(h.held == null ? {} : { held: encodeHeld(h, h.held) }),
    }));
  return { http: hosts(g.http), https: hosts(g.https) };
}

function encodeGatewayPorts(m: ReadonlyMap<number, GatewayPort>, route: (r: Route) => WireRoute): WireGatewayPort[] {
  return [...m].map(([port, g]) => ({ port, gateway: g.gateway, declared: g.declared, https: g.https, routes: g.routes === null ? null : encodeGateway(g.routes, route) }));
}

function decodeGatewayPorts(w: readonly WireGatewayPort[], route: (r: WireRoute) => Route): ReadonlyMap<number, GatewayPort> {
  return new Map(
    w.map((g) => [g.port, Object.freeze({ gateway: g.gateway, declared: g.declared, https: g.https, routes: g.routes === null ? null : decodeGateway(g.routes, route) })] as const),
  );
}

function decodeGateway(w: WireGateway, route: (r: WireRoute) => Route): GatewayRoutes {
  const entry = gatewayEntryDecoder(route);
  const hosts = (l: readonly WireGatewayHosts[]): Map<string, GatewayHosts> =>
    new Map(
      l.map((h) => {
        const lists = {
          exact: new Map(h.exact.map(([k, es]) => [k, es.map(entry)] as const)),
          wildcards: Object.freeze(h.wildcards.map(([k, es]) => Object.freeze([k, es.map(entry)] as const))),
          any: h.any === null ? null : h.any.map(entry),
        };
        return [h.key, Object.freeze(h.held === undefined ? lists : { ...lists, held: decodeHeld(lists, h.held) })] as const;
      }),
    );
  return Object.freeze({ http: hosts(w.http), https: hosts(w.https) });
}

/** The whole table. With a registry, it is reset to this table's backends (the receiver's will be). */
export function encodeTable(table: RouteTable, registry?: BackendRegistry): WireTable {
  const enc = routeEncoder(() => false);
  const hosts = hostEntries(table).map((e) => wireHost(e, enc.route));
  const wire: WireTable = {
    v: WIRE_VERSION,
    hosts,
    defaultRoute: table.defaultRoute ? enc.route(table.defaultRoute) : null,
    backends: enc.backends,
    aliases: [...table.aliasKeys],
    ...(table.gateway ? { gateway: encodeGateway(table.gateway, enc.route) } : {}),
    ...(table.gatewayPorts ? { gatewayPorts: encodeGatewayPorts(table.gatewayPorts, enc.route) } : {}),
    ...(table.globalHeaders ? { globalHeaders: table.globalHeaders } : {}),
  };
  if (registry) {
    registry.clear();
    for (const b of enc.sent) registry.set(b.id, b);
  }
  return wire;
}

/** Every host entry: exact, wildcard, hostless, each map in its order. */
function hostEntries(table: RouteTable): HostRoutes[] {
  return [...table.exact.values(), ...table.wildcard.values(), ...(table.any ? [table.any] : [])];
}

function wireHost(e: HostRoutes, route: (r: Route) => WireRoute): WireHost {
  return { host: e.host, routes: e.routes.map(route), ...(e.regex ? { regex: e.regex.specs } : {}), ...(e.root ? { root: route(e.root.route) } : {}) };
}

/** A host entry a receiver could not build (decodeTable, applyDelta with `onProblem`). */
export interface TableProblem {
  /** Host key (`*` for the rules without a host). */
  readonly host: string;
  /** The Ingresses (`namespace/name`) whose routes the entry holds. */
  readonly ingresses: readonly string[];
  readonly error: string;
  /** What serves the host instead: the entry the receiver had, or an empty one (no paths). */
  readonly kept: "previous" | "empty";
}

export interface DecodeOptions {
  /**
   * Build the host entries one at a time and report those that cannot be built, instead of
   * refusing the whole table. Without it, any such entry throws.
   */
  readonly onProblem?: (p: TableProblem) => void;
  /** The receiver's current table: a host entry that cannot be built keeps its entry here. */
  readonly previous?: RouteTable | null;
}

/** The entry of `key` in `table`, if any. */
function entryOf(table: RouteTable, key: string): HostRoutes | null {
  if (key === "*") return table.any;
  return (key.startsWith("*.") ? table.wildcard.get(key.slice(2)) : table.exact.get(key)) ?? null;
}

/** Build one wire host entry; on failure, report it (or throw without a reporter) and fall back. */
function hostBuilder(route: (r: WireRoute) => Route, o: DecodeOptions) {
  return (h: WireHost): HostRoutes => {
    try {
      return buildHost(h.host, h.routes.map(route), viaOf(h.host), h.regex ?? null, h.root === undefined ? null : route(h.root));
    } catch (err) {
      if (o.onProblem === undefined) throw err;
      const prev = o.previous ? entryOf(o.previous, h.host) : null;
      const ingresses = [...new Set(h.routes.map((r) => `${r.ingress.namespace}/${r.ingress.name}`))].sort();
      o.onProblem({ host: h.host, ingresses, error: err instanceof Error ? err.message : String(err), kept: prev ? "previous" : "empty" });
      return prev ?? buildHost(h.host, [], viaOf(h.host), null);
    }
  };
}

/**
 * Rebuild a RouteTable that answers every lookup as the encoded one did. Re-sorting a host's
 * routes that are already in precedence order is a no-op (the sort is stable), so ties keep
 * their priority order; a regex host's routes are kept in the order sent, which its locations
 * index. Throws on a corrupt message (wrong version, a backend or endpoint index out of range);
 * a host entry that cannot be built (a regex location that does not compile, a route index out
 * of range) throws too, unless `o.onProblem` takes it (DecodeOptions). With a registry, it is
 * reset to this table's backends once the table is decoded.
 */
export function decodeTable(wire: WireTable, registry?: BackendRegistry, o: DecodeOptions = {}): RouteTable {
  if (wire.v !== WIRE_VERSION) throw new Error(`route table wire version ${String(wire.v)} is not ${WIRE_VERSION}`);
  const backends = wire.backends.map(decodeBackend);
  const route = routeDecoder(backends, null);
  const build = hostBuilder(route, o);
  const byKey = new Map<string, WireHost>();
  for (const h of wire.hosts) {
    if (byKey.has(h.host)) throw new Error(`host ${h.host} is listed twice`);
    byKey.set(h.host, h);
  }
  const entries = [...byKey.keys()].sort().map((k) => build(byKey.get(k) as WireHost));
  const assembled = assembleTable(
    entries,
    wire.defaultRoute ? route(wire.defaultRoute) : null,
    entries.reduce((n, e) => n + e.routes.length, 0),
    new Map(wire.aliases),
  );
  const withGateway = wire.gateway ? Object.freeze({ ...assembled, gateway: decodeGateway(wire.gateway, route) }) : assembled;
  const withPorts = wire.gatewayPorts ? Object.freeze({ ...withGateway, gatewayPorts: decodeGatewayPorts(wire.gatewayPorts, route) }) : withGateway;
  const table = wire.globalHeaders ? Object.freeze({ ...withPorts, globalHeaders: wire.globalHeaders }) : withPorts;
  if (registry) {
    registry.clear();
    for (const b of backends) registry.set(b.id, b);
  }
  return table;
}

/** Host entries of `next` whose object differs from `prev`'s (or that `prev` lacks), and the removed keys. */
function changedHosts(prev: RouteTable, next: RouteTable): [string, HostRoutes | null][] {
  const out: [string, HostRoutes | null][] = [];
  const diff = (a: ReadonlyMap<string, HostRoutes>, b: ReadonlyMap<string, HostRoutes>, key: (k: string) => string) => {
    if (a === b) return;
    for (const [k, e] of b) if (a.get(k) !== e) out.push([key(k), e]);
    for (const k of a.keys()) if (!b.has(k)) out.push([key(k), null]);
  };
  diff(prev.exact, next.exact, (k) => k);
  diff(prev.wildcard, next.wildcard, (k) => `*.${k}`);
  if (prev.any !== next.any) out.push(["*", next.any]);
  return out;
}

/** How many host entries differ between two tables (to choose between a delta and a full table). */
export function countChangedHosts(prev: RouteTable, next: RouteTable): number {
  return changedHosts(prev, next).length;
}

function gatewayChange(prev: GatewayRoutes | null, next: GatewayRoutes | null, route: (r: Route) => WireRoute): Pick<WireDelta, "gateway" | "gatewayDelta"> {
  if (prev === next) return {};
  if (next === null) return { gateway: null };
  if (prev === null) return { gateway: encodeGateway(next, route) };
  return { gatewayDelta: encodeGatewayDelta(prev, next, route) };
}

/**
 * What turns `prev` into `next` for a receiver whose registry mirrors `registry` (which is
 * updated with the backends this delta carries).
 */
export function encodeDelta(prev: RouteTable, next: RouteTable, registry: BackendRegistry): WireDelta {
  const enc = routeEncoder((b) => registry.get(b.id) === b);
  const hosts = changedHosts(prev, next).map(([host, e]) => (e ? wireHost(e, enc.route) : { host, routes: null }));
  const delta: WireDelta = {
    v: WIRE_VERSION,
    hosts,
    ...(next.defaultRoute === prev.defaultRoute ? {} : { defaultRoute: next.defaultRoute ? enc.route(next.defaultRoute) : null }),
    routeCount: next.routeCount,
    backends: enc.backends,
    ...(next.aliasKeys === prev.aliasKeys ? {} : { aliases: [...next.aliasKeys] }),
    ...gatewayChange(prev.gateway ?? null, next.gateway ?? null, enc.route),
    // Sent whole when changed: a few ports, each one Gateway's rules.
    ...((prev.gatewayPorts ?? null) === (next.gatewayPorts ?? null) ? {} : { gatewayPorts: next.gatewayPorts ? encodeGatewayPorts(next.gatewayPorts, enc.route) : null }),
    ...((prev.globalHeaders ?? null) === (next.globalHeaders ?? null) ? {} : { globalHeaders: next.globalHeaders ?? null }),
  };
  for (const b of enc.sent) registry.set(b.id, b);
  return delta;
}

/**
 * The receiver's side of encodeDelta: `current` patched (new maps; `current` stays as it was).
 * Throws on a corrupt delta or an unknown backend id, leaving the registry as it was; a host
 * entry that cannot be built throws too, unless `onProblem` takes it (it keeps its entry in
 * `current`, DecodeOptions).
 */
export function applyDelta(current: RouteTable, delta: WireDelta, registry: BackendRegistry, onProblem?: DecodeOptions["onProblem"]): RouteTable {
  if (delta.v !== WIRE_VERSION) throw new Error(`route table wire version ${String(delta.v)} is not ${WIRE_VERSION}`);
  const backends = delta.backends.map(decodeBackend);
  const route = routeDecoder(backends, registry);
  const build = hostBuilder(route, onProblem ? { onProblem, previous: current } : {});
  let routeCount = delta.routeCount;
  const changes = delta.hosts.map((h) => {
    if (h.routes === null) return [h.host, null] as const;
    const e = build(h as WireHost);
    // A kept or empty entry in place of the one sent: count the routes actually served.
    routeCount += e.routes.length - h.routes.length;
    return [h.host, e] as const;
  });
  const defaultRoute = delta.defaultRoute === undefined ? current.defaultRoute : delta.defaultRoute ? route(delta.defaultRoute) : null;
  // Map order is irrelevant to lookups: new hosts are appended.
  const aliasKeys = delta.aliases === undefined ? current.aliasKeys : new Map(delta.aliases);
  const patched = patchTable(current, changes, defaultRoute, routeCount, true, aliasKeys);
  let gateway = delta.gateway === undefined ? (current.gateway ?? null) : delta.gateway === null ? null : decodeGateway(delta.gateway, route);
  if (delta.gatewayDelta !== undefined) {
    if (gateway === null) throw new Error("route table delta: Gateway API changes to a table without a Gateway API part");
    gateway = applyGatewayDelta(gateway, delta.gatewayDelta, route);
  }
  const gatewayPorts = delta.gatewayPorts === undefined ? (current.gatewayPorts ?? null) : delta.gatewayPorts === null ? null : decodeGatewayPorts(delta.gatewayPorts, route);
  const withGateway = gateway === null ? patched : Object.freeze({ ...patched, gateway });
  const withPorts = gatewayPorts === null ? withGateway : Object.freeze({ ...withGateway, gatewayPorts });
  const globalHeaders = delta.globalHeaders === undefined ? (current.globalHeaders ?? null) : delta.globalHeaders;
  const table = globalHeaders === null ? withPorts : Object.freeze({ ...withPorts, globalHeaders });
  for (const b of backends) registry.set(b.id, b);
  return table;
}
