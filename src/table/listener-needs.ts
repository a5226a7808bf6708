// Whether a table holds a route that the Bun.serve HTTPS listener cannot serve correctly, and on
// which hosts (Ingress host entries and Gateway API hostnames alike), so the HTTPS port's
// connections for those hosts are handed to the node:http2 listener while it does
// (docs/design.md, "HTTP/2 and gRPC"). Bun.serve (1.4.5) cannot send response trailers, which every gRPC answer but a
// Trailers-Only one ends with (gRPC's PROTOCOL-HTTP2.md), and shows a request neither the
// client's certificate nor the connection's SNI, which client-certificate routes and their 421
// read (kinds/client-cert.ts).
import { entriesRead, needsClientCertificates, readsClientCertificates } from "./client-certs.ts";
import { bestHostname, hostnameMatches } from "./gateway.ts";
import { selectHost } from "./lookup.ts";
import { hostHas, someRoute } from "./routes.ts";
import type { Backend, GatewayEntry, GatewayHosts, GatewayRoutes, HostRoutes, Route, RouteTable } from "./types.ts";

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

/**
 * An HTTPS listener's entry list needs node:http2: an entry answers gRPC, or checks client
 * certificates (a listener under Gateway spec.tls.frontend validation: compile/gateway/table.ts
 * clientCertPolicy), which Bun.serve cannot show a request. Both answers are kept per list.
 */
function entriesNeedNode(list: readonly GatewayEntry[] | null): boolean {
  return entriesAnswerGrpc(list) || entriesRead(list);
}

/** One listener map's entry lists (Gateway API listener hostname → route hostnames), asked whether one answers gRPC. */
function listenersAnswerGrpc(listeners: ReadonlyMap<string, GatewayHosts>): boolean {
  for (const hosts of listeners.values()) {
    if (entriesAnswerGrpc(hosts.any)) return true;
    for (const list of hosts.exact.values()) if (entriesAnswerGrpc(list)) return true;
    for (const [, list] of hosts.wildcards) if (entriesAnswerGrpc(list)) return true;
  }
  return false;
}

/** A Gateway API route with a gRPC backend (a GRPCRoute's: compile/gateway/grpcroute.ts), on an HTTP or an HTTPS listener. */
function gatewayAnswersGrpc(g: GatewayRoutes | null | undefined): boolean {
  if (g === null || g === undefined) return false;
  return listenersAnswerGrpc(g.http) || listenersAnswerGrpc(g.https);
}

const ingressGrpcKnown = new WeakMap<RouteTable, boolean>();

/** The Ingress part (default route, host entries) has a gRPC route: it answers on both ports. Cached per table object. */
function ingressAnswersGrpc(table: RouteTable): boolean {
  let v = ingressGrpcKnown.get(table);
  if (v === undefined) {
    v = (table.defaultRoute !== null && routeAnswersGrpc(table.defaultRoute)) || someRoute(table, routeAnswersGrpc, hostGrpc);
    ingressGrpcKnown.set(table, v);
  }
  return v;
}

/** True when some route (or its canary) has a gRPC backend: the plain port then needs h2c with trailers (serving/plain.ts). Cached per table object. */
export function answersGrpc(table: RouteTable): boolean {
  let v = grpcKnown.get(table);
  if (v === undefined) {
    v = ingressAnswersGrpc(table) || gatewayAnswersGrpc(table.gateway);
    grpcKnown.set(table, v);
  }
  return v;
}

/**
 * What the HTTPS port must know of the Gateway API part: the HTTPS listeners' hostnames (the
 * port's request picks one, table/gateway.ts findGatewayEntry), and, of those whose entries
 * need node:http2 (entriesNeedNode: gRPC or a client certificate check), the route hostnames
 * whose entries do. An HTTP listener's entries never answer on the
 * HTTPS port (findGatewayEntry asks `https` there), so they are not read.
 */
interface GatewayNodeHosts {
  readonly keys: readonly string[];
  readonly byListener: ReadonlyMap<string, ListenerNode>;
}

/** One HTTPS listener hostname's names whose entry lists need node:http2 (entriesNeedNode). */
interface ListenerNode {
  /** Effective route hostnames (exact names: the compiler's intersection of the route's and the listener's hostnames, compile/gateway/hostnames.ts). */
  readonly exact: ReadonlySet<string>;
  /** Effective `*.` hostnames: a `*.` label matches one or more labels (table/gateway.ts hostnameMatches). */
  readonly wildcards: readonly string[];
  /** The entries without a hostname (neither the route nor the listener names one): every host. */
  readonly any: boolean;
}

const NO_NAMES: ReadonlySet<string> = new Set();
const NO_PATTERNS: readonly string[] = Object.freeze([]);
/**
 * Kept per exact-name map and per wildcard list: the compiler copies a listener's exact map
 * only when a route on that listener changes, and keeps it (and its wildcard list) otherwise,
 * also when it wraps the listener for held hosts (compile/gateway/ingress-hosts.ts), so a
 * change walks only the listeners it touched; the lists' own answers are kept besides.
 */
const exactNode = new WeakMap<ReadonlyMap<string, readonly GatewayEntry[]>, ReadonlySet<string>>();
const wildNode = new WeakMap<GatewayHosts["wildcards"], readonly string[]>();
const gatewayHostsKnown = new WeakMap<RouteTable, GatewayNodeHosts | null>();

function listenerNode(hosts: GatewayHosts): ListenerNode {
  let exact = exactNode.get(hosts.exact);
  if (exact === undefined) {
    let names: Set<string> | null = null;
    for (const [name, list] of hosts.exact) if (entriesNeedNode(list)) (names ??= new Set()).add(name);
    exact = names ?? NO_NAMES;
    exactNode.set(hosts.exact, exact);
  }
  let wildcards = wildNode.get(hosts.wildcards);
  if (wildcards === undefined) {
    const out: string[] = [];
    for (const [pattern, list] of hosts.wildcards) if (entriesNeedNode(list)) out.push(pattern);
    wildcards = out.length === 0 ? NO_PATTERNS : out;
    wildNode.set(hosts.wildcards, wildcards);
  }
  return { exact, wildcards, any: entriesNeedNode(hosts.any) };
}

/** The table's HTTPS listeners with entries that need node:http2 somewhere, or null when none has. Cached per table object. */
function gatewayNodeHosts(table: RouteTable): GatewayNodeHosts | null {
  let v = gatewayHostsKnown.get(table);
  if (v === undefined) {
    v = null;
    const listeners = table.gateway?.https;
    if (listeners !== undefined && listeners.size > 0) {
      const byListener = new Map<string, ListenerNode>();
      for (const [lkey, hosts] of listeners) {
        const l = listenerNode(hosts);
        if (l.any || l.exact.size > 0 || l.wildcards.length > 0) byListener.set(lkey, l);
      }
      if (byListener.size > 0) v = { keys: [...listeners.keys()], byListener };
    }
    gatewayHostsKnown.set(table, v);
  }
  return v;
}

/**
 * Whether a request for `hostname` on the HTTPS port may get a Gateway API entry with a gRPC
 * backend or a listener's client certificate check (entriesNeedNode): the listener hostname its lookup picks (the most specific, table/gateway.ts
 * findGatewayEntry) holds one for an effective route hostname matching it (exact, or a `*.`
 * pattern), or one without hostnames. On a host an Ingress names the lookup asks only the
 * owners' share of these entries (GatewayHosts.held), so the answer may say yes where the
 * request would not get that entry: node:http2 serves every route correctly, so that costs
 * speed, never an answer.
 */
function gatewayHostNeedsNode(table: RouteTable, hostname: string): boolean {
  const g = gatewayNodeHosts(table);
  if (g === null) return false;
  const lkey = bestHostname(g.keys, hostname);
  const l = lkey === undefined ? undefined : g.byListener.get(lkey);
  if (l === undefined) return false;
  if (l.any || l.exact.has(hostname)) return true;
  for (const p of l.wildcards) if (hostnameMatches(p, hostname)) return true;
  return false;
}

/** True when some route the HTTPS port serves needs response trailers or the connection's TLS details. Cached per table object. */
export function needsNodeListener(table: RouteTable): boolean {
  let v = known.get(table);
  if (v === undefined) {
    // Only the HTTPS listeners' Gateway entries answer on this port (gatewayNodeHosts).
    v = needsClientCertificates(table) || ingressAnswersGrpc(table) || gatewayNodeHosts(table) !== null;
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
 * unmatched paths and every unknown host), or an HTTPS listener without a hostname holds a
 * Gateway API route with a gRPC backend and without hostnames (a GRPCRoute matching every
 * host). Cached per table object.
 */
export function everyHostNeedsNode(table: RouteTable): boolean {
  let v = everyKnown.get(table);
  if (v === undefined) {
    v = table.defaultRoute !== null && routeNeedsNode(table.defaultRoute);
    if (!v) {
      const g = gatewayNodeHosts(table);
      if (g !== null) for (const l of g.byListener.values()) if (l.any) v = true;
    }
    everyKnown.set(table, v);
  }
  return v;
}

/**
 * Which listener serves the HTTPS port for `table` (serving/https.ts ListenerKind): Bun.serve
 * while no route needs node:http2, node:http2 alone while every host does, and otherwise the
 * SNI split (docs/design.md, "HTTP/2 and gRPC").
 */
export function httpsListenerKind(table: RouteTable): "bun" | "node" | "split" {
  return !needsNodeListener(table) ? "bun" : everyHostNeedsNode(table) ? "node" : "split";
}

/**
 * Whether a connection whose SNI names `hostname` (lowercase, no trailing dot), or a request
 * for it, needs node:http2 (serving/tls-split.ts): the host entry the table's own lookup
 * selects for the name (exact or alias, then `*.suffix`, then the hostless rules:
 * lookup.ts selectHost) holds a route that needs it, or the Gateway API entries the HTTPS
 * port asks first for the name hold a gRPC route or a client certificate check (gatewayHostNeedsNode), or every host does.
 * The answer per host entry is kept while the entry is, as needsNodeListener's.
 */
export function hostNeedsNode(table: RouteTable, hostname: string): boolean {
  if (everyHostNeedsNode(table)) return true;
  const h = selectHost(table, hostname);
  return (h !== null && hostHas(h, routeNeedsNode, hostNeeds)) || gatewayHostNeedsNode(table, hostname);
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
  if (gatewayHostsMoved(prev, next)) return true;
  const a = hostNames(prev);
  const b = hostNames(next);
  for (const name of b.node) if (!a.node.has(name)) return true;
  for (const name of a.bun) {
    if (b.bun.has(name)) continue;
    if (name.startsWith("*") ? b.node.has("*") : hostNeedsNode(next, name)) return true;
  }
  return false;
}

/**
 * The Gateway API side of hostsMovedToNode: an HTTPS listener hostname that needs node:http2
 * now and did not, an effective route hostname (exact or `*.`) with such an entry (gRPC or a
 * client certificate check) that is new on its listener, or entries without hostnames that need
 * it now; or a listener hostname gone while some listener needs it (its hosts fall to a less
 * specific listener, which may).
 * Either part moving a host is enough, as hostNeedsNode is either part needing node:http2.
 * Walks only the names that need node:http2 (few), and the listener hostnames.
 */
function gatewayHostsMoved(prev: RouteTable, next: RouteTable): boolean {
  const b = gatewayNodeHosts(next);
  if (b === null) return false;
  const a = gatewayNodeHosts(prev);
  if (a === null) return true;
  const now = new Set(b.keys);
  for (const k of a.keys) if (!now.has(k)) return true;
  for (const [lkey, l] of b.byListener) {
    const was = a.byListener.get(lkey);
    if (was === undefined || (l.any && !was.any)) return true;
    if (l.exact !== was.exact) for (const name of l.exact) if (!was.exact.has(name)) return true;
    if (l.wildcards !== was.wildcards) for (const p of l.wildcards) if (!was.wildcards.includes(p)) return true;
  }
  return false;
}
