// --enable-ssl-passthrough (docs/design.md, "SSL passthrough"). As in ingress-nginx
// (pkg/tcpproxy/tcp.go, internal/ingress/controller/nginx.go setupSSLProxy), a TCP front owns
// the HTTPS port: it reads the client's ClientHello (tls/client-hello.ts) and
// - for an SNI naming a passthrough host, connects to one of that host's `/` backend endpoints
//   and copies bytes both ways untouched, the ClientHello first: the pod terminates TLS;
// - for every other connection, connects to the terminating HTTPS listener (https.ts), which
//   then listens on a loopback port, and copies the same way. ingress-nginx hands these to nginx
//   with a PROXY protocol header; Bun.serve cannot read one, so the front instead records which
//   client each loopback connection carries (front.ts), and the HTTPS handler sees that client
//   through it (`peer`), so the client address is kept for X-Forwarded-For.
// Off by default; when off none of this exists and the HTTPS listener binds the port itself.
// --use-proxy-protocol uses the same front, reading each connection's PROXY header first
// (front.ts); without --enable-ssl-passthrough it then sends every connection to the loopback
// listener (docs/design.md "PROXY protocol").
import type { Logger } from "../log/logger.ts";
import type { Balancer, RequestServer } from "../proxy/index.ts";
import { passthroughRouteOf } from "../table/passthrough.ts";
import type { Route, RouteTable } from "../table/types.ts";
import { MAX_BUFFERED_BYTES } from "../tls/client-hello.ts";
import { startTcpFront, type FrontChoice } from "./front.ts";
import { chooseBySni } from "./tls-split.ts";

export interface PassthroughOptions {
  readonly hostname: string;
  readonly port: number;
  readonly reusePort: boolean;
  /** Where the terminating HTTPS listener listens on 127.0.0.1 (read per connection: a hand-over keeps it). */
  readonly internalPort: (serverName: string | null) => number;
  /** The terminating listener is split by SNI now (tls-split.ts): read the ClientHello for internalPort even without passthrough. */
  readonly bySni: () => boolean;
  readonly table: () => RouteTable;
  /** Picks a passthrough route's pod (none: every such connection is closed) and is told whether it connected. */
  readonly balancer?: Balancer;
  readonly log: Logger;
  /** A ClientHello not complete by then closes the connection (--client-header-timeout). */
  readonly helloTimeoutMs: number;
  /** Connecting to a pod or to the loopback listener (--connect-timeout). */
  readonly connectTimeoutMs: number;
  /** --enable-ssl-passthrough: read the ClientHello; false: every connection to the loopback listener. */
  readonly passthrough: boolean;
  /** --use-proxy-protocol: a PROXY header first, within this many ms. */
  readonly proxyProtocolTimeoutMs?: number;
  /** --proxy-protocol-trusted: the peers whose PROXY header's source is believed (front.ts). */
  readonly proxyProtocolTrusted?: readonly string[];
  /** Prefix for the front's debug lines (default: "ssl-passthrough", or "https front" without passthrough). */
  readonly name?: string;
}

export interface PassthroughFront {
  readonly port: number;
  /** The handler's view of a request that came through the front to the loopback `listenerPort`: the client's address, the public port. */
  peer(server: RequestServer, req: Request, listenerPort: number): RequestServer | null;
  /** Connections piped now (for tests and the drain). */
  readonly open: number;
  /** Stop accepting; with `closeActive`, close every piped connection too. */
  stop(closeActive: boolean): void;
}

/**
 * The passthrough route for a server name (table/passthrough.ts, which explain reads too),
 * remembered per table.
 */
export function passthroughRoute(table: RouteTable, serverName: string): Route | null {
  let byHost = ROUTES.get(table);
  if (byHost === undefined) ROUTES.set(table, (byHost = new Map()));
  const known = byHost.get(serverName);
  if (known !== undefined) return known;
  // Only names the table has are remembered: a client cannot grow the map with made-up names.
  if (!table.exact.has(serverName)) return null;
  const route = passthroughRouteOf(table, serverName);
  byHost.set(serverName, route);
  return route;
}
const ROUTES = new WeakMap<RouteTable, Map<string, Route | null>>();

export function startPassthroughFront(o: PassthroughOptions): PassthroughFront {
  const { log } = o;
  // A server name with a passthrough route goes to one of its pods; every other connection to
  // the loopback listener internalPort names for it.
  const toPod = (serverName: string): FrontChoice | null => {
    const route = passthroughRoute(o.table(), serverName);
    if (route === null) return null;
    // ingress-nginx dials the Service's cluster IP and port (nginx.go generateTemplate); Portico
    // has no cluster network of its own here and picks an endpoint as for any request to it.
    const u = o.balancer?.pick(route.backend) ?? null;
    if (u === null) {
      log.debug("ssl-passthrough: no endpoint", { backend: route.backend.id });
      return { kind: "close" };
    }
    return { kind: "upstream", upstream: u };
  };
  const bySni = chooseBySni(o.internalPort, o.passthrough ? toPod : undefined);
  return startTcpFront({
    hostname: o.hostname, port: o.port, reusePort: o.reusePort, log, name: o.name ?? (o.passthrough ? "ssl-passthrough" : "https front"),
    ...(o.balancer === undefined ? {} : { balancer: o.balancer }),
    maxFirstBytes: MAX_BUFFERED_BYTES, firstBytesTimeoutMs: o.helloTimeoutMs, connectTimeoutMs: o.connectTimeoutMs,
    ...(o.proxyProtocolTimeoutMs === undefined ? {} : { proxyProtocolTimeoutMs: o.proxyProtocolTimeoutMs }),
    ...(o.proxyProtocolTrusted === undefined ? {} : { proxyProtocolTrusted: o.proxyProtocolTrusted }),
    choose: (first) => (!o.passthrough && !o.bySni() ? { kind: "loopback", port: o.internalPort(null) } : bySni(first)),
  });
}
