// The route table as JSON-safe plain data, for handing a compiled table from the primary
// process to its data-plane workers (issue 8 point 3). Pure: no I/O, no clock.
//
// Shape: every Backend is listed once in `backends` and routes refer to it by index; each
// backend's `endpoints` are indexes into its own `allEndpoints` (compile/backends.ts builds
// them as a subset of the same objects). Bun's IPC serialises with JSON, which turns
// Infinity into null, so non-finite numbers in RouteOptions (an explicitly unlimited body
// size) are spelled as strings. The tries are not shipped: decodeTable() rebuilds them
// with buildTable(), the same code that built the original.
import { buildTable } from "./build.ts";
import { allRoutes } from "./routes.ts";
import type { Backend, Route, RouteOptions, RouteTable, Upstream } from "./types.ts";

export const WIRE_VERSION = 1;

/** A number that JSON can carry: finite numbers as is, the rest spelled out. */
export type WireNumber = number | "Infinity" | "-Infinity" | "NaN";

export type WireOptions = { readonly [K in keyof RouteOptions]: RouteOptions[K] extends boolean ? boolean : WireNumber | null };

export interface WireBackend extends Omit<Backend, "endpoints" | "allEndpoints"> {
  readonly allEndpoints: readonly Upstream[];
  /** Indexes into allEndpoints, or an inline Upstream for one that is not in it. */
  readonly endpoints: readonly (number | Upstream)[];
}

export interface WireRoute extends Omit<Route, "backend" | "options"> {
  /** Index into WireTable.backends. */
  readonly backend: number;
  readonly options: WireOptions;
}

export interface WireTable {
  readonly v: typeof WIRE_VERSION;
  readonly backends: readonly WireBackend[];
  /** Every host's routes, hosts in table order, each host's routes in precedence order. */
  readonly routes: readonly WireRoute[];
  readonly defaultRoute: WireRoute | null;
}

function encodeNumber(n: number): WireNumber {
  if (Number.isFinite(n)) return n;
  return Number.isNaN(n) ? "NaN" : n > 0 ? "Infinity" : "-Infinity";
}

function decodeNumber(n: WireNumber): number {
  return typeof n === "number" ? n : n === "Infinity" ? Infinity : n === "-Infinity" ? -Infinity : Number.NaN;
}

function mapOptions<A, B>(o: Record<string, A>, f: (v: A) => B): Record<string, B> {
  const out: Record<string, B> = {};
  for (const k of Object.keys(o)) out[k] = f(o[k] as A);
  return out;
}


export function encodeTable(table: RouteTable): WireTable {
  const index = new Map<Backend, number>();
  const backends: WireBackend[] = [];
  const backendRef = (b: Backend): number => {
    let i = index.get(b);
    if (i === undefined) {
      i = backends.length;
      index.set(b, i);
      const { endpoints, allEndpoints, ...rest } = b;
      const at = new Map(allEndpoints.map((u, j) => [u, j] as const));
      backends.push({ ...rest, allEndpoints, endpoints: endpoints.map((u) => at.get(u) ?? u) });
    }
    return i;
  };
  const route = (r: Route): WireRoute => {
    const { backend, options, ...rest } = r;
    const wireOptions = mapOptions(options as unknown as Record<string, boolean | number | null>, (v) =>
      typeof v === "number" ? encodeNumber(v) : v,
    );
    return { ...rest, backend: backendRef(backend), options: wireOptions as WireOptions };
  };
  return {
    v: WIRE_VERSION,
    routes: allRoutes(table).map(route),
    defaultRoute: table.defaultRoute ? route(table.defaultRoute) : null,
    backends,
  };
}

/**
 * Rebuild a RouteTable that answers every lookup as the encoded one did. Re-sorting a host's
 * routes that are already in precedence order is a no-op (the sort is stable), so ties keep
 * their priority order. Throws on a backend index out of range (a corrupt message).
 */
export function decodeTable(wire: WireTable): RouteTable {
  if (wire.v !== WIRE_VERSION) throw new Error(`route table wire version ${String(wire.v)} is not ${WIRE_VERSION}`);
  const backends: Backend[] = wire.backends.map((b) => {
    const { endpoints, allEndpoints, ...rest } = b;
    const resolved = endpoints.map((e) => {
      if (typeof e !== "number") return e;
      const u = allEndpoints[e];
      if (u === undefined) throw new Error(`backend ${b.id}: endpoint index ${e} out of range`);
      return u;
    });
    return Object.freeze({ ...rest, allEndpoints, endpoints: resolved });
  });
  const route = (r: WireRoute): Route => {
    const backend = backends[r.backend];
    if (backend === undefined) throw new Error(`route ${r.path}: backend index ${r.backend} out of range`);
    const options = mapOptions(r.options as unknown as Record<string, boolean | WireNumber | null>, (v) =>
      typeof v === "boolean" || v === null ? v : decodeNumber(v),
    );
    return { ...r, backend, options: options as unknown as RouteOptions };
  };
  return buildTable(wire.routes.map(route), wire.defaultRoute ? route(wire.defaultRoute) : null);
}
