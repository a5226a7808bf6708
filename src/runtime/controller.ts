// The control loop (docs/design.md "Control loop"): sources feed the store; a relevant
// change triggers the coalescer; one compile per burst; the new table is swapped in with one
// assignment; the result fans out to whoever listens (TLS listener, status writer, metrics,
// events).
// The first table is published only when every kind has had its first full list, so a
// half-loaded cluster never serves 503s for Services that simply were not read yet.
import { Compiler } from "../compile/compile.ts";
import type { CompileResult } from "../compile/types.ts";
import type { Config } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import { KINDS, type Kind, type KindObjects } from "../model/kinds.ts";
import { diagnosticKey, type Diagnostic } from "../model/diagnostic.ts";
import { Coalescer } from "../store/coalescer.ts";
import { Store } from "../store/store.ts";
import type { Snapshot, SourceSink, StoreEvent } from "../store/types.ts";
import { TableHolder } from "../table/holder.ts";
import { hostCount } from "../table/routes.ts";

export interface Applied {
  readonly result: CompileResult;
  readonly snapshot: Snapshot;
  readonly generation: number;
  readonly compileMs: number;
}

export interface ControllerOptions {
  readonly config: Config;
  readonly log: Logger;
  /** Kinds that must report their first list before the first table goes live. */
  readonly kinds?: readonly Kind[];
  /** Holdoff and ceiling of the coalescer (store/coalescer.ts). */
  readonly holdoffMs?: number;
  readonly maxDelayMs?: number;
  readonly onSynced?: (kind: Kind, count: number) => void;
  readonly onApplied?: (applied: Applied) => void;
  readonly onCompileError?: (err: unknown) => void;
}

export interface Controller {
  /** Give this to a Source. */
  readonly sink: SourceSink;
  readonly store: Store;
  readonly holder: TableHolder;
  /** The compiler of the live table: explain reads its work instead of compiling again. */
  readonly compiler: Compiler;
  /** The last applied result, or null before the first table. */
  readonly last: Applied | null;
  /** Invalid objects reported by a source (kept until the object is valid or deleted). */
  sourceDiagnostic(d: Diagnostic): void;
  /** All current diagnostics: from sources and from the last compile. */
  diagnostics(): Diagnostic[];
  dispose(): void;
}

export function createController(o: ControllerOptions): Controller {
  const { config, log } = o;
  const kinds = o.kinds ?? KINDS;
  const started = performance.now();
  let last: Applied | null = null;
  let logged = new Set<string>();
  const fromSources = new Map<string, Diagnostic>();

  const holder = new TableHolder();
  // One incremental compiler for the life of the controller: it reuses the work of unchanged
  // Ingresses, backends and hosts (compile/compile.ts), and explain reads it (runtime/explain.ts).
  const compiler = new Compiler(config);
  const coalescer = new Coalescer({
    // 20 ms: a compile after one change costs ~2 ms at 10k Ingresses (incremental), so bursts need
    // little amortising; 50 ms was sized for a full compile of 130-300 ms.
    holdoffMs: o.holdoffMs ?? 20,
    maxDelayMs: o.maxDelayMs ?? 500,
    clock: {
      now: () => performance.now(),
      setTimeout: (fn, ms) => setTimeout(fn, ms),
      clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
    },
    run,
    // An isolated change compiles on the next tick; bursts still coalesce (store/coalescer.ts).
    leading: true,
  });
  const store = new Store({ onChange: () => coalescer.trigger() });

  function allSynced(): boolean {
    return kinds.every((k) => store.isSynced(k));
  }

  function run(): void {
    if (!allSynced()) return;
    const snapshot = store.snapshot();
    const t0 = performance.now();
    let result: CompileResult;
    try {
      result = compiler.compile(snapshot);
    } catch (err) {
      // compile() is written not to throw; if it ever does, the last good table keeps serving.
      log.error("compile failed; keeping the last good route table", { err });
      o.onCompileError?.(err);
      return;
    }
    const compileMs = performance.now() - t0;
    const generation = holder.swap(result.table);
    last = { result, snapshot, generation, compileMs };
    logNewDiagnostics(result.diagnostics);
    log.info("configuration applied", {
      generation,
      ingresses: snapshot.ingresses.size,
      served: result.statuses.length,
      hosts: hostCount(result.table),
      routes: result.table.routeCount,
      certificates: result.certificates.length,
      diagnostics: result.diagnostics.length,
      compileMs: Math.round(compileMs * 100) / 100,
    });
    o.onApplied?.(last);
  }

  /** A diagnostic is logged when it appears, not again on every compile while it persists. */
  function logNewDiagnostics(diags: readonly Diagnostic[]): void {
    const now = new Set<string>();
    for (const d of diags) {
      const k = diagnosticKey(d);
      now.add(k);
      if (logged.has(k)) continue;
      const fields = { kind: d.kind, namespace: d.namespace, name: d.name, reason: d.reason, err: d.message };
      if (d.severity === "warning") log.warn("object problem", fields);
      else log.error("object skipped", fields);
    }
    logged = now;
  }

  const objKey = (kind: string, meta: { namespace?: string | undefined; name: string }) =>
    `${kind}\u0000${meta.namespace ?? ""}\u0000${meta.name}`;

  const sink: SourceSink = {
    apply(event: StoreEvent): void {
      // A valid version of an object clears the diagnostic its invalid version left.
      fromSources.delete(objKey(event.kind, event.object.metadata));
      store.apply(event);
    },
    replace<K extends Kind>(kind: K, objects: readonly KindObjects[K][]): void {
      store.replace(kind, objects);
    },
    synced(kind: Kind): void {
      const first = !store.isSynced(kind);
      store.synced(kind);
      if (first) {
        const count = store.count(kind);
        log.info("initial list loaded", { kind, count, elapsedMs: Math.round(performance.now() - started) });
        o.onSynced?.(kind, count);
      }
      // The first table goes out as soon as the last kind is listed, even with no objects.
      if (first && allSynced()) {
        coalescer.trigger();
        coalescer.flush();
      }
    },
  };

  return {
    sink,
    store,
    holder,
    compiler,
    get last() {
      return last;
    },
    sourceDiagnostic(d: Diagnostic): void {
      fromSources.set(objKey(d.kind, d), d);
    },
    diagnostics(): Diagnostic[] {
      return [...fromSources.values(), ...(last?.result.diagnostics ?? [])];
    },
    dispose(): void {
      coalescer.dispose();
    },
  };
}
