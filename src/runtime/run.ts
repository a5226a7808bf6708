// `portico` serving: the composition root proper. Config → admin port → data plane (listeners
// in this process, or worker processes) → source → controller, signals and drain.
// Kubernetes-only parts live in runtime/cluster.ts; the data planes in local.ts and
// workers/plane.ts, both serving with serving/serve.ts. A worker process never comes here
// (main.ts sends it to workers/worker.ts).
import { createAdminApp, guardAdmin } from "../admin/app.ts";
import { createInstruments } from "../admin/instruments.ts";
import { createReadiness, type Readiness } from "../admin/readiness.ts";
import { Registry } from "../admin/registry.ts";
import { compatCounts } from "../compile/migrate.ts";
import { cidrMatcher } from "../config/cidr.ts";
import type { Config } from "../config/types.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import { ManifestSource } from "../files/manifests.ts";
import { createLogger, silentLogger, type Logger } from "../log/logger.ts";
import { KINDS } from "../model/kinds.ts";
import type { Source } from "../store/types.ts";
import { hostCount } from "../table/routes.ts";
import { serializeTable } from "../table/serialize.ts";
import type { DataPlane } from "../serving/plane.ts";
import { bindOrExplain } from "../serving/ports.ts";
import { VERSION } from "../version.ts";
import { createLineWriter } from "../workers/line-writer.ts";
import { createWorkerPlane } from "../workers/plane.ts";
import { createKubeClient } from "../kube/client.ts";
import { stallTimeoutFromEnv } from "../kube/cluster.ts";
import { watchConfigMap, type ConfigMapWatch } from "../kube/configmap.ts";
import { createController } from "./controller.ts";
import { findConfigMapInFiles } from "./migrate.ts";
import { createNginxSettings } from "./nginx-settings.ts";
import { BUN_HEADER_FLAG, BUN_MAX_HEADER_SIZE, processHeaderLimit } from "../config/header-buffers.ts";
import { createLiveConfig, type LiveConfig } from "../config/live.ts";
import type { WorkerPool } from "../workers/pool.ts";
import { explainLive } from "./explain.ts";
import { startCluster, type Cluster } from "./cluster.ts";
import { settingsConfigMapKeys } from "../model/secret-refs.ts";
import { createLocalPlane } from "./local.ts";

/** How long a failed start waits for its workers to exit (a stuck one is left to the IPC close). */
const FAILED_START_STOP_MS = 3000;

export async function run(flags: Config, mainLog: Logger, explicit: ReadonlySet<keyof Config> = new Set()): Promise<void> {
  let config = flags;
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
  // Bun's parser limit is fixed when the process starts: the executable carries it
  // (scripts/build.ts), `bun src/main.ts` needs the option on its command line. Without it a
  // head over Bun's 16 KiB gets Bun's 431 whatever large-client-header-buffers says.
  const bunLimit = processHeaderLimit();
  if (bunLimit < BUN_MAX_HEADER_SIZE) {
    log.warn("Bun's request head limit is below large-client-header-buffers' bound: larger heads get Bun's 431", { bunLimit, wanted: BUN_MAX_HEADER_SIZE, fix: `bun ${BUN_HEADER_FLAG} src/main.ts` });
  }
  // ingress-nginx's ConfigMap, read before anything is built from the settings: its values are
  // the data plane's for this run, and changes the compiler reads apply live (nginx-settings.ts).
  let controllerRef: ReturnType<typeof createController> | null = null;
  let cmDiagnostics: readonly Diagnostic[] = [];
  const cmOwner = config.nginxConfigmap ? `configmap:${config.nginxConfigmap.namespace}/${config.nginxConfigmap.name}` : "";
  const settings = config.nginxConfigmap === null ? null : createNginxSettings({
    base: config,
    explicit,
    ref: config.nginxConfigmap,
    log: log.child({ component: "nginx-configmap" }),
    onDiagnostics: (ds) => {
      cmDiagnostics = ds;
      controllerRef?.sourceDiagnostics(cmOwner, ds);
    },
    onCompileConfig: (c) => {
      controllerRef?.setCompileConfig(c);
      // add-headers / proxy-set-headers may name other ConfigMaps now: watched from the cluster too.
      cluster?.nameConfigMaps(settingsConfigMapKeys(c));
    },
    // The data plane's per-request settings, in this process and in every worker (config/live.ts).
    onLiveConfig: (c) => {
      if (live === null) return;
      live.set(c);
      workerPool?.setSettings(live.values());
    },
  });
  let live: LiveConfig | null = null;
  let workerPool: WorkerPool | null = null;
  let cmWatch: ConfigMapWatch | null = null;
  /** --manifests: the ConfigMap from the files, after each reload; a file that does not parse may hold it, so nothing changes then. */
  const readCmFiles = async () => {
    if (settings === null || config.manifests === null || config.nginxConfigmap === null) return;
    try {
      const found = await findConfigMapInFiles(config.manifests, config.nginxConfigmap);
      if (found.raw !== null || found.unreadable === 0) settings.update(found.raw);
    } catch (err) {
      log.warn("ConfigMap not read; keeping the last good settings", { err });
    }
  };
  if (settings !== null && config.nginxConfigmap !== null) {
    if (config.manifests) await readCmFiles();
    else {
      // The store's watches' stall timeout (kube/cluster.ts warns about an unreadable value, once).
      const stallTimeoutMs = stallTimeoutFromEnv(process.env, silentLogger);
      cmWatch = await watchConfigMap({
        client: createKubeClient(config, log), ref: config.nginxConfigmap, log, onObject: (raw) => settings.update(raw),
        ...(stallTimeoutMs === null ? {} : { timings: { stallTimeoutMs } }),
      });
    }
    config = settings.config;
  }
  live = createLiveConfig(config);
  const registry = new Registry();
  const inst = createInstruments(registry, { version: VERSION });
  const readiness = createReadiness(KINDS);

  let cluster: Cluster | null = null;
  let plane: DataPlane | null = null;
  let tlsDiagnostics: readonly Diagnostic[] = [];
  const controller = (controllerRef = createController({
    config,
    log,
    onSynced: (kind) => readiness.synced(kind),
    // A source's diagnostic that goes (a file fixed or deleted, an object fixed) leaves the
    // metric at once, even when no compile follows (a broken file that held no objects).
    onSourceDiagnostics: () => inst.setDiagnostics([...controller.diagnostics(), ...tlsDiagnostics]),
    onApplied: (applied) => {
      tlsDiagnostics = plane?.apply(applied.result, applied.generation) ?? [];
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
      // The migration report's statuses: per-Ingress work is cached on the plans (compile/migrate.ts).
      inst.setIngressCompat(compatCounts(controller.compiler.inspect(applied.snapshot, [])));
      if (plane) inst.setCertificates([...plane.expiry].map(([host, s]) => ({ host: host || "default", notAfter: s * 1000 })));
      cluster?.applied(applied, all);
      // Generation 1 is the first table: it can go live only once.
      if (applied.generation === 1) readiness.tableLive();
      maybeReady();
    },
  }));
  if (cmDiagnostics.length > 0) controller.sourceDiagnostics(cmOwner, cmDiagnostics);

  /**
   * /readyz: the first cause that holds it back. Draining, the sources' first lists and the
   * first table come before the data plane's own (workers not serving yet, the TLS stand-in):
   * "workers not serving yet" while a kind is not even listed named the wrong cause.
   */
  const ready = (): Readiness => {
    const r = readiness.check();
    return r.ready ? (plane?.ready() ?? r) : r;
  };
  /** Whether /readyz ever said ready: load balancers may have sent to us (shutdown delay). */
  let everReady = false;
  /** Logs `ready` once, when /readyz first says so (with workers: after they serve). */
  function maybeReady(): void {
    if (everReady || !ready().ready || controller.last === null) return;
    everReady = true;
    const t = controller.last.result.table;
    log.info("ready", { hosts: hostCount(t), routes: t.routeCount, certificates: controller.last.result.certificates.length });
  }

  // The admin port first, bound without SO_REUSEPORT: a port held by anything fails start-up
  // here, before a worker is spawned or a traffic port is taken (serving/ports.ts). Bun 1.4.5
  // sets SO_REUSEPORT for `development: false` unless `reusePort: false` is said (measured).
  const app = createAdminApp({
    ready: () => {
      const r = ready();
      if (r.ready) maybeReady(); // in case readiness came from nothing that calls it (a late TLS swap)
      return r;
    },
    metrics: () => (plane ? plane.metrics() : inst.registry.expose()),
    routes: () => (controller.last ? serializeTable(controller.holder.current, controller.holder.generation) : null),
    explain: (q) => explainLive(controller, settings?.config ?? config, q),
    every: () => settings?.config ?? config,
    routesTls: () => (controller.last ? { hostTls: controller.last.result.hostTls } : {}),
    logger: log,
  });
  const admin = bindOrExplain("--admin-port", config.bind, config.adminPort, () =>
    Bun.serve({ development: false, reusePort: false, hostname: config.bind, port: config.adminPort, fetch: guardAdmin(app.fetch, cidrMatcher(config.debugAllow)) }),
  );

  // A failed start stops the workers before the primary exits: left to notice the closed IPC
  // channel, they would outlive the exit status and log "primary gone" after it.
  const stopPlane = () => (plane === null ? Promise.resolve() : Promise.race([plane.shutdown({ delay: false }), Bun.sleep(FAILED_START_STOP_MS)]));
  const failed = (message: string) => {
    log.error("start-up failed", { err: message });
    void stopPlane().finally(() => exit(1));
  };
  let dataPlane: DataPlane;
  try {
    if (config.workers >= 2) {
      const wp = createWorkerPlane({ config: live.config, log, inst, onFatal: failed, onServing: maybeReady, ...(settings ? { env: settings.workerEnv() } : {}) });
      workerPool = wp.pool;
      dataPlane = wp;
    } else dataPlane = createLocalPlane({ config: live.config, log, inst, holder: controller.holder });
  } catch (err) {
    void admin.stop(true);
    throw err;
  }
  plane = dataPlane;
  log.info("listening", { ...dataPlane.listening, admin: admin.port, bind: config.bind });

  const source: Source = config.manifests
    ? new ManifestSource({ path: config.manifests, log, onDiagnostics: (owner, ds) => controller.sourceDiagnostics(owner, ds), ...(settings ? { onReloaded: () => void readCmFiles() } : {}) })
    : (cluster = await startCluster({ config, log, inst, controller })).source;

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info("shutting down", { signal });
    readiness.draining();
    // Never ready: nothing routes to this process, so there is no delay to wait out.
    await dataPlane.shutdown({ delay: everReady });
    await source.stop().catch(() => undefined);
    await cmWatch?.stop();
    await cluster?.stop();
    controller.dispose();
    await admin.stop(true);
    log.info("stopped", {});
    await exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
  // A Portico started with an IPC channel by a program of its own (`migrate --prove`'s two
  // Porticos, runtime/prove.ts) lives no longer than that program: the kernel closes the
  // channel when the parent dies, SIGKILL included, and the channel's close is the one signal
  // that needs no polling (docs/design.md "Converting to Gateway API"). A worker has its own
  // handler (workers/worker.ts); Bun reports a close that came before this line too.
  if (process.channel !== undefined && process.channel !== null) process.on("disconnect", () => void shutdown("parent gone"));

  try {
    await source.start(controller.sink);
  } catch (err) {
    await stopPlane();
    await admin.stop(true);
    throw err;
  }
}
