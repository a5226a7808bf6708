// `portico` serving: the composition root proper. Config → source → controller → data plane
// (listeners in this process, or worker processes), admin port, signals and drain.
// Kubernetes-only parts live in runtime/cluster.ts; the data planes in local.ts and workers/.
import { createAdminApp } from "../admin/app.ts";
import { createInstruments } from "../admin/instruments.ts";
import { createReadiness } from "../admin/readiness.ts";
import { Registry } from "../admin/registry.ts";
import type { Config } from "../config/types.ts";
import { ManifestSource } from "../files/manifests.ts";
import { createLogger, type Logger } from "../log/logger.ts";
import { KINDS } from "../model/kinds.ts";
import type { Source } from "../store/types.ts";
import { hostCount } from "../table/routes.ts";
import { serializeTable } from "../table/serialize.ts";
import { VERSION } from "../version.ts";
import { createLineWriter } from "../workers/line-writer.ts";
import { createWorkerPlane } from "../workers/plane.ts";
import { workerIdFromEnv } from "../workers/protocol.ts";
import { runWorker } from "../workers/worker.ts";
import { createController } from "./controller.ts";
import { explainLive } from "./explain.ts";
import { startCluster, type Cluster } from "./cluster.ts";
import { createLocalPlane } from "./local.ts";
import type { DataPlane } from "./plane.ts";

export async function run(config: Config, mainLog: Logger): Promise<void> {
  // A worker process (started by a primary with --workers N ≥ 2) serves traffic only.
  const workerId = workerIdFromEnv(process.env);
  if (workerId !== null) return runWorker(config, workerId);
  // With workers sharing our stdout, our lines too must be written whole (line-writer.ts).
  const out = config.workers >= 2 ? createLineWriter(1) : null;
  const log = out ? createLogger({ level: config.logLevel, format: config.logFormat, write: (line) => void out.write(`${line}\n`) }) : mainLog;
  /** Exit once our queued log lines are out (bounded: a stuck stdout must not hold the exit). */
  const exit = async (code: number) => {
    if (out) await Promise.race([out.flush(), Bun.sleep(1000)]);
    process.exit(code);
  };

  // The effective configuration: Config holds paths and names, never credentials (those stay
  // in the kubeconfig), so it is logged whole.
  log.info("starting", { version: VERSION, config });
  const registry = new Registry();
  const inst = createInstruments(registry, { version: VERSION });
  const readiness = createReadiness(KINDS);

  let cluster: Cluster | null = null;
  let plane: DataPlane | null = null;
  const controller = createController({
    config,
    log,
    onSynced: (kind) => readiness.synced(kind),
    onApplied: (applied) => {
      const tlsDiagnostics = plane?.apply(applied.result, applied.generation) ?? [];
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
      if (plane) inst.setCertificates([...plane.expiry].map(([host, s]) => ({ host: host || "default", notAfter: s * 1000 })));
      cluster?.applied(applied, all);
      // Generation 1 is the first table: it can go live only once.
      if (applied.generation === 1) {
        readiness.tableLive();
        const t = applied.result.table;
        log.info("ready", {
          hosts: hostCount(t),
          routes: t.routeCount,
          certificates: applied.result.certificates.length,
        });
      }
    },
  });

  const failed = (message: string) => {
    log.error("start-up failed", { err: message });
    void exit(1);
  };
  plane = config.workers >= 2
    ? createWorkerPlane({ config, log, inst, onFatal: failed })
    : createLocalPlane({ config, log, inst, holder: controller.holder });
  const dataPlane = plane;

  const admin = Bun.serve({
    development: false,
    hostname: config.bind,
    port: config.adminPort,
    fetch: createAdminApp({
      ready: () => dataPlane.ready() ?? readiness.check(),
      metrics: () => dataPlane.metrics(),
      routes: () => (controller.last ? serializeTable(controller.holder.current, controller.holder.generation) : null),
      explain: (q) => explainLive(controller, config, q),
      logger: log,
    }).fetch,
  });
  log.info("listening", { ...dataPlane.listening, admin: admin.port, bind: config.bind });

  const source: Source = config.manifests
    ? new ManifestSource({ path: config.manifests, log, onDiagnostic: (d) => controller.sourceDiagnostic(d) })
    : (cluster = await startCluster({ config, log, inst, controller })).source;

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info("shutting down", { signal });
    readiness.draining();
    await dataPlane.shutdown();
    await source.stop().catch(() => undefined);
    await cluster?.stop();
    controller.dispose();
    await admin.stop(true);
    log.info("stopped", {});
    await exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));

  await source.start(controller.sink);
}
