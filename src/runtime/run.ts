// `portico` serving: the composition root proper. Config → source → controller → listeners
// (HTTP, HTTPS, admin), signals and drain. Kubernetes-only parts live in runtime/cluster.ts.
import { createAdminApp } from "../admin/app.ts";
import { createInstruments } from "../admin/instruments.ts";
import { createReadiness } from "../admin/readiness.ts";
import { Registry } from "../admin/registry.ts";
import type { Config } from "../config/types.ts";
import { ManifestSource } from "../files/manifests.ts";
import { createAccessLog } from "../log/access.ts";
import type { Logger } from "../log/logger.ts";
import { KINDS } from "../model/kinds.ts";
import { createBalancer, createDrain, createProxyHandler, serveOptions, startHttpListener } from "../proxy/index.ts";
import type { AccessRecord } from "../proxy/types.ts";
import type { Source } from "../store/types.ts";
import { lookup } from "../table/lookup.ts";
import { serializeTable } from "../table/serialize.ts";
import { VERSION } from "../version.ts";
import { createController } from "./controller.ts";
import { explainLive } from "./explain.ts";
import { startCluster, type Cluster } from "./cluster.ts";
import { createHttpsSide } from "./tls.ts";

export async function run(config: Config, log: Logger): Promise<void> {
  log.info("starting", { version: VERSION, config: redact(config) });
  const registry = new Registry();
  const inst = createInstruments(registry, { version: VERSION });
  const readiness = createReadiness(KINDS);
  const access = createAccessLog({ format: config.logFormat, enabled: config.accessLog === "stdout" });
  inst.trackAccessLogDrops(() => access.dropped);

  let cluster: Cluster | null = null;
  let https: ReturnType<typeof createHttpsSide> | null = null;
  const controller = createController({
    config,
    log,
    onSynced: (kind) => readiness.synced(kind),
    onApplied: (applied) => {
      const tlsDiagnostics = https?.apply(applied.result) ?? [];
      inst.observeCompile(applied.compileMs);
      inst.observeApply(applied.generation, Date.now());
      inst.setObjects({
        Ingress: applied.snapshot.ingresses.size,
        IngressClass: applied.snapshot.ingressClasses.size,
        Service: applied.snapshot.services.size,
        EndpointSlice: controller.store.count("EndpointSlice"),
        Secret: applied.snapshot.secrets.size,
      });
      const all = [...controller.diagnostics(), ...tlsDiagnostics];
      inst.setDiagnostics(all);
      if (https) inst.setCertificates([...https.expiry].map(([host, s]) => ({ host: host || "default", notAfter: s * 1000 })));
      cluster?.applied(applied, all);
      if (readiness.check().ready === false && applied.generation === 1) {
        readiness.tableLive();
        const t = applied.result.table;
        log.info("ready", {
          hosts: t.exact.size + t.wildcard.size + (t.any ? 1 : 0),
          routes: t.routeCount,
          certificates: applied.result.certificates.length,
        });
      }
    },
  });

  // Data plane: one balancer shared by both schemes, so passive health is learned once.
  const balancer = createBalancer();
  const hooks = inst.proxyHooks<AccessRecord>((r) => access.record(r));
  const common = { config, table: () => controller.holder.current, lookup, hooks, log, balancer } as const;
  const httpHandler = createProxyHandler({ ...common, scheme: "http" });
  const httpsHandler = createProxyHandler({ ...common, scheme: "https" });
  const http = startHttpListener({ hostname: config.bind, port: config.httpPort, handler: httpHandler });
  https = createHttpsSide({ config, log, handler: () => serveOptions(httpsHandler), onRotation: () => inst.tlsRotated() });
  // Serve the default certificate from the start; real ones arrive with the first table.
  https.apply({ table: controller.holder.current, certificates: [], statuses: [], diagnostics: [] });

  const drain = createDrain({
    config,
    // Every TLS server alive (a rotation may be draining one) is stopped with the rest.
    servers: () => [http, ...(https?.listener.servers ?? [])],
    handlers: [httpHandler, httpsHandler],
    log,
  });

  const admin = Bun.serve({
    hostname: config.bind,
    port: config.adminPort,
    fetch: createAdminApp({
      ready: () => (drain.draining ? { ready: false, reason: "draining" } : readiness.check()),
      metrics: () => registry.expose(),
      routes: () => (controller.last ? serializeTable(controller.holder.current, controller.holder.generation) : null),
      explain: (q) => explainLive(controller, config, q),
      logger: log,
    }).fetch,
  });
  log.info("listening", { http: http.port, https: https.listener.port, admin: admin.port, bind: config.bind });

  const source: Source = config.manifests
    ? new ManifestSource({ path: config.manifests, log, onDiagnostic: (d) => controller.sourceDiagnostic(d) })
    : (cluster = await startCluster({ config, log, inst, controller })).source;

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info("shutting down", { signal });
    readiness.draining();
    https?.listener.freeze(); // no rotation may start a new server while we drain
    await drain.begin();
    await https?.listener.stop(true);
    await source.stop().catch(() => undefined);
    await cluster?.stop();
    controller.dispose();
    await admin.stop(true);
    await access.flush(1000);
    log.info("stopped", {});
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));

  await source.start(controller.sink);
}

/** The start-up line lists the effective configuration; nothing secret is in Config today. */
function redact(config: Config): Record<string, unknown> {
  return { ...config };
}
