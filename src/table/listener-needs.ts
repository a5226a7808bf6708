// Whether a table holds a route that the Bun.serve HTTPS listener cannot serve correctly, so the
// HTTPS port is handed to the node:http2 listener while it does (docs/design.md, "HTTP/2 and
// gRPC"). Bun.serve (1.4.5) cannot send response trailers, which every gRPC answer but a
// Trailers-Only one ends with (gRPC's PROTOCOL-HTTP2.md), and shows a request neither the
// client's certificate nor the connection's SNI, which client-certificate routes and their 421
// read (kinds/client-cert.ts).
import { needsClientCertificates, readsClientCertificates } from "./client-certs.ts";
import { selectHost } from "./lookup.ts";
import { hostHas, someRoute } from "./routes.ts";
import type { Backend, GatewayEntry, GatewayRoutes, HostRoutes, Route, RouteTable } from "./types.ts";

const known = new WeakMap<RouteTable, boolean>();

function grpc(b: Backend): boolean {
  return b.scheme === "grpc" || b.scheme === "grpcs";
}

function routeAnswersGrpc(route: Route): boolean {
  return grpc(route.backend) || (route.canary !== undefined && grpc(route.canary.backend));
}

const grpcKnown = new WeakMap<RouteTable, boolean>();
/** The answer per host entry and per Gateway entry list, kept while that object is: a new table reuses the unchanged ones (someRoute). */
const hostGrpc = new WeakMap<HostRoutes, boolean>();
const listGrpc = new WeakMap<readonly GatewayEntry[], boolean>();

/** Plain loops: this walks every entry of every new table (30,000 at 10k HTTPRoutes), no closure per list. */
function entriesAnswerGrpc(list: readonly GatewayEntry[] | null): boolean {
  if (list === null) return false;
  let v = listGrpc.get(list);
  if (v !== undefined) return v;
  v = false;
  search: for (let i = 0; i < list.length; i++) {
    const choices = list[i]!.choices;
    for (let j = 0; j < choices.length; j++) {
      if (routeAnswersGrpc(choices[j]!.match.route)) {
        v = true;
        break search;
      }
    }
  }
  listGrpc.set(list, v);
  return v;
}

/** A Gateway API route with a gRPC backend (a GRPCRoute's: compile/gateway/grpcroute.ts). */
function gatewayAnswersGrpc(g: GatewayRoutes | null | undefined): boolean {
  if (g === null || g === undefined) return false;
  for (const listeners of [g.http, g.https]) {
    for (const hosts of listeners.values()) {
      if (entriesAnswerGrpc(hosts.any)) return true;
      for (const list of hosts.exact.values()) if (entriesAnswerGrpc(list)) return true;
      for (const [, list] of hosts.wildcards) if (entriesAnswerGrpc(list)) return true;
    }
  }
  return false;
}

/** True when some route (or its canary) has a gRPC backend: the plain port then needs h2c with trailers (serving/plain.ts). Cached per table object. */
export function answersGrpc(table: RouteTable): boolean {
  let v = grpcKnown.get(table);
  if (v === undefined) {
    v = (table.defaultRoute !== null && routeAnswersGrpc(table.defaultRoute)) || someRoute(table, routeAnswersGrpc, hostGrpc) || gatewayAnswersGrpc(table.gateway);
    grpcKnown.set(table, v);
  }
  return v;
}

/** True when some route needs response trailers or the connection's TLS details. Cached per table object. */
export function needsNodeListener(table: RouteTable): boolean {
  let v = known.get(table);
  if (v === undefined) {
    v = needsClientCertificates(table) || answersGrpc(table);
    known.set(table, v);
  }
  return v;
}

/** A route only node:http2 serves correctly: a gRPC backend (or canary), or client certificates read. */
function routeNeedsNode(route: Route): boolean {
  return routeAnswersGrpc(route) || readsClientCertificates(route);
}

const hostNeeds = new WeakMap<HostRoutes, boolean>();
const everyKnown = new WeakMap<RouteTable, boolean>();

/**
 * True when every host needs node:http2: the default route does (it answers every host's
 * unmatched paths and every unknown host), or a Gateway API route with a gRPC backend exists
 * (GRPCRoute hostnames are not classified per host: the whole port goes to node:http2, as
 * before the SNI split). Cached per table object.
 */
export function everyHostNeedsNode(table: RouteTable): boolean {
  let v = everyKnown.get(table);
  if (v === undefined) {
    v = (table.defaultRoute !== null && routeNeedsNode(table.defaultRoute)) || gatewayAnswersGrpc(table.gateway);
    everyKnown.set(table, v);
  }
  return v;
}

/**
 * Whether a connection whose SNI names `hostname` (lowercase, no trailing dot), or a request
 * for it, needs node:http2 (serving/tls-split.ts): the host entry the table's own lookup
 * selects for the name (exact or alias, then `*.suffix`, then the hostless rules:
 * lookup.ts selectHost) holds a route that needs it, or every host does. The answer per host
 * entry is kept while the entry is, as needsNodeListener's.
 */
export function hostNeedsNode(table: RouteTable, hostname: string): boolean {
  if (everyHostNeedsNode(table)) return true;
  const h = selectHost(table, hostname);
  return h !== null && hostHas(h, routeNeedsNode, hostNeeds);
}

/** Host names by the listener their entries need: exact hosts and aliases as written, a wildcard entry as `*.suffix`, the hostless entry as `*`. */
interface HostNames {
  readonly node: ReadonlySet<string>;
  readonly bun: ReadonlySet<string>;
}

const namesKnown = new WeakMap<RouteTable, HostNames>();

/** Every host entry's name, by the listener it needs (a walk of every entry; the per-entry answers are kept while the entries are). Cached per table. */
function hostNames(table: RouteTable): HostNames {
  let v = namesKnown.get(table);
  if (v === undefined) {
    const node = new Set<string>();
    const bun = new Set<string>();
    const put = (name: string, h: HostRoutes) => (hostHas(h, routeNeedsNode, hostNeeds) ? node : bun).add(name);
    for (const [name, h] of table.exact) put(name, h);
    for (const [name, h] of table.aliases) put(name, h);
    for (const [suffix, h] of table.wildcard) put(`*.${suffix}`, h);
    if (table.any !== null) put("*", table.any);
    v = { node, bun };
    namesKnown.set(table, v);
  }
  return v;
}

/**
 * Whether some host Bun.serve served under `prev` needs node:http2 under `next`: a name that
 * needs it now and did not; an exact name Bun.serve served that is gone and now falls to an
 * entry that needs it; a wildcard Bun.serve served that is gone while the hostless entry
 * needs it (lookup.ts selectHost: exact, alias, wildcard, then hostless). The SNI split then
 * renews its Bun.serve side, so connections opened for such a host move (serving/tls-split.ts).
 */
export function hostsMovedToNode(prev: RouteTable, next: RouteTable): boolean {
  if (prev === next) return false;
  const a = hostNames(prev);
  const b = hostNames(next);
  for (const name of b.node) if (!a.node.has(name)) return true;
  for (const name of a.bun) {
    if (b.bun.has(name)) continue;
    if (name.startsWith("*") ? b.node.has("*") : hostNeedsNode(next, name)) return true;
  }
  return false;
}
