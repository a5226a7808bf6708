// --workers N ≥ 2, the primary's view of the data plane: it listens on no traffic port; the
// workers serve with serving/serve.ts.
// Each new table goes out as a delta from the previous one (table/wire.ts: the changed host
// entries and the backends they need), encoded once and sent to every worker; the whole table
// is encoded only when a worker needs it (hello, resync) or most hosts changed. TLS entries are
// built here once (PEM checks, default certificate, diagnostics) and sent as they are, so
// every worker serves the same certificates, including the same generated default one.
import { formatExposition, sumSnapshots } from "../admin/exposition.ts";
import type { Instruments } from "../admin/instruments.ts";
import type { Config } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import type { DataPlane } from "../serving/plane.ts";
import { claimPort } from "../serving/ports.ts";
import { buildPortTls, createTlsBuilder } from "../serving/tls.ts";
import { hostCount } from "../table/routes.ts";
import type { RouteTable } from "../table/types.ts";
import { countChangedHosts, encodeDelta, encodeTable, type BackendRegistry } from "../table/wire.ts";
import { formatSharedState, releaseSharedState, sharedStateBytes } from "../proxy/shared/state.ts";
import { currentProcess, workerArgv } from "./argv.ts";
import { createWorkerPool, type WorkerPool } from "./pool.ts";
import { createSharedMemory } from "./shared-memory.ts";

/** Margin on top of shutdown delay + grace before the primary kills a worker that is stuck. */
const DRAIN_MARGIN_MS = 5_000;

export function createWorkerPlane(o: {
  config: Config;
  log: Logger;
  inst: Instruments;
  onFatal(message: string): void;
  /** Every worker serves: the traffic ports listen, readiness may now hold. */
  onServing?(): void;
  /** Added to the workers' environment: settings that did not come from our own flags (--nginx-configmap). */
  env?: Readonly<Record<string, string>>;
}): DataPlane & { readonly pool: WorkerPool } {
  const { config, log, inst } = o;
  const builder = createTlsBuilder(config, log);
  // Fail fast, before a worker is spawned, when a stranger holds a traffic port. The worker
  // that binds first probes again right before it binds (serving/ports.ts).
  claimPort("--http-port", config.bind, config.httpPort);
  claimPort("--https-port", config.bind, config.httpsPort);
  let expiry: ReadonlyMap<string, number> = new Map();
  const argv = workerArgv(currentProcess());
  // The latest table, and the backends every worker holds (wire.ts): deltas name those by id.
  let current: { table: RouteTable; generation: number } | null = null;
  const registry: BackendRegistry = new Map();
  // Encodes on each call; the pool keeps the result only while a worker still needs it.
  // Encoding the same generation again resets the registry to the same backends.
  const fullTable = () => {
    if (current === null) return null;
    const t0 = performance.now();
    const full = { generation: current.generation, json: JSON.stringify(encodeTable(current.table, registry)) };
    log.debug("whole route table encoded for the workers", { generation: full.generation, bytes: full.json.length, ms: Math.round(performance.now() - t0) });
    return full;
  };
  // The limits' counters, the EWMA scores and the auth answer cache, shared by the workers so they hold per pod
  // (proxy/shared/state.ts). Without it each worker counts alone: said loudly, not fatal.
  const shared = createSharedMemory(sharedStateBytes(config.workers));
  if (shared instanceof Error) {
    log.error("no shared memory for the workers: limit-rps, limit-rpm and limit-connections count per worker, so a client may get up to --workers times its limits, each worker scores load-balance: ewma and caches auth answers alone", { err: shared });
  } else {
    formatSharedState(shared.mem, config.workers);
    log.debug("shared memory for the limits, EWMA scores and auth cache", { dir: shared.dir, bytes: shared.mem.byteLength });
  }
  const pool = createWorkerPool({
    count: config.workers, argv, env: o.env ? { ...process.env, ...o.env } : process.env, log, onFatal: o.onFatal, fullTable,
    ports: { http: config.httpPort, https: config.httpsPort, bind: config.bind },
    ...(o.onServing ? { onAllServing: o.onServing } : {}),
    ...(shared instanceof Error ? {} : { shared: { fd: shared.fd, workerGone: (id: number, pid: number) => releaseSharedState(shared.mem, id, pid) } }),
  });
  const initial = builder.build([]);
  expiry = initial.expiry;
  pool.setTls(initial.entries, initial.fingerprint);
  let fingerprint = initial.fingerprint;

  return {
    pool,
    apply(result, generation) {
      const built = builder.build(result.certificates, result.hostTls);
      const own = buildPortTls(builder, result);
      expiry = built.expiry;
      // TLS first: a worker starting now listens once it has both, and a rotation should not
      // lag behind the routes that need it.
      if (built.fingerprint + own.fingerprint !== fingerprint) {
        fingerprint = built.fingerprint + own.fingerprint;
        pool.setTls(built.entries, built.fingerprint, own.ports);
      }
      const prev = current;
      current = { table: result.table, generation };
      let delta: { base: number; json: string } | null = null;
      // A delta when it is small and the registry has not grown far past the table (ids of
      // deleted Services pile up until a whole table resets it).
      if (prev !== null && registry.size <= result.table.routeCount + 1024) {
        if (countChangedHosts(prev.table, result.table) <= Math.max(64, hostCount(result.table) / 4)) {
          delta = { base: prev.generation, json: JSON.stringify(encodeDelta(prev.table, result.table, registry)) };
        }
      }
      pool.publish(generation, delta);
      return built.diagnostics;
    },
    get expiry() {
      return expiry;
    },
    // Every worker, now: one that died, restarts, or could not read the latest whole table
    // holds readiness back until it serves the current table (docs/design.md, "Workers").
    ready: () => {
      const behind = pool.notServing();
      if (behind.length === 0) return null;
      return { ready: false, reason: pool.allReady ? `workers not serving the current route table: ${behind.join(", ")}` : "workers not serving yet" };
    },
    async metrics() {
      const workers = await pool.metrics();
      return formatExposition(sumSnapshots([inst.registry.toJSON(), ...workers]));
    },
    // Nothing listens on the traffic ports yet: the workers bind them once they have a table
    // ("every worker is serving" names them).
    listening: { workers: config.workers },
    shutdown: (d) => pool.drain((d?.delay === false ? 0 : config.shutdownDelayMs) + config.shutdownGracePeriodMs + DRAIN_MARGIN_MS, d),
  };
}
