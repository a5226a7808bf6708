// Serving traffic in this process: the one assembly of the data plane, used by the single
// process (--workers 1, runtime/local.ts) and by every worker process (workers/worker.ts).
// Access log → metrics hooks → one balancer → an HTTP and an HTTPS request handler → the two
// listeners → drain; and one shutdown order: no new TLS rotation, drain (delay, stop
// accepting, grace period), close the TLS servers, flush the access log.
import type { Instruments } from "../admin/instruments.ts";
import type { Config } from "../config/types.ts";
import { compileLogTemplate } from "../log/template.ts";
import { createAccessLog, type AccessLogOptions, type AccessRecord } from "../log/access.ts";
import type { Logger } from "../log/logger.ts";
import { createBalancer, createBodyBudget, createDrain, createProxyHandler, PASSWORD_CHECKS, serveOptions } from "../proxy/index.ts";
import { needsClientCertificates } from "../table/client-certs.ts";
import { answersGrpc, httpsListenerKind } from "../table/listener-needs.ts";
import { lookup } from "../table/lookup.ts";
import type { RouteTable } from "../table/types.ts";
import type { TlsEntry } from "../tls/sni.ts";
import { createGatewayPortListeners } from "./gateway-ports.ts";
import { createHttpsListener, type ListenerKind } from "./https.ts";
import { startPassthroughFront, type PassthroughFront } from "./passthrough.ts";
import { throughFront } from "./front.ts";
import { createPlainListener, type PlainKind } from "./plain.ts";
import type { TlsSet } from "./tls.ts";

const NO_PORT_TLS: ReadonlyMap<number, TlsSet> = new Map();
import { bindOrExplain, claimPort } from "./ports.ts";

/**
 * Who else listens on the traffic ports (ports.ts):
 * - "alone": nobody (--workers 1). HTTP is bound without SO_REUSEPORT; HTTPS is probed first.
 * - "first": sibling workers will join; both ports are probed first.
 * - "join": a sibling worker already listens; no probe (it would find the sibling).
 */
export type PortSharing = "alone" | "first" | "join";

export interface ServeTrafficOptions {
  readonly config: Config;
  readonly log: Logger;
  readonly inst: Instruments;
  /** The live route table, read once per request. */
  readonly table: () => RouteTable;
  /**
   * The first certificate set; the HTTPS port is bound with it at once. `provisional`: a
   * stand-in served until the first table's set (tls/listener.ts, TlsListener.update).
   */
  readonly tls: { readonly entries: readonly TlsEntry[]; readonly fingerprint: string; readonly provisional?: boolean; readonly ports?: ReadonlyMap<number, TlsSet> };
  readonly ports: PortSharing;
  /** Where this process's endpoint windows start (proxy/upstream/subset.ts); random when absent. */
  readonly balancerSeed?: number;
  /** The access log's sink (default: process.stdout). */
  readonly accessWrite?: AccessLogOptions["write"];
  /** Every finished request, after the metrics and the access log have it. */
  readonly onRequest?: (r: AccessRecord) => void;
}

export interface Serving {
  /** Serve this certificate set (a rotation: tls/listener.ts); `ports`: the Gateways' own HTTPS ports' sets (--gateway-ports). */
  setTls(entries: readonly TlsEntry[], fingerprint: string, ports?: ReadonlyMap<number, TlsSet>): void;
  /** A new table is live (after the holder's swap): handshakes ask for client certificates while one of its routes reads them. */
  tableChanged(): void;
  readonly ports: { readonly http: number; readonly https: number };
  /** The Gateways' own ports listening now (--gateway-ports), by port. */
  readonly gatewayPorts: ReadonlyMap<number, { readonly https: boolean }>;
  /** What serves the plain port now: Bun.serve alone, or the h2c front while a gRPC route exists (plain.ts). */
  readonly plainListener: PlainKind;
  /** What serves the HTTPS port now: Bun.serve, node:http2, or both split by SNI while some hosts need node:http2 (https.ts). */
  readonly httpsListener: ListenerKind;
  /** The stand-in set is still served. */
  readonly tlsProvisional: boolean;
  /** Shutdown has begun (/readyz answers 503). */
  readonly draining: boolean;
  /** Resolves when no certificate rotation or HTTPS listener hand-over is under way (https.ts). */
  settled(): Promise<void>;
  /** Drain and close every listener, then flush the access log. Idempotent. `delay`: see Drain.begin. */
  shutdown(o?: { readonly delay?: boolean }): Promise<void>;
}

/** Binds both traffic ports before it returns; throws PortInUseError when one is held. */
export function serveTraffic(o: ServeTrafficOptions): Serving {
  const { config, log, inst } = o;
  // --access-log-template (ingress-nginx's log-format-upstream): the line as an nginx log_format.
  const line = config.accessLogTemplate === null ? null : compileLogTemplate(config.accessLogTemplate, config.accessLogEscape);
  const access = createAccessLog({ format: config.logFormat, enabled: config.accessLog === "stdout", line, ...(o.accessWrite ? { write: o.accessWrite } : {}) });
  inst.trackAccessLogDrops(() => access.dropped);

  // One balancer for both schemes, so passive health is learned once.
  const balancer = createBalancer(undefined, o.balancerSeed === undefined ? {} : { seed: o.balancerSeed });
  const onRequest = o.onRequest;
  const hooks = inst.proxyHooks(onRequest ? (r) => (access.record(r), onRequest(r)) : (r) => access.record(r));
  // One request-buffering budget for both schemes: --request-buffer-budget bounds the process.
  const bodyBudget = createBodyBudget(config.requestBufferBudget);
  const common = { config, table: o.table, lookup, hooks, log, balancer, bodyBudget } as const;
  const httpHandler = createProxyHandler({ ...common, scheme: "http" });
  const httpsHandler = createProxyHandler({ ...common, scheme: "https" });
  // --gateway-ports: each Gateway's own ports, opened and closed as the table lists them
  // (gateway-ports.ts); with no Gateway on its own port nothing here listens or runs.
  let tlsSet: TlsSet = { entries: o.tls.entries, fingerprint: o.tls.fingerprint };
  let portTls: ReadonlyMap<number, TlsSet> = o.tls.ports ?? NO_PORT_TLS;
  const gatewayPorts = createGatewayPortListeners({
    config, log: log.child({ listener: "gateway" }), hostname: config.bind, reusePort: o.ports !== "alone",
    table: o.table, deps: { config, lookup, hooks, log, balancer, bodyBudget }, tls: (port) => portTls.get(port) ?? tlsSet,
  });
  // Bun exposes no connection count: the gauge reports requests in flight, read at scrape time.
  inst.trackActiveConnections(() => httpHandler.inflight.count + httpsHandler.inflight.count + gatewayPorts.handlers.reduce((n, h) => n + h.inflight.count, 0));
  inst.trackPasswordChecks(() => PASSWORD_CHECKS);

  // Probes and binds run in this one synchronous turn (ports.ts).
  const { bind: hostname, httpPort, httpsPort } = config;
  const shared = o.ports !== "alone";
  // With h2c on, the plain port may be handed to a front and back (plain.ts), which binds it a
  // second time with SO_REUSEPORT: probed first, as the HTTPS port always is.
  const httpReuse = shared || config.http2;
  if (o.ports === "first" || (o.ports === "alone" && httpReuse)) claimPort("--http-port", hostname, httpPort);
  if (o.ports !== "join") claimPort("--https-port", hostname, httpsPort);
  // --use-proxy-protocol: a TCP front on both ports reads each connection's PROXY header
  // (front.ts; docs/design.md "PROXY protocol"). Read at start: a change needs a restart.
  const ppTimeout = config.useProxyProtocol ? { proxyProtocolTimeoutMs: config.proxyProtocolHeaderTimeoutMs, proxyProtocolTrusted: config.proxyProtocolTrusted } : {};
  const http = bindOrExplain("--http-port", hostname, httpPort, () =>
    createPlainListener({
      hostname, port: httpPort, handler: httpHandler, reusePort: httpReuse, http2: config.http2, log: log.child({ listener: "http" }),
      firstBytesTimeoutMs: config.clientHeaderTimeoutMs, connectTimeoutMs: config.connectTimeoutMs, onAbuse: (reason) => inst.http2Abuse(reason),
      ...ppTimeout,
    }),
  );
  // --enable-ssl-passthrough (or --use-proxy-protocol): the terminating listener moves to a
  // loopback port behind a TCP front (passthrough.ts), and sees each request's client through
  // the front. Without either flag nothing here changes.
  const httpsFront = config.enableSslPassthrough || config.useProxyProtocol;
  let front: PassthroughFront | null = null;
  // Each loopback listener's handler names its own port: the front keys its clients by it.
  const viaFront = (listenerPort: () => number) => ({
    ...httpsHandler,
    fetch: (req: Request, server: Parameters<typeof httpsHandler.fetch>[1]) => throughFront(front, req, server, listenerPort, httpsHandler.fetch),
  });
  const https = createHttpsListener({
    config,
    draining: () => httpsHandler.inflight.draining,
    hostname: httpsFront ? "127.0.0.1" : hostname,
    port: httpsFront ? 0 : httpsPort,
    handler: (listenerPort) => serveOptions(httpsFront ? viaFront(listenerPort) : httpsHandler),
    // While only some hosts need node:http2, the port is split by their SNI (tls-split.ts);
    // behind the passthrough/PROXY front that front reads the SNI and asks innerPort.
    split: { table: o.table, front: httpsFront ? null : { helloTimeoutMs: config.clientHeaderTimeoutMs, connectTimeoutMs: config.connectTimeoutMs } },
    log: log.child({ listener: "https" }),
    // The listener logs each rotation itself; here it is counted.
    hooks: { onRotation: () => inst.tlsRotated(), onAbuse: (reason) => inst.http2Abuse(reason) },
  });
  // Handshakes ask for a client certificate only while a route reads one (table/client-certs.ts);
  // the port is on node:http2 only while a route needs what Bun.serve lacks (https.ts).
  // The plain port is behind the h2c front only while a gRPC route exists (plain.ts).
  const fit = (t: RouteTable): void => {
    http.useH2cFront(answersGrpc(t));
    https.useListener(httpsListenerKind(t));
    https.requestClientCertificates(needsClientCertificates(t));
    gatewayPorts.fit(t);
  };
  fit(o.table());
  try {
    bindOrExplain("--https-port", hostname, httpsPort, () => https.update(o.tls.entries, o.tls.fingerprint, o.tls.provisional ?? false));
    if (httpsFront) {
      front = bindOrExplain("--https-port", hostname, httpsPort, () =>
        startPassthroughFront({
          hostname, port: httpsPort, reusePort: shared, internalPort: (serverName) => https.innerPort(serverName), bySni: () => https.kind === "split", table: o.table, balancer,
          log: log.child({ listener: config.enableSslPassthrough ? "ssl-passthrough" : "https front" }), helloTimeoutMs: config.clientHeaderTimeoutMs, connectTimeoutMs: config.connectTimeoutMs,
          passthrough: config.enableSslPassthrough, ...ppTimeout,
        }),
      );
    }
  } catch (err) {
    for (const s of http.servers) void s.stop(true);
    void https.stop(true);
    void gatewayPorts.stop(true);
    throw err;
  }

  const drain = createDrain({
    config,
    // Every TLS server alive (a rotation may be draining one) is stopped with the rest.
    servers: () => [...http.servers, ...https.servers, ...gatewayPorts.servers],
    get handlers() {
      return [httpHandler, httpsHandler, ...gatewayPorts.handlers];
    },
    log,
  });
  let stopped: Promise<void> | null = null;
  return {
    setTls: (entries, fingerprint, ports) => {
      https.update(entries, fingerprint);
      tlsSet = { entries, fingerprint };
      portTls = ports ?? NO_PORT_TLS;
      gatewayPorts.setTls();
    },
    tableChanged: () => fit(o.table()),
    settled: async () => {
      await https.settled();
      await http.settled();
    },
    ports: { http: http.port, https: front?.port ?? https.port },
    get gatewayPorts() {
      return gatewayPorts.ports;
    },
    get plainListener() {
      return http.kind;
    },
    get httpsListener() {
      return https.kind;
    },
    get tlsProvisional() {
      return https.provisional;
    },
    get draining() {
      return drain.draining;
    },
    shutdown(d) {
      stopped ??= (async () => {
        https.freeze(); // no rotation may start a new server while we drain
        http.freeze();
        gatewayPorts.freeze();
        await drain.begin(d);
        front?.stop(true);
        await https.stop(true);
        await gatewayPorts.stop(true);
        await access.flush(1000);
      })();
      return stopped;
    },
  };
}
