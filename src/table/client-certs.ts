// Whether a table holds a route that reads client certificates: a `client-cert` stage whose
// verify mode is not `off` (kinds/client-cert.ts). The HTTPS listener asks for a certificate in
// the handshake only while this holds (docs/design.md, "Client certificates"): asking on every
// handshake makes browsers that hold client certificates offer a picker on any host.
import { someRoute } from "./routes.ts";
import type { HostRoutes, Route, RouteTable } from "./types.ts";

const known = new WeakMap<RouteTable, boolean>();
/** The answer per host entry, kept while the entry is (someRoute). */
const hostReads = new WeakMap<HostRoutes, boolean>();

/** Whether this route checks client certificates (a `client-cert` stage not `off`). */
export function readsClientCertificates(route: Route): boolean {
  for (const s of route.options.stages ?? []) if (s.kind === "client-cert" && s.params.verify !== "off") return true;
  return false;
}

/** True when some route of `table` (or its default route) checks client certificates. Cached per table object. */
export function needsClientCertificates(table: RouteTable): boolean {
  let v = known.get(table);
  if (v === undefined) {
    v = (table.defaultRoute !== null && readsClientCertificates(table.defaultRoute)) || someRoute(table, readsClientCertificates, hostReads);
    known.set(table, v);
  }
  return v;
}
