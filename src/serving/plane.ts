// The data plane as the composition root sees it: in this process (--workers 1,
// runtime/local.ts) or in worker processes fed by the primary (--workers N ≥ 2,
// workers/plane.ts). Both serve with serve.ts's serveTraffic, in this process or in each worker.
import type { Readiness } from "../admin/readiness.ts";
import type { CompileResult } from "../compile/types.ts";
import type { Diagnostic } from "../model/diagnostic.ts";

export interface DataPlane {
  /** A new table is live in the controller: serve it; returns the TLS diagnostics. */
  apply(result: CompileResult, generation: number): readonly Diagnostic[];
  /** notAfter (s) per served TLS host, "" = default certificate. */
  readonly expiry: ReadonlyMap<string, number>;
  /** What the data plane adds to readiness (null: nothing holds it back). */
  ready(): Readiness | null;
  /** The Prometheus exposition for /metrics (this process's registry, plus the workers'). */
  metrics(): string | Promise<string>;
  /** For the start-up log line: what listens now (a worker plane's ports listen later). */
  readonly listening: Readonly<Record<string, unknown>>;
  /**
   * Drain the listeners (shutdown delay, stop accepting, grace period) and close them.
   * `delay: false` when the process never reported ready: nothing routes to it, so the
   * shutdown delay would only hold the exit.
   */
  shutdown(o?: { readonly delay?: boolean }): Promise<void>;
}
