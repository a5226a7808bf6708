// The control loop (docs/design.md "Control loop"): sources feed the store; a relevant
// change triggers the coalescer; one compile per burst; the new table is swapped in with one
// assignment; the result fans out to whoever listens (TLS listener, status writer, metrics,
// events).
// The first table is published only when every kind has had its first full list, so a
// half-loaded cluster never serves 503s for Services that simply were not read yet.
import { Compiler } from "../compile/compile.ts";
import type { CompileConfig } from "../compile/config.ts";
import { settingsConfigMapKeys } from "../model/secret-refs.ts";
import type { CompileResult } from "../compile/types.ts";
import type { Config } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import { KINDS, objectKey, type Kind, type KindObjects } from "../model/kinds.ts";
import { diagnosticKey, type Diagnostic } from "../model/diagnostic.ts";
import { Coalescer } from "../store/coalescer.ts";
import { Store } from "../store/store.ts";
import type { Snapshot, SourceSink, StoreEvent } from "../store/types.ts";
import { TableHolder } from "../table/holder.ts";
import { hostCount } from "../table/routes.ts";
import { ChangeTracker, LIST_LIMIT, NotServedLog, routeChanges, routeSummary } from "./changes.ts";

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
  /** The sources' diagnostics changed (outside a compile): metrics must follow at once. */
  readonly onSourceDiagnostics?: () => void;
}

export interface Controller {
  /** Give this to a Source. */
  readonly sink: SourceSink;
  readonly store: Store;
  readonly holder: TableHolder;
  /** The compiler of the live table: explain reads its work instead of compiling again. */
  readonly compiler: Compiler;
  /**
   * New compile settings (ingress-nginx's ConfigMap changed: runtime/nginx-settings.ts): a fresh
   * compiler, since its caches hold work done under the old ones, and a compile like any change's.
   */
  setCompileConfig(config: CompileConfig): void;
  /** The last applied result, or null before the first table. */
  readonly last: Applied | null;
  /** A source's current diagnostics for one owner (DiagnosticsReport): replaces that owner's set. */
  sourceDiagnostics(owner: string, diagnostics: readonly Diagnostic[]): void;
  /** All current diagnostics: from sources and from the last compile. */
  diagnostics(): Diagnostic[];
  dispose(): void;
}

export function createController(o: ControllerOptions): Controller {
  const { config, log } = o;
  const kinds = o.kinds ?? KINDS;
  const started = performance.now();
  let last: Applied | null = null;
  let logged = new Map<string, Diagnostic>();
  /** By owner (a manifest file, one watched object): each report replaces the owner's set. */
  const fromSources = new Map<string, readonly Diagnostic[]>();
  const sourceCount = () => {
    let n = 0;
    for (const ds of fromSources.values()) n += ds.length;
    return n;
  };

  const holder = new TableHolder();
  // One incremental compiler for the life of the controller: it reuses the work of unchanged
  // Ingresses, backends and hosts (compile/compile.ts), and explain reads it (runtime/explain.ts).
  let compiler = new Compiler(config);
  // What each table changed, for its log line (not computed for the first table: all of it).
  const tracker = new ChangeTracker();
  const notServed = new NotServedLog(config);
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
  store.setSettingsConfigMaps(settingsConfigMapKeys(config));

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
    const prevTable = last === null ? null : holder.current;
    const generation = holder.swap(result.table);
    last = { result, snapshot, generation, compileMs };
    logNewDiagnostics(result.diagnostics);
    const objects = prevTable === null ? null : tracker.take(store);
    const routes = prevTable === null ? null : routeChanges(prevTable, result.table);
    const list = (name: string, items: readonly string[] | undefined) => (items && items.length > 0 ? { [name]: items } : {});
    log.info("configuration applied", {
      generation,
      ingresses: snapshot.ingresses.size,
      served: result.statuses.length,
      hosts: hostCount(result.table),
      routes: result.table.routeCount,
      certificates: result.certificates.length,
      // The same count as the portico_diagnostics metric (sources' and the compile's).
      diagnostics: result.diagnostics.length + sourceCount(),
      compileMs: Math.round(compileMs * 100) / 100,
      ...list("added", objects?.added),
      ...list("updated", objects?.updated),
      ...list("removed", objects?.removed),
      ...list("routesGained", routes?.gained),
      ...list("routesLost", routes?.lost),
    });
    if (prevTable === null) {
      // What is served, in short, where the operator looks first (the full table: portico routes).
      const summary = routeSummary(result.table);
      log.info("serving", {
        table: summary.length > 0 ? summary : ["no routes: every request gets 404"],
        ...(result.table.routeCount + (result.table.defaultRoute ? 1 : 0) > LIST_LIMIT ? { fullTable: "portico routes, or /debug/routes?format=text on the admin port" } : {}),
      });
    }
    logNotServed(snapshot, objects === null || objects.kinds.has("IngressClass") ? null : objects.ingresses);
    o.onApplied?.(last);
  }

  /** Ingresses that are not ours say why, once (and again only when the reason changes). */
  function logNotServed(snapshot: Snapshot, only: ReadonlySet<string> | null): void {
    if (only !== null && only.size === 0) return;
    const fresh = notServed.check(snapshot, only);
    let n = 0;
    for (const [key, why] of fresh) {
      if (++n > LIST_LIMIT) break;
      const slash = key.indexOf("/");
      log.info("Ingress not served", { kind: "Ingress", namespace: key.slice(0, slash), name: key.slice(slash + 1), why });
    }
    if (fresh.size > LIST_LIMIT) {
      log.info("more Ingresses not served", { count: fresh.size - LIST_LIMIT, hint: "portico explain, or /debug/explain on the admin port, says why for one request" });
    }
    const nginx = notServed.takeNginxHint();
    if (nginx !== null) {
      const slash = nginx.indexOf("/");
      log.warn("Ingresses of class nginx are not served: run with --ingress-nginx-compat to take the Ingresses ingress-nginx takes (class nginx, its class rules)", { namespace: nginx.slice(0, slash), name: nginx.slice(slash + 1) });
    }
  }

  /**
   * A diagnostic is logged when it appears, not again on every compile while it persists, and
   * once more when it goes, so the log says an alert's cause is gone.
   */
  function logNewDiagnostics(diags: readonly Diagnostic[]): void {
    const now = new Map<string, Diagnostic>();
    for (const d of diags) {
      const k = diagnosticKey(d);
      now.set(k, d);
      if (logged.has(k)) continue;
      const fields = { kind: d.kind, namespace: d.namespace, name: d.name, reason: d.reason, err: d.message };
      // Most errors do not skip the object (a missing Secret makes its paths answer 503): the
      // line names the problem and `err` says what happens; only an invalid object is skipped.
      if (d.severity === "warning") log.warn("object problem", fields);
      else log.error(d.reason === "InvalidObject" ? "object skipped" : "object problem", fields);
    }
    for (const [k, d] of logged) {
      if (!now.has(k)) log.info("object problem resolved", { kind: d.kind, namespace: d.namespace, name: d.name, reason: d.reason });
    }
    logged = now;
  }

  const sink: SourceSink = {
    apply(event: StoreEvent): void {
      // Before the first table everything is new: only counts are logged then.
      if (last === null) return void store.apply(event);
      const key = objectKey(event.object.metadata);
      const existed = store.get(event.kind, key) !== undefined;
      if (store.apply(event)) tracker.touch(event.kind, key, existed);
    },
    replace<K extends Kind>(kind: K, objects: readonly KindObjects[K][]): void {
      if (last === null) return void store.replace(kind, objects);
      const before = store.view(kind);
      if (store.replace(kind, objects)) tracker.touchReplaced(kind, before, store.view(kind));
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
    get compiler() {
      return compiler;
    },
    setCompileConfig(c): void {
      // The Gateway API work is handed on when the settings it reads are the same (compile.ts).
      compiler = new Compiler(c, { previous: compiler });
      store.setSettingsConfigMaps(settingsConfigMapKeys(c));
      coalescer.trigger();
    },
    get last() {
      return last;
    },
    sourceDiagnostics(owner, diagnostics): void {
      const before = fromSources.get(owner);
      if (diagnostics.length === 0) fromSources.delete(owner);
      else fromSources.set(owner, diagnostics);
      if ((before?.length ?? 0) !== 0 || diagnostics.length !== 0) o.onSourceDiagnostics?.();
    },
    diagnostics(): Diagnostic[] {
      const out: Diagnostic[] = [];
      for (const ds of fromSources.values()) out.push(...ds);
      out.push(...(last?.result.diagnostics ?? []));
      return out;
    },
    dispose(): void {
      coalescer.dispose();
    },
  };
}
