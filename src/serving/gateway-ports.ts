// The Gateways' own ports (--gateway-ports; docs/design.md "Gateways with their own address").
// The route table lists them (RouteTable.gatewayPorts, by Portico port); each table change
// opens the ports it lists and closes the ports it no longer lists. Each port has its own proxy
// handler whose table is that Gateway's rules alone on an empty Ingress table, made once per
// table change: the request path pays nothing per request for the choice, and the shared
// ports, with no Gateway on them, are served exactly as without this file. Each port is the
// same listener as the shared one of its scheme (plain.ts, https.ts), so a port whose rules
// answer gRPC (a GRPCRoute) is put behind the h2c front, or split by SNI (tls-split.ts: the
// GRPCRoute's hostnames on node:http2, the rest on Bun.serve), or wholly on node:http2, as the
// shared ports are (table/listener-needs.ts asks the port's own table).
//
// With --use-proxy-protocol every port here reads PROXY headers too, as the shared ports do
// (docs/design.md "PROXY protocol"): a load balancer in front of a Service sends them on every
// port of it. The plain port is the plain listener's front from start to end (plain.ts); the
// HTTPS listener moves to a loopback port behind a TCP front (front.ts), as the shared HTTPS
// port's does (passthrough.ts without passthrough), and sees each request's client through it.
import type { Config } from "../config/types.ts";
import type { DrainableServer } from "../http2/listener.ts";
import type { Logger } from "../log/logger.ts";
import { createProxyHandler, serveOptions } from "../proxy/index.ts";
import { answersGrpc, httpsListenerKind } from "../table/listener-needs.ts";
import { needsClientCertificates } from "../table/client-certs.ts";
import { assembleTable } from "../table/build.ts";
import type { GatewayPort, RouteTable } from "../table/types.ts";
import type { TlsEntry } from "../tls/sni.ts";
import { createHttpsListener, type SwitchingHttpsListener } from "./https.ts";
import { createPlainListener, type PlainListener } from "./plain.ts";
import { frontServer, throughFront } from "./front.ts";
import { startPassthroughFront, type PassthroughFront } from "./passthrough.ts";
import { claimPort } from "./ports.ts";

type ProxyHandler = ReturnType<typeof createProxyHandler>;
type HandlerDeps = Omit<Parameters<typeof createProxyHandler>[0], "table" | "scheme">;

interface Open {
  readonly https: boolean;
  readonly handler: ProxyHandler;
  /** The port's own table (its Gateway's rules), as the handler reads it. */
  readonly view: () => RouteTable;
  readonly plain: PlainListener | null;
  readonly tls: SwitchingHttpsListener | null;
  /** --use-proxy-protocol on an HTTPS port: the front that owns the port (the listener is on loopback). */
  readonly front: PassthroughFront | null;
}

export interface GatewayPortsOptions {
  readonly config: Config;
  readonly log: Logger;
  readonly hostname: string;
  /**
   * Sibling workers listen on the same ports. Every port is bound with SO_REUSEPORT (a port a
   * Gateway leaves may be taken by another while the first still drains, and an HTTPS port's
   * certificate rotation binds it twice); alone, a port is probed first (ports.ts says why),
   * unless this process is still draining it.
   */
  readonly reusePort: boolean;
  /** First wait before a port that could not be bound is tried again (doubling to 30 s; default 250 ms). */
  readonly retryMs?: number;
  readonly table: () => RouteTable;
  readonly deps: HandlerDeps;
  /** The certificate set an HTTPS port serves (its own, else the shared HTTPS port's). */
  readonly tls: (port: number) => { readonly entries: readonly TlsEntry[]; readonly fingerprint: string };
}

export interface GatewayPortListeners {
  /** Open and close ports as `t` lists them. Never throws: a port that cannot be bound is logged and tried again after a back-off. */
  fit(t: RouteTable): void;
  /** The certificate sets changed: each HTTPS port takes its own (`tls`). */
  setTls(): void;
  /** The ports listening now, by Portico port. */
  readonly ports: ReadonlyMap<number, { readonly https: boolean }>;
  readonly handlers: readonly ProxyHandler[];
  readonly servers: readonly DrainableServer[];
  /** No more ports opened (shutdown). */
  freeze(): void;
  stop(closeActive: boolean): Promise<void>;
}

const EMPTY = assembleTable([], null, 0);

/** The table a Gateway's port serves: its rules, and no Ingress (a request none matches: 404). */
function viewOf(g: GatewayPort | undefined): RouteTable {
  return Object.freeze({ ...EMPTY, gateway: g?.routes ?? null });
}

export function createGatewayPortListeners(o: GatewayPortsOptions): GatewayPortListeners {
  const { log } = o;
  const open = new Map<number, Open>();
  /** Ports this process closed and may still be draining: not probed (the probe would find us). */
  const closing = new Set<number>();
  let frozen = false;
  const firstRetryMs = o.retryMs ?? 250;
  let retryMs = firstRetryMs;
  let retry: ReturnType<typeof setTimeout> | null = null;
  // --use-proxy-protocol: read at start, as for the shared ports (serve.ts), with the same trust.
  const pp = o.config.useProxyProtocol
    ? { proxyProtocolTimeoutMs: o.config.proxyProtocolHeaderTimeoutMs, proxyProtocolTrusted: o.config.proxyProtocolTrusted }
    : null;

  function handlerFor(port: number, https: boolean): { handler: ProxyHandler; view: () => RouteTable } {
    let seen: RouteTable | null = null;
    let view: RouteTable = EMPTY;
    const table = (): RouteTable => {
      const t = o.table();
      if (t !== seen) {
        seen = t;
        view = viewOf(t.gatewayPorts?.get(port));
      }
      return view;
    };
    return { handler: createProxyHandler({ ...o.deps, table, scheme: https ? "https" : "http" }), view: table };
  }

  /** What the port's rules need of its listener (serve.ts does the same for the shared ports). */
  function fitKind(x: Open): void {
    const v = x.view();
    x.plain?.useH2cFront(answersGrpc(v));
    if (x.tls) {
      x.tls.useListener(httpsListenerKind(v));
      x.tls.requestClientCertificates(needsClientCertificates(v));
    }
  }

  function close(port: number, o2: Open): void {
    open.delete(port);
    o2.handler.inflight.draining = true;
    // Graceful: the socket stops accepting at once, requests in flight finish.
    closing.add(port);
    const done = () => void closing.delete(port);
    if (o2.plain) {
      o2.plain.freeze();
      void Promise.all(o2.plain.servers.map((s) => s.stop(false))).finally(done);
    }
    if (o2.tls) {
      // The TLS listener's own stop keeps accepting while it drains (made for a rotation, where
      // the next server serves the same): here the port may go to another Gateway, even a
      // plain one, at once, so its sockets stop accepting now (the front's, when it owns the port).
      o2.front?.stop(false);
      for (const s of o2.tls.servers) void s.stop(false);
      void o2.tls.stop(false).finally(done);
    }
  }

  /** False when the port could not be bound (logged). */
  function start(port: number, https: boolean): boolean {
    const { handler, view } = handlerFor(port, https);
    try {
      if (!o.reusePort && !closing.has(port)) claimPort("--gateway-ports", o.hostname, port);
      if (!https) {
        const plain = createPlainListener({
          hostname: o.hostname, port, handler, reusePort: true, http2: o.config.http2, log: log.child({ listener: `gateway-http-${port}` }),
          firstBytesTimeoutMs: o.config.clientHeaderTimeoutMs, connectTimeoutMs: o.config.connectTimeoutMs,
          ...(pp ?? {}),
        });
        const x: Open = { https, handler, view, plain, tls: null, front: null };
        open.set(port, x);
        fitKind(x);
      } else {
        let front: PassthroughFront | null = null;
        // Behind the front the handler sees the client and port the front recorded for the
        // loopback connection (front.ts FrontPeer), as the shared HTTPS port's handler does;
        // each loopback listener names its own port (the SNI split has two).
        const served = (listenerPort: () => number) =>
          pp === null
            ? handler
            : {
                ...handler,
                fetch: (req: Request, server: Parameters<ProxyHandler["fetch"]>[1]) => throughFront(front, req, server, listenerPort, handler.fetch),
              };
        const tls = createHttpsListener({
          // QUIC stays on the shared HTTPS port: Alt-Svc would advertise it there (and
          // --http3 is refused with --use-proxy-protocol: QUIC carries no PROXY header).
          config: { ...o.config, http3: false },
          draining: () => handler.inflight.draining,
          hostname: pp === null ? o.hostname : "127.0.0.1",
          port: pp === null ? port : 0,
          handler: (listenerPort) => serveOptions(served(listenerPort)),
          // While only some of its hosts need node:http2 the port is split by SNI as the shared
          // one is: by the split's own front, or with --use-proxy-protocol by the front below,
          // which asks innerPort.
          split: { table: view, front: pp === null ? { helloTimeoutMs: o.config.clientHeaderTimeoutMs, connectTimeoutMs: o.config.connectTimeoutMs } : null },
          log: log.child({ listener: `gateway-https-${port}` }),
        });
        const x0: Open = { https, handler, view, plain: null, tls, front: null };
        // The listener kind first: before its first update nothing listens (https.ts).
        fitKind(x0);
        const set = o.tls(port);
        tls.update(set.entries, set.fingerprint);
        if (pp !== null) {
          try {
            // The shared HTTPS port's front without passthrough: one loopback listener, where the
            // first byte after the header decides nothing; split by SNI, the ClientHello's server
            // name picks the loopback listener (tls-split.ts innerPort; no readable name:
            // node:http2, which serves every route).
            front = startPassthroughFront({
              hostname: o.hostname, port, reusePort: true, log: log.child({ listener: `gateway-https-front-${port}` }), name: "gateway https front",
              internalPort: (serverName) => tls.innerPort(serverName), bySni: () => tls.kind === "split", table: view,
              passthrough: false, helloTimeoutMs: o.config.clientHeaderTimeoutMs, connectTimeoutMs: o.config.connectTimeoutMs, ...pp,
            });
          } catch (err) {
            void tls.stop(true);
            throw err;
          }
        }
        open.set(port, { ...x0, front });
      }
      log.info("listening for a Gateway", { port, https });
      return true;
    } catch (err) {
      log.error("cannot listen on a Gateway's port; trying again", { port, err: err instanceof Error ? err.message : String(err), retryMs });
      return false;
    }
  }

  /** Bind what the table lists and is not open yet; a failure is tried again after a back-off. */
  function openWanted(t: RouteTable): void {
    const want = t.gatewayPorts ?? null;
    let failed = false;
    if (want !== null) for (const [port, g] of want) if (!open.has(port) && !start(port, g.https)) failed = true;
    if (!failed) {
      retryMs = firstRetryMs;
      return;
    }
    if (retry !== null || frozen) return;
    retry = setTimeout(() => {
      retry = null;
      if (!frozen) openWanted(o.table());
    }, retryMs);
    retry.unref?.();
    retryMs = Math.min(30_000, retryMs * 2);
  }

  return {
    fit(t) {
      if (frozen) return;
      const want = t.gatewayPorts ?? null;
      for (const [port, cur] of [...open]) {
        const g = want?.get(port);
        if (g === undefined || g.https !== cur.https) {
          close(port, cur);
          log.info("stopped listening for a Gateway", { port });
        }
      }
      if (want === null) return;
      for (const x of open.values()) fitKind(x);
      openWanted(t);
    },
    setTls() {
      for (const [port, x] of open) {
        if (x.tls === null) continue;
        const set = o.tls(port);
        if (set.fingerprint !== x.tls.fingerprint) x.tls.update(set.entries, set.fingerprint);
      }
    },
    get ports() {
      return new Map([...open].map(([p, x]) => [p, { https: x.https }]));
    },
    get handlers() {
      return [...open.values()].map((x) => x.handler);
    },
    get servers() {
      return [...open.values()].flatMap((x): DrainableServer[] =>
        x.plain ? [...x.plain.servers] : x.tls ? [...(x.front ? [frontServer(x.front)] : []), ...x.tls.servers] : [],
      );
    },
    freeze() {
      frozen = true;
      if (retry !== null) clearTimeout(retry);
      for (const x of open.values()) {
        x.tls?.freeze();
        x.plain?.freeze();
      }
    },
    async stop(closeActive) {
      frozen = true;
      if (retry !== null) clearTimeout(retry);
      await Promise.all(
        [...open.values()].map(async (x) => {
          if (x.plain) {
            x.plain.freeze();
            await Promise.all(x.plain.servers.map((s) => s.stop(closeActive)));
          } else if (x.tls) {
            x.front?.stop(closeActive);
            await x.tls.stop(closeActive);
          }
        }),
      );
    },
  };
}
