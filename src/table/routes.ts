// Shared helpers over a built table and its routes.
import type { Backend, HostRoutes, Match, RetryPolicy, Route, RouteErrorPages, RouteOptions, RouteTable } from "./types.ts";

/** Route behaviour with no annotation: every limit and timeout comes from the flags (null). */
export const DEFAULT_ROUTE_OPTIONS: RouteOptions = Object.freeze({
  sslRedirect: true,
  forceSslRedirect: false,
  hsts: true,
  maxBodySize: null,
  connectTimeoutMs: null,
  responseTimeoutMs: null,
  streamIdleTimeoutMs: null,
  retry: null,
  requestBufferSize: null,
  proxyBuffering: null,
  proxyBufferSize: null,
  preserveTrailingSlash: false,
  usePortInRedirects: false,
  fromToWwwRedirect: false,
  limitRate: null,
  limitRateAfter: null,
  accessLog: true,
  stages: null,
});

/**
 * What a route without a retry annotation does: ingress-nginx's defaults (proxy-next-upstream
 * `error timeout`, proxy-next-upstream-tries 3, proxy-next-upstream-timeout 0; its
 * docs/user-guide/nginx-configuration/configmap.md and controller/config/config.go).
 */
export const DEFAULT_RETRY: RetryPolicy = Object.freeze({
  error: true,
  timeout: true,
  invalidHeader: false,
  statuses: Object.freeze([]) as readonly number[],
  nonIdempotent: false,
  tries: 3,
  timeoutMs: 0,
});

/** Host entries of the table (exact, wildcard, and the hostless one), for log lines. */
export function hostCount(table: RouteTable): number {
  return table.exact.size + table.wildcard.size + (table.any ? 1 : 0);
}

/**
 * Whether some route of the host entries (exact, wildcard, hostless) satisfies `test`, without
 * building the list allRoutes makes: the serving side asks this of every new table (30,000
 * routes at 10k Ingresses), where copying them into one array cost more than the test.
 */
export function someRoute(table: RouteTable, test: (route: Route) => boolean, byHost?: WeakMap<HostRoutes, boolean>): boolean {
  for (const h of table.exact.values()) if (hostHas(h, test, byHost)) return true;
  for (const h of table.wildcard.values()) if (hostHas(h, test, byHost)) return true;
  return table.any !== null && hostHas(table.any, test, byHost);
}

/**
 * Whether a route of one host entry satisfies `test`; with `byHost`, remembered per entry: the
 * compiler keeps a host's entry (the same object) from one table to the next while the host is
 * unchanged, so a new table asks `test` only of its changed hosts' routes, not of every route
 * again (an answer per route read each route, its options and its backend: ~10 ms at 10k hosts).
 */
export function hostHas(h: HostRoutes, test: (route: Route) => boolean, byHost: WeakMap<HostRoutes, boolean> | undefined): boolean {
  let v = byHost?.get(h);
  if (v === undefined) {
    v = false;
    for (let i = 0; i < h.routes.length; i++) {
      if (test(h.routes[i]!)) {
        v = true;
        break;
      }
    }
    byHost?.set(h, v);
  }
  return v;
}

/** Every route of the table: host entries (exact, wildcard, hostless) in their map order. */
export function allRoutes(table: RouteTable): Route[] {
  const out: Route[] = [];
  for (const h of table.exact.values()) out.push(...h.routes);
  for (const h of table.wildcard.values()) out.push(...h.routes);
  if (table.any) out.push(...table.any.routes);
  return out;
}

/**
 * The backend of a host's implicit `/` location (HostRoutes.root) as the compiler builds it:
 * a placeholder, since the default backend is the table's, not the host's. When the table has
 * no default route it stays: it has no endpoints, and NOT_FOUND_PAGES turns the 503 that gives
 * into the 404 of ingress-nginx's built-in default backend, after the location's policies ran.
 */
export const DEFAULT_BACKEND_SLOT: Backend = Object.freeze({
  id: "(default backend)",
  namespace: "",
  service: "",
  port: "",
  status: "NoEndpoints" as const,
  endpoints: Object.freeze([]) as readonly never[],
  allEndpoints: Object.freeze([]) as readonly never[],
  scheme: "http" as const,
  serverName: "",
  externalName: false,
});

/**
 * Error pages that answer the no-endpoints 503 with the 404 of a missing error backend
 * (proxy/pipeline/error-pages.ts: custom-http-errors with no error backend answer 404, the built-in default
 * server's answer): what the implicit `/` location answers when there is no default backend.
 */
export const NOT_FOUND_PAGES: RouteErrorPages = Object.freeze({ codes: Object.freeze([503]), intercept: false, backend: null });

// One composed Match per implicit root and default route: lookups allocate nothing after the first.
const composed = new WeakMap<Match, { readonly def: Route | null; readonly match: Match }>();

/**
 * The implicit `/` location of a host with the table's default backend in it: the default
 * route's backend, or, with no default route, the 404 (DEFAULT_BACKEND_SLOT, NOT_FOUND_PAGES);
 * a root with a backend of its own (its first Ingress's spec.defaultBackend) as it is.
 * ingress-nginx's location `/` proxies to the default upstream whatever the host's first
 * Ingress's policies (controller.go createServers: `Backend: un`, `IsDefBackend: true`).
 */
export function implicitRootMatch(root: Match, def: Route | null): Match {
  // Its first Ingress's own spec.defaultBackend (compile/host-entry.ts implicitRoot).
  if (root.route.backend.id !== DEFAULT_BACKEND_SLOT.id) return root;
  const c = composed.get(root);
  if (c !== undefined && c.def === def) return c.match;
  const r = root.route;
  const route: Route = Object.freeze(def !== null ? { ...r, backend: def.backend } : { ...r, backend: DEFAULT_BACKEND_SLOT, errorPages: NOT_FOUND_PAGES });
  const match: Match = root.regex === undefined ? { route, hostKey: root.hostKey, via: root.via } : { route, hostKey: root.hostKey, via: root.via, regex: root.regex };
  composed.set(root, { def, match });
  return match;
}
