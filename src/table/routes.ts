// Shared helpers over a built table and its routes.
import type { RetryPolicy, Route, RouteOptions, RouteTable } from "./types.ts";

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
  preserveTrailingSlash: false,
  usePortInRedirects: false,
  fromToWwwRedirect: false,
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

/** Every route of the table: host entries (exact, wildcard, hostless) in their map order. */
export function allRoutes(table: RouteTable): Route[] {
  const out: Route[] = [];
  for (const h of table.exact.values()) out.push(...h.routes);
  for (const h of table.wildcard.values()) out.push(...h.routes);
  if (table.any) out.push(...table.any.routes);
  return out;
}
