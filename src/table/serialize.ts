// A deterministic, JSON-able view of a RouteTable: golden files and /debug/routes.
// Backends are listed once (by id) and routes point at them by id.
import { redactStage, type StagePolicy } from "../policy/stages.ts";
import type { GlobalHeader, UpstreamTls } from "./types.ts";
import type { RegexLocationSpec } from "./types.ts";
import { DEFAULT_ROUTE_OPTIONS } from "./routes.ts";
import type { Backend, HostRoutes, Route, RouteOptions, RouteTable, Upstream } from "./types.ts";
import type { GatewayEntry, GatewayHosts, GatewayMatch, GatewayRoutes } from "./types.ts";

export interface SerializedRoute {
  readonly path: string;
  readonly pathType: string;
  readonly declaredPathType: string;
  readonly source: Route["source"];
  readonly ingress: string;
  /** Set on a GRPCRoute's rule (Gateway API part): `ingress` then names that GRPCRoute, not an HTTPRoute. */
  readonly kind?: "GRPCRoute";
  /** `rules[i].paths[j]`, or "" for default routes. */
  readonly rule: string;
  readonly backend: string;
  readonly tls: boolean;
  /** A no-auth-locations path: basic and external authentication do not run on it. */
  readonly authExempt?: true;
  /** The attached canary Ingress and its backend id (its rules are the `canary` stage policy). */
  readonly canary?: { readonly ingress: string; readonly backend: string };
  /** custom-http-errors: the statuses, whether a pod's are replaced, the error backend's id (null: the 404). */
  readonly errorPages?: { readonly codes: readonly number[]; readonly intercept: boolean; readonly backend: string | null };
  /** The default-backend Service that takes the requests while `backend` has no endpoints. */
  readonly fallback?: string;
  /** Only the options that differ from the defaults (absent = all defaults); `stages` when there are any. */
  readonly options?: Record<string, boolean | number | string | readonly StagePolicy[]>;
}

/** A regex-mode host's location, in the order tried (table/regex.ts). */
export interface SerializedLocation {
  /** `~* "^<path>"` as ingress-nginx writes it. */
  readonly location: string;
  readonly origin: string;
  /** `namespace/name rules[i].paths[j]` of its route, or "default" for the implicit "/" location. */
  readonly route: string;
  /** Its Ingress's rewrite-target applies to the requests it matches. */
  readonly rewrites: boolean;
}

export interface SerializedTable {
  readonly generation?: number;
  readonly routeCount: number;
  readonly hosts: readonly {
    readonly host: string;
    readonly routes: readonly SerializedRoute[];
    /** Present for a host in regex mode. */
    readonly regex?: readonly SerializedLocation[];
    /**
     * The implicit "/" location (HostRoutes.root): the policies a path no route matches gets
     * before the default backend. Its backend is shown as "(default backend)".
     */
    readonly implicitRoot?: SerializedRoute;
    /** Set when the implicit location rewrites (a regex host's rewrite-target: table/build.ts). */
    readonly implicitRootRewrites?: true;
  }[];
  readonly defaultRoute: SerializedRoute | null;
  readonly backends: readonly Record<string, unknown>[];
  /** server-alias name → host entry, sorted by name; absent when there are none. */
  readonly aliases?: Readonly<Record<string, string>>;
  /** Gateway API rules (RouteTable.gateway) in lookup order; absent when there are none. */
  readonly gateway?: readonly SerializedGatewayListener[];
  /** With --gateway-ports: each Gateway's own port and its rules (RouteTable.gatewayPorts), by port; absent otherwise. */
  readonly gatewayPorts?: readonly { readonly port: number; readonly gateway: string; readonly declared: number; readonly https: boolean; readonly listeners: readonly SerializedGatewayListener[] }[];
  /**
   * proxy-set-headers (`request`) and add-headers (`response`), name → value as written
   * (variables as `$name`); absent when neither sets a field (RouteTable.globalHeaders).
   */
  readonly globalHeaders?: { readonly request: Readonly<Record<string, string>>; readonly response: Readonly<Record<string, string>> };
}

/** One listener hostname of Portico's HTTP or HTTPS port, its route hostnames and their entries. */
export interface SerializedGatewayListener {
  readonly port: "http" | "https";
  readonly listenerHostname: string;
  readonly hosts: readonly {
    readonly hostname: string;
    readonly entries: readonly {
      readonly match: GatewayMatch;
      readonly weights: readonly { readonly weight: number; readonly route: SerializedRoute }[];
    }[];
  }[];
  /**
   * Hosts an Ingress names (an Ingress wildcard as `*.suffix`): the entries asked there, only
   * those of routes in the Ingresses' namespaces, as `namespace/name rule R match M (hostname)`;
   * absent when none (docs/design.md "Gateway API").
   */
  readonly held?: readonly { readonly host: string; readonly entries: readonly string[] }[];
}

const DEFAULTS: Readonly<Record<string, unknown>> = { ...DEFAULT_ROUTE_OPTIONS };

function options(o: RouteOptions): SerializedRoute["options"] {
  const out: Record<string, boolean | number | string | readonly StagePolicy[]> = {};
  let any = false;
  for (const [k, v] of Object.entries(o) as [string, boolean | number | readonly StagePolicy[] | null][]) {
    if (v === DEFAULTS[k] || v === null) continue;
    // Infinity (explicitly unlimited) is not JSON: spell it. Credentials are never shown: of
    // proxy-ssl-*, the Secret's name and the settings, never its key or certificates.
    if (k === "upstreamTls") {
      const t = v as unknown as UpstreamTls;
      out[k] = `proxy-ssl-secret ${t.secret}: verify ${t.verify ? `on (depth ${t.depth}, name ${t.checkName})` : "off"}, SNI ${t.sni ?? "none"}, client certificate ${t.cert === null ? "none" : "yes"}`;
      any = true;
      continue;
    }
    out[k] = v === Number.POSITIVE_INFINITY ? "unlimited" : Array.isArray(v) ? (v as readonly StagePolicy[]).map(redactStage) : (v as boolean | number);
    any = true;
  }
  return any ? out : undefined;
}

function route(r: Route): SerializedRoute {
  return {
    path: r.path,
    pathType: r.pathType,
    declaredPathType: r.declaredPathType,
    source: r.source,
    ingress: r.ingress.namespace || r.ingress.name ? `${r.ingress.namespace}/${r.ingress.name}` : "",
    ...(r.ingress.kind === undefined ? {} : { kind: r.ingress.kind }),
    rule: r.ruleIndex < 0 ? "" : `rules[${r.ruleIndex}].paths[${r.pathIndex}]`,
    backend: r.backend.id,
    tls: r.tls,
    ...(r.authExempt === true ? { authExempt: true as const } : {}),
    ...(r.canary ? { canary: { ingress: `${r.canary.ingress.namespace}/${r.canary.ingress.name}`, backend: r.canary.backend.id } } : {}),
    ...(r.errorPages ? { errorPages: { codes: r.errorPages.codes, intercept: r.errorPages.intercept, backend: r.errorPages.backend?.id ?? null } } : {}),
    ...(r.fallback ? { fallback: r.fallback.id } : {}),
    ...(options(r.options) ? { options: options(r.options) } : {}),
  };
}

function location(l: RegexLocationSpec, h: HostRoutes): SerializedLocation {
  const r = h.routes[l.route];
  const where = r === undefined ? "default" : `${r.ingress.namespace}/${r.ingress.name} rules[${r.ruleIndex}].paths[${r.pathIndex}]`;
  return { location: `~* "^${l.path}"`, origin: l.origin, route: where, rewrites: l.captures };
}

function upstream(u: Upstream): Record<string, unknown> {
  const out: Record<string, unknown> = {
    authority: u.authority,
    ready: u.ready,
    serving: u.serving,
    terminating: u.terminating,
  };
  if (u.target) out.target = u.target;
  return out;
}

function backend(b: Backend): Record<string, unknown> {
  return {
    id: b.id,
    namespace: b.namespace,
    service: b.service,
    port: b.port,
    status: b.status,
    scheme: b.scheme,
    serverName: b.serverName,
    externalName: b.externalName,
    endpoints: b.endpoints.map((u) => u.authority),
    allEndpoints: b.allEndpoints.map(upstream),
  };
}

function hostEntries(t: RouteTable): HostRoutes[] {
  const byName = (a: HostRoutes, b: HostRoutes) => (a.host < b.host ? -1 : a.host > b.host ? 1 : 0);
  const out = [...t.exact.values()].sort(byName);
  out.push(...[...t.wildcard.values()].sort(byName));
  if (t.any) out.push(t.any);
  return out;
}

/** One side of the global headers as name → value, its variables written `$name`. */
function headersText(list: readonly GlobalHeader[] | undefined): Record<string, string> {
  return Object.fromEntries((list ?? []).map((h) => [h.name, h.value.map((p) => (typeof p === "string" ? p : `$${p.v}`)).join("")]));
}

/** The table as plain data, stable across runs for the same input. */
export function serializeTable(table: RouteTable, generation?: number): SerializedTable {
  const backends = new Map<string, Backend>();
  const hosts = hostEntries(table).map((h) => ({
    host: h.host,
    routes: h.routes.map((r) => {
      backends.set(r.backend.id, r.backend);
      if (r.canary) backends.set(r.canary.backend.id, r.canary.backend);
      if (r.errorPages?.backend) backends.set(r.errorPages.backend.id, r.errorPages.backend);
      if (r.fallback) backends.set(r.fallback.id, r.fallback);
      return route(r);
    }),
    ...(h.regex ? { regex: h.regex.specs.map((l) => location(l, h)) } : {}),
    ...(h.root ? { implicitRoot: route(h.root.route), ...(h.root.regex ? { implicitRootRewrites: true as const } : {}) } : {}),
  }));
  if (table.defaultRoute) backends.set(table.defaultRoute.backend.id, table.defaultRoute.backend);
  const gateway: SerializedGatewayListener[] = [];
  const ofGateway = (g: GatewayRoutes, out: SerializedGatewayListener[]) => {
    const entries = (es: readonly GatewayEntry[]) =>
      es.map((e) => ({
        match: e.match,
        weights: e.choices.map((c) => {
          backends.set(c.match.route.backend.id, c.match.route.backend);
          return { weight: c.weight, route: route(c.match.route) };
        }),
      }));
    const heldNames = (es: readonly GatewayEntry[]) =>
      es.map((e) => {
        const r = e.choices[0]?.match.route;
        return r === undefined ? "?" : `${r.ingress.namespace}/${r.ingress.name} rule ${r.ruleIndex} match ${r.pathIndex} (${r.host ?? "*"})`;
      });
    const listeners = (port: "http" | "https", m: ReadonlyMap<string, GatewayHosts>) => {
      for (const key of [...m.keys()].sort()) {
        const h = m.get(key)!;
        const hosts = [
          ...[...h.exact.keys()].sort().map((k) => ({ hostname: k, entries: entries(h.exact.get(k)!) })),
          ...h.wildcards.map(([k, es]) => ({ hostname: k, entries: entries(es) })),
          ...(h.any ? [{ hostname: "*", entries: entries(h.any) }] : []),
        ];
        // A host an Ingress names: the entries asked there, its owners' only (GatewayHosts.held).
        const held = h.held == null ? [] : [...[...h.held.exact.keys()].sort().map((k) => ({ host: k, entries: heldNames(h.held!.exact.get(k)!) })), ...[...h.held.wildcard.keys()].sort().map((k) => ({ host: `*.${k}`, entries: heldNames(h.held!.wildcard.get(k)!) }))];
        out.push({ port, listenerHostname: key, hosts, ...(held.length === 0 ? {} : { held }) });
      }
    };
    listeners("http", g.http);
    listeners("https", g.https);
  };
  if (table.gateway) ofGateway(table.gateway, gateway);
  const gatewayPorts = [...(table.gatewayPorts ?? [])]
    .sort(([a], [b]) => a - b)
    .map(([port, g]) => {
      const out: SerializedGatewayListener[] = [];
      if (g.routes !== null) ofGateway(g.routes, out);
      return { port, gateway: g.gateway, declared: g.declared, https: g.https, listeners: out };
    });
  const ids = [...backends.keys()].sort();
  return {
    ...(generation === undefined ? {} : { generation }),
    routeCount: table.routeCount,
    hosts,
    defaultRoute: table.defaultRoute ? route(table.defaultRoute) : null,
    backends: ids.map((id) => backend(backends.get(id) as Backend)),
    ...(table.globalHeaders == null ? {} : { globalHeaders: { request: headersText(table.globalHeaders.request), response: headersText(table.globalHeaders.response) } }),
    ...(table.aliasKeys.size === 0 ? {} : { aliases: Object.fromEntries([...table.aliasKeys].sort((a, b) => (a[0] < b[0] ? -1 : 1))) }),
    ...(gateway.length === 0 ? {} : { gateway }),
    ...(gatewayPorts.length === 0 ? {} : { gatewayPorts }),
  };
}
