// --workers 1: the data plane lives in this process (listeners, proxy handlers, access log).
import type { Instruments } from "../admin/instruments.ts";
import type { Config } from "../config/types.ts";
import { createAccessLog } from "../log/access.ts";
import type { Logger } from "../log/logger.ts";
import { createBalancer, createDrain, createProxyHandler, serveOptions, startHttpListener } from "../proxy/index.ts";
import type { TableHolder } from "../table/holder.ts";
import { lookup } from "../table/lookup.ts";
import type { DataPlane } from "./plane.ts";
import { createHttpsSide } from "./tls.ts";

export function createLocalPlane(o: { config: Config; log: Logger; inst: Instruments; holder: TableHolder }): DataPlane {
  const { config, log, inst, holder } = o;
  const access = createAccessLog({ format: config.logFormat, enabled: config.accessLog === "stdout" });
  inst.trackAccessLogDrops(() => access.dropped);

  // One balancer shared by both schemes, so passive health is learned once.
  const balancer = createBalancer();
  const hooks = inst.proxyHooks((r) => access.record(r));
  const common = { config, table: () => holder.current, lookup, hooks, log, balancer } as const;
  const httpHandler = createProxyHandler({ ...common, scheme: "http" });
  const httpsHandler = createProxyHandler({ ...common, scheme: "https" });
  // Bun exposes no connection count: the gauge reports requests in flight, read at scrape time.
  inst.registry.onCollect(() => inst.metrics.activeConnections.set([], httpHandler.inflight.count + httpsHandler.inflight.count));
  const http = startHttpListener({ hostname: config.bind, port: config.httpPort, handler: httpHandler });
  const https = createHttpsSide({ config, log, handler: () => serveOptions(httpsHandler), onRotation: () => inst.tlsRotated() });
  // The port is bound from the start (a conflict fails start-up) with the default certificate
  // as a stand-in; the first table's certificates replace it at once, before /readyz says ready.
  https.apply({ table: holder.current, certificates: [], statuses: [], diagnostics: [] }, true);

  const drain = createDrain({
    config,
    // Every TLS server alive (a rotation may be draining one) is stopped with the rest.
    servers: () => [http, ...https.listener.servers],
    handlers: [httpHandler, httpsHandler],
    log,
  });

  return {
    apply: (result) => https.apply(result),
    get expiry() {
      return https.expiry;
    },
    ready: () =>
      drain.draining
        ? { ready: false, reason: "draining" }
        : https.listener.provisional && holder.generation > 0
          ? { ready: false, reason: "TLS listener not serving the first table's certificates yet" }
          : null,
    metrics: () => inst.registry.expose(),
    listening: { http: http.port, https: https.listener.port },
    async shutdown() {
      https.listener.freeze(); // no rotation may start a new server while we drain
      await drain.begin();
      await https.listener.stop(true);
      await access.flush(1000);
    },
  };
}
