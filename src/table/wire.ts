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
// size) are spelled as strings. A route's stage policies are JSON already (table/policy.ts)
// and go as they are; the receiver freezes them again. A route's canary backend (Route.canary)
// is listed and referred to exactly as its backend is, and so are its error pages' backend and
// its no-endpoints fallback (Route.errorPages, Route.fallback). The path maps are not shipped:
// decodeTable() rebuilds them with buildHost(), the same code that built the original. A host
// in regex mode ships its locations as data (the patterns as written, table/regex.ts) and the
// receiver compiles them again: compiled regexes are not data.
import { assembleTable, buildHost, hostKeyOf, patchTable, viaOf } from "./build.ts";
import { deepFreeze, type StagePolicy } from "./policy.ts";
import type { RegexLocationSpec } from "./regex.ts";
import { allRoutes } from "./routes.ts";
import type { Backend, HostRoutes, Route, RouteCanary, RouteErrorPages, RouteOptions, RouteTable, Upstream } from "./types.ts";

export const WIRE_VERSION = 2;

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

export interface WireDelta {
  readonly v: typeof WIRE_VERSION;
  /** Backends the routes below refer to by index (the ones the registry does not hold). */
  readonly backends: readonly WireBackend[];
  /**
   * Host entries by key (`foo.com`, `*.foo.com`, `*`): routes in the entry's order, or null =
   * removed; `regex`: the locations of a host in regex mode (indexes into `routes`).
   */
  readonly hosts: readonly {
    readonly host: string;
    readonly routes: readonly WireRoute[] | null;
    readonly regex?: readonly RegexLocationSpec[];
  }[];
  /** Absent: the default route did not change. */
  readonly defaultRoute?: WireRoute | null;
  readonly routeCount: number;
  /** server-alias names → host keys: absent when they did not change, else all of them. */
  readonly aliases?: readonly (readonly [string, string])[];
}

export interface WireTable {
  readonly v: typeof WIRE_VERSION;
  readonly backends: readonly WireBackend[];
  /** Every host's routes, hosts in table order, each host's routes in the entry's order. */
  readonly routes: readonly WireRoute[];
  readonly defaultRoute: WireRoute | null;
  /** The locations of each host in regex mode (indexes into that host's routes above). */
  readonly regex: readonly { readonly host: string; readonly locations: readonly RegexLocationSpec[] }[];
  /** server-alias names → host keys (RouteTable.aliasKeys). */
  readonly aliases: readonly (readonly [string, string])[];
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
    else if (k === "retry") out[k] = v === null ? null : deepFreeze(v as object);
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

/** The whole table. With a registry, it is reset to this table's backends (the receiver's will be). */
export function encodeTable(table: RouteTable, registry?: BackendRegistry): WireTable {
  const enc = routeEncoder(() => false);
  const regex: { host: string; locations: readonly RegexLocationSpec[] }[] = [];
  for (const e of [...table.exact.values(), ...table.wildcard.values(), ...(table.any ? [table.any] : [])]) {
    if (e.regex !== null) regex.push({ host: e.host, locations: e.regex.specs });
  }
  const wire: WireTable = {
    v: WIRE_VERSION,
    routes: allRoutes(table).map(enc.route),
    defaultRoute: table.defaultRoute ? enc.route(table.defaultRoute) : null,
    backends: enc.backends,
    regex,
    aliases: [...table.aliasKeys],
  };
  if (registry) {
    registry.clear();
    for (const b of enc.sent) registry.set(b.id, b);
  }
  return wire;
}

/**
 * Rebuild a RouteTable that answers every lookup as the encoded one did. Re-sorting a host's
 * routes that are already in precedence order is a no-op (the sort is stable), so ties keep
 * their priority order; a regex host's routes are kept in the order sent, which its locations
 * index. Throws on a backend index out of range or a regex location that does not compile (a
 * corrupt message). With a registry, it is reset to this table's backends once the table is
 * decoded.
 */
export function decodeTable(wire: WireTable, registry?: BackendRegistry): RouteTable {
  if (wire.v !== WIRE_VERSION) throw new Error(`route table wire version ${String(wire.v)} is not ${WIRE_VERSION}`);
  const backends = wire.backends.map(decodeBackend);
  const route = routeDecoder(backends, null);
  const byHost = new Map<string, Route[]>();
  for (const w of wire.routes) {
    const r = route(w);
    const k = hostKeyOf(r);
    const list = byHost.get(k);
    if (list) list.push(r);
    else byHost.set(k, [r]);
  }
  const regex = new Map(wire.regex.map((h) => [h.host, h.locations] as const));
  for (const k of regex.keys()) if (!byHost.has(k)) throw new Error(`regex locations for host ${k}, which has no routes`);
  const keys = [...byHost.keys()].sort();
  const table = assembleTable(
    keys.map((k) => buildHost(k, byHost.get(k) as Route[], viaOf(k), regex.get(k) ?? null)),
    wire.defaultRoute ? route(wire.defaultRoute) : null,
    wire.routes.length,
    new Map(wire.aliases),
  );
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

/**
 * What turns `prev` into `next` for a receiver whose registry mirrors `registry` (which is
 * updated with the backends this delta carries).
 */
export function encodeDelta(prev: RouteTable, next: RouteTable, registry: BackendRegistry): WireDelta {
  const enc = routeEncoder((b) => registry.get(b.id) === b);
  const hosts = changedHosts(prev, next).map(([host, e]) => ({
    host,
    routes: e ? e.routes.map(enc.route) : null,
    ...(e?.regex ? { regex: e.regex.specs } : {}),
  }));
  const delta: WireDelta = {
    v: WIRE_VERSION,
    hosts,
    ...(next.defaultRoute === prev.defaultRoute ? {} : { defaultRoute: next.defaultRoute ? enc.route(next.defaultRoute) : null }),
    routeCount: next.routeCount,
    backends: enc.backends,
    ...(next.aliasKeys === prev.aliasKeys ? {} : { aliases: [...next.aliasKeys] }),
  };
  for (const b of enc.sent) registry.set(b.id, b);
  return delta;
}

/**
 * The receiver's side of encodeDelta: `current` patched (new maps; `current` stays as it was).
 * Throws on a corrupt delta or an unknown backend id, leaving the registry as it was.
 */
export function applyDelta(current: RouteTable, delta: WireDelta, registry: BackendRegistry): RouteTable {
  if (delta.v !== WIRE_VERSION) throw new Error(`route table wire version ${String(delta.v)} is not ${WIRE_VERSION}`);
  const backends = delta.backends.map(decodeBackend);
  const route = routeDecoder(backends, registry);
  const changes = delta.hosts.map(
    ({ host, routes, regex }) => [host, routes ? buildHost(host, routes.map(route), viaOf(host), regex ?? null) : null] as const,
  );
  const defaultRoute = delta.defaultRoute === undefined ? current.defaultRoute : delta.defaultRoute ? route(delta.defaultRoute) : null;
  // Map order is irrelevant to lookups: new hosts are appended.
  const aliasKeys = delta.aliases === undefined ? current.aliasKeys : new Map(delta.aliases);
  const table = patchTable(current, changes, defaultRoute, delta.routeCount, true, aliasKeys);
  for (const b of backends) registry.set(b.id, b);
  return table;
}
