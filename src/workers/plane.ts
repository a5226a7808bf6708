// --workers N ≥ 2, the primary's view of the data plane: it listens on no traffic port.
// Each new table is encoded once (table/wire.ts) and sent to every worker; TLS entries are
// built here once (PEM checks, default certificate, diagnostics) and sent as they are, so
// every worker serves the same certificates, including the same generated default one.
import { formatExposition, sumSnapshots } from "../admin/exposition.ts";
import type { Instruments } from "../admin/instruments.ts";
import type { Config } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import type { DataPlane } from "../runtime/plane.ts";
import { createTlsBuilder } from "../runtime/tls.ts";
import { encodeTable } from "../table/wire.ts";
import { currentProcess, workerArgv } from "./argv.ts";
import { createWorkerPool, type WorkerPool } from "./pool.ts";

/** Margin on top of shutdown delay + grace before the primary kills a worker that is stuck. */
const DRAIN_MARGIN_MS = 5_000;

export function createWorkerPlane(o: {
  config: Config;
  log: Logger;
  inst: Instruments;
  onFatal(message: string): void;
}): DataPlane & { readonly pool: WorkerPool } {
  const { config, log, inst } = o;
  const builder = createTlsBuilder(config, log);
  let expiry: ReadonlyMap<string, number> = new Map();
  const argv = workerArgv(currentProcess());
  const pool = createWorkerPool({ count: config.workers, argv, env: process.env, log, onFatal: o.onFatal });
  const initial = builder.build([]);
  expiry = initial.expiry;
  pool.setTls(initial.entries, initial.fingerprint);
  let fingerprint = initial.fingerprint;

  return {
    pool,
    apply(result, generation) {
      const built = builder.build(result.certificates);
      expiry = built.expiry;
      // TLS first: a worker starting now listens once it has both, and a rotation should not
      // lag behind the routes that need it.
      if (built.fingerprint !== fingerprint) {
        fingerprint = built.fingerprint;
        pool.setTls(built.entries, built.fingerprint);
      }
      pool.setTable(generation, JSON.stringify(encodeTable(result.table)));
      return built.diagnostics;
    },
    get expiry() {
      return expiry;
    },
    ready: () => (pool.allReady ? null : { ready: false, reason: "workers not serving yet" }),
    async metrics() {
      const workers = await pool.metrics();
      return formatExposition(sumSnapshots([inst.registry.toJSON(), ...workers]));
    },
    listening: { workers: config.workers, http: config.httpPort, https: config.httpsPort, argv: argv.slice(0, 2) },
    shutdown: () => pool.drain(config.shutdownDelayMs + config.shutdownGracePeriodMs + DRAIN_MARGIN_MS),
  };
}
