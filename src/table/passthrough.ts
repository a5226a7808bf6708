// Which route an --enable-ssl-passthrough connection goes to, by its SNI name (docs/design.md
// "SSL passthrough"): read by the HTTPS port's front (serving/passthrough.ts), which pipes the
// connection to that route's pods untouched, and by explain, which says so. One rule for both.
import { lookup } from "./lookup.ts";
import type { Route, RouteTable } from "./types.ts";

/**
 * The passthrough route for a server name: the `/` route of an exact host whose Ingresses set
 * ssl-passthrough (compile marks such routes only with --enable-ssl-passthrough). ingress-nginx
 * compares the SNI with each passthrough server's name as written (pkg/tcpproxy/tcp.go
 * TCPProxy.Get), so a wildcard host never matches, and passes the whole host to its `/`
 * location's backend (controller.go getConfiguration); a host whose `/` is the default backend
 * is not passed through.
 */
export function passthroughRouteOf(table: RouteTable, serverName: string): Route | null {
  const entry = table.exact.get(serverName);
  if (entry === undefined || !entry.routes.some((r) => r.sslPassthrough === true)) return null;
  const m = lookup(table, serverName, "/");
  return m !== null && m.via === "exact-host" && m.route.source === "rule" && m.route.path === "/" ? m.route : null;
}
