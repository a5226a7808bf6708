// One list+watch loop per kind, the way client-go's reflector runs them, without client-go:
// paginated list → sink.replace + sink.synced; watch from the list's resourceVersion with
// bookmarks and a random 5-10 min timeoutSeconds; a clean end resumes from the last version
// without listing; 410 Gone (HTTP status or ERROR event) relists; other errors back off
// (0.8 s doubling to 30 s, jittered, reset after 2 min healthy). One bad line or object is
// logged, counted and skipped; the stream goes on. A connected watch that receives no event
// and no bookmark for longer than the API server's bookmark interval allows is stalled: it is
// aborted, logged and resumed at once (docs/design.md "API server failures").
import * as v from "valibot";
import type { Config } from "../config/types.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import { KINDS, KIND_API, isOptionalKind, parseObject, type Kind, type KubeObject } from "../model/kinds.ts";
import { ObjectMetaSchema } from "../model/schemas.ts";
import type { DiagnosticsReport, Source, SourceSink, StoreEvent } from "../store/types.ts";
import { apiError, type KubeClient } from "./client.ts";
import type { Logger } from "../log/logger.ts";
import { readNdjson } from "./ndjson.ts";
import {
  collectionPath, DEFAULT_WATCH_TIMINGS, FIELD_SELECTORS, Gone, NotInstalled, parseWatchLine, resumeAfter, ResourceVersionSchema, Stalled, TooLarge, watchRefused, watchTimers,
  type SourceHooks, type WatchTimings,
} from "./watch-parts.ts";

export { collectionPath, type SourceHooks, type WatchTimings } from "./watch-parts.ts";
import { assertDeclared } from "./permissions.ts";
import { backoffDelay, sleep } from "./backoff.ts";
import { createConfigMapRefs } from "./configmap-refs.ts";
import { settingsConfigMapKeys } from "../model/secret-refs.ts";

export interface KubeSourceOptions {
  client: KubeClient;
  config: Pick<Config, "watchNamespace"> & Partial<Pick<Config, "addHeaders" | "proxySetHeaders">>;
  log: Logger;
  hooks?: SourceHooks;
  timings?: Partial<WatchTimings>;
  /**
   * Objects that fail validation (also logged and skipped), one owner per object
   * (`Kind/namespace/name`); cleared when the object is fixed, deleted, or missing at a relist.
   */
  onDiagnostics?: DiagnosticsReport;
  kinds?: readonly Kind[];
  /**
   * Set: `kinds` are listed and watched whole even when they are by reference, and only the
   * objects `keep` accepts are kept: the others are dropped as they arrive, before validation,
   * and never reach the sink (the collection watch of kube/configmap-refs.ts). An object whose
   * metadata is unreadable is dropped too.
   */
  keep?: (kind: Kind, metadata: { namespace?: string | undefined; name: string }) => boolean;
  /**
   * With `keep`: called as each list (or a list started again) begins, before its first page:
   * an object that `keep` starts accepting after this may have been dropped from the pages.
   */
  onListStart?: (kind: Kind) => void;
}

/**
 * Page size of the collection list of ConfigMaps (configmap-refs.ts): a page is read whole, and
 * a ConfigMap may hold up to 1 MiB (kube-apiserver's ValidateConfigMap: data and binaryData
 * together at most 1048576 bytes), so 50 bounds one page near 50 MiB where 500 could be 500.
 */
const KEPT_PAGE_SIZE = 50;

export interface KindState {
  synced: boolean;
  resourceVersion: string | null;
  lists: number;
  watches: number;
  errors: number;
  malformed: number;
  invalid: number;
  /** False while an optional kind's CRD is absent; null until its first list answers. */
  installed?: boolean | null;
}

export interface KubeSource extends Source {
  state(kind: Kind): Readonly<KindState>;
  /** The ConfigMaps the settings name now (add-headers, proxy-set-headers): watched by reference too. */
  nameConfigMaps(keys: readonly string[]): void;
}


export function createKubeSource(o: KubeSourceOptions): KubeSource {
  const keep = o.keep ?? null;
  const t: WatchTimings = { ...DEFAULT_WATCH_TIMINGS, ...o.timings, ...(keep === null ? {} : { pageSize: Math.min(o.timings?.pageSize ?? DEFAULT_WATCH_TIMINGS.pageSize, KEPT_PAGE_SIZE) }) };
  // ConfigMaps are watched by reference (configmap-refs.ts): the named ones only, by name or,
  // when many are named, through one collection watch that is this loop with `keep`.
  const asked = o.kinds ?? KINDS;
  const kinds = keep === null ? asked.filter((k) => KIND_API[k].byReference !== true) : asked;
  const { client, log } = o;
  const refs = keep === null && asked.includes("ConfigMap")
    ? createConfigMapRefs({
        client, log, kinds, ...(o.timings ? { timings: o.timings } : {}),
        settings: settingsConfigMapKeys(o.config),
        watchAll: (w) => createKubeSource({
          client, config: o.config, log, kinds: ["ConfigMap"], keep: (_kind, meta) => w.keep(meta), onListStart: () => w.onListStart(),
          hooks: { ...o.hooks, onError: (kind, reason) => { o.hooks?.onError?.(kind, reason); w.onError(reason); } },
          onDiagnostics: (owner, diagnostics) => w.onInvalid(owner.slice("ConfigMap/".length), diagnostics.length > 0),
          ...(o.timings ? { timings: o.timings } : {}),
        }),
      })
    : null;
  const hooks = o.hooks ?? {};
  for (const k of kinds) for (const verb of ["list", "watch"]) assertDeclared(KIND_API[k].group, KIND_API[k].resource, verb);
  const states = new Map<Kind, KindState>(kinds.map((k) => [k, { synced: false, resourceVersion: null, lists: 0, watches: 0, errors: 0, malformed: 0, invalid: 0 }]));
  const stop = new AbortController();
  let loops: Promise<void>[] = [];
  /** Owners with a diagnostic reported, per kind (to clear them when their cause goes). */
  const invalidOwners = new Map<Kind, Set<string>>(kinds.map((k) => [k, new Set()]));
  const ownerOf = (kind: Kind, namespace: string | undefined, name: string) => `${kind}/${namespace ?? ""}/${name}`;

  /** A valid version (or the deletion) of an object clears the diagnostic its invalid version left. */
  function clearInvalid(kind: Kind, meta: { namespace?: string | undefined; name: string }): void {
    const owners = invalidOwners.get(kind);
    const owner = ownerOf(kind, meta.namespace, meta.name);
    if (owners?.delete(owner)) o.onDiagnostics?.(owner, []);
  }

  const query = (kind: Kind, extra: Record<string, string>): string => {
    const q = new URLSearchParams(extra);
    const fs = FIELD_SELECTORS[kind];
    if (fs) q.set("fieldSelector", fs);
    return `${collectionPath(kind, o.config.watchNamespace)}?${q}`;
  };

  function invalid(kind: Kind, st: KindState, d: Diagnostic): void {
    st.invalid++;
    hooks.onInvalid?.(kind);
    const owner = ownerOf(kind, d.namespace, d.name);
    invalidOwners.get(kind)?.add(owner);
    o.onDiagnostics?.(owner, [d]);
    log.warn("invalid object skipped", { kind: d.kind, namespace: d.namespace, name: d.name, reason: d.reason, err: d.message });
  }

  async function list(kind: Kind, st: KindState, sink: SourceSink): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      o.onListStart?.(kind);
      // Each page is validated as it arrives: only the validated objects are kept, never the
      // raw pages of the whole list at once (memory at start-up: docs/design.md "Sources at
      // start-up").
      const objects: KubeObject[] = [];
      const invalidItems: Diagnostic[] = [];
      let cont = "";
      let rv = "";
      let expired = false;
      do {
        const path = query(kind, { limit: String(t.pageSize), ...(cont ? { continue: cont } : {}) });
        const signal = AbortSignal.any([stop.signal, AbortSignal.timeout(t.requestTimeoutMs)]);
        const res = await client.request("GET", path, { signal });
        // An expired continue token (410) means: start the list again (API concepts, "Retrieving large results").
        if (res.status === 410 && cont && attempt < 3) {
          await res.body?.cancel();
          expired = true;
          break;
        }
        if (res.status === 404 && isOptionalKind(kind)) {
          await res.body?.cancel();
          throw new NotInstalled();
        }
        if (!res.ok) throw await apiError(res, "GET", path, client.server);
        const body = (await res.json()) as { metadata?: { resourceVersion?: unknown; continue?: unknown }; items?: unknown };
        // A list whose version the API server would refuse to watch from is not a list (watch-parts.ts ResourceVersionSchema).
        if (!Array.isArray(body.items) || !v.is(ResourceVersionSchema, body.metadata?.resourceVersion)) throw new Error(`list ${path}: not a list`);
        if (!cont) rv = body.metadata.resourceVersion;
        for (const item of body.items) {
          if (keep !== null && !kept(kind, item)) continue;
          const p = parseObject(kind, item);
          if (p.ok) objects.push(p.object);
          else invalidItems.push(p.diagnostic);
        }
        cont = typeof body.metadata.continue === "string" ? body.metadata.continue : "";
      } while (cont);
      if (expired) continue;
      // A relist is the whole truth: an object invalid before and absent or valid now (deleted,
      // or fixed while the watch was down) no longer has a diagnostic.
      const owners = invalidOwners.get(kind)!;
      const still = new Set(invalidItems.map((d) => ownerOf(kind, d.namespace, d.name)));
      for (const owner of [...owners]) {
        if (still.has(owner)) continue;
        owners.delete(owner);
        o.onDiagnostics?.(owner, []);
      }
      // Reported once the list is complete, so an expired and restarted list does not report twice.
      for (const d of invalidItems) invalid(kind, st, d);
      st.lists++;
      sink.replace(kind, objects as never);
      return rv;
    }
  }

  /**
   * With `keep`: is this raw object one to keep? Only its name and namespace are read; the
   * object is validated afterwards, like any other, when kept.
   */
  function kept(kind: Kind, raw: unknown): boolean {
    const meta = raw !== null && typeof raw === "object" ? (raw as { metadata?: unknown }).metadata : undefined;
    if (meta === null || typeof meta !== "object") return false;
    const { name, namespace } = meta as { name?: unknown; namespace?: unknown };
    return typeof name === "string" && (namespace === undefined || typeof namespace === "string") && keep!(kind, { name, namespace });
  }

  /** Logged, counted and skipped: a line that is not a watch event, or an event the resume point refuses. */
  function malformed(kind: Kind, st: KindState, why: string): void {
    st.malformed++;
    hooks.onMalformed?.(kind);
    log.warn("malformed watch line skipped", { kind, err: why });
  }

  /** Returns the number of events applied; throws Gone on 410. */
  async function watchOnce(kind: Kind, st: KindState, sink: SourceSink, connected: () => void): Promise<number> {
    const timeoutS = t.watchTimeoutSeconds();
    const path = query(kind, { watch: "1", resourceVersion: st.resourceVersion ?? "", allowWatchBookmarks: "true", timeoutSeconds: String(timeoutS) });
    // Header deadline, stream deadline and stall watchdog (watch-parts.ts watchTimers).
    const timers = watchTimers(t, timeoutS, stop.signal);
    let n = 0;
    try {
      const res = await client.stream(path, { signal: timers.signal });
      // The header deadline also bounds reading an error's Status body: an answer that stops
      // half-way would otherwise hold this kind until the watch deadline, minutes away.
      if (res.status === 404 && isOptionalKind(kind)) {
        await res.body?.cancel();
        throw new NotInstalled();
      }
      if (!res.ok || !res.body) throw await watchRefused(res, path, client.server);
      timers.connected();
      st.watches++;
      connected();
      for await (const item of readNdjson(res.body, t.maxLineBytes)) {
        const ev = "line" in item ? parseWatchLine(item.line) : null;
        if (!ev) {
          malformed(kind, st, "tooLong" in item ? `line of ${item.tooLong} bytes over the limit` : "not a watch event");
          continue;
        }
        if (ev.type === "ERROR") {
          timers.heard();
          const s = ev.object as { code?: unknown; message?: unknown };
          if (s.code === 410) throw new Gone();
          throw new Error(`watch ERROR event: ${String(s.code)} ${String(s.message ?? "")}`.slice(0, 300));
        }
        // The resume point only moves forward, and only on a well-formed version: a garbage
        // line must neither rewind it nor set one the API server would refuse (watch-parts.ts).
        const next = resumeAfter(st.resourceVersion, ev);
        if (!next.ok) {
          malformed(kind, st, next.why);
          continue;
        }
        timers.heard();
        if (ev.type === "BOOKMARK") {
          st.resourceVersion = next.rv;
          continue;
        }
        if (keep !== null && !kept(kind, ev.object)) {
          // Not wanted: dropped unread, but still the server's event, in order.
          if (next.rv !== null) st.resourceVersion = next.rv;
          n++;
          continue;
        }
        const p = parseObject(kind, ev.object);
        if (p.ok) {
          clearInvalid(kind, p.object.metadata);
          sink.apply({ type: ev.type, kind, object: p.object } as StoreEvent);
          hooks.onEvent?.(kind, ev.type);
          n++;
        } else if (ev.type === "DELETED" && v.is(ObjectMetaSchema, (ev.object as { metadata?: unknown }).metadata)) {
          // The last valid version may still be held (an update to an invalid one is skipped):
          // a deletion only needs the key.
          const metadata = (ev.object as { metadata: KubeObject["metadata"] }).metadata;
          clearInvalid(kind, metadata);
          sink.apply({ type: "DELETED", kind, object: { metadata } as KubeObject } as StoreEvent);
          hooks.onEvent?.(kind, ev.type);
          n++;
        } else invalid(kind, st, p.diagnostic);
        // An object Portico refuses is still the server's event, in order: the point moves past it.
        if (next.rv !== null) st.resourceVersion = next.rv;
      }
      // An abort may also surface as the end of the stream: still a stall, not a clean end.
      if (timers.stalled) throw timers.stalled;
      return n;
    } catch (e) {
      throw timers.stalled ?? e;
    } finally {
      timers.dispose();
    }
  }

  async function loop(kind: Kind, sink: SourceSink): Promise<void> {
    const st = states.get(kind)!;
    let attempt = 0;
    let healthySince: number | null = null;
    while (!stop.signal.aborted) {
      try {
        if (st.resourceVersion === null) {
          st.resourceVersion = await list(kind, st, sink);
          if (st.installed === false) log.info("kind installed (CRD found)", { kind });
          st.installed = true;
          if (!st.synced) {
            st.synced = true;
            sink.synced(kind);
            log.info("initial list applied", { kind, resourceVersion: st.resourceVersion });
          }
        }
        const started = t.now();
        const n = await watchOnce(kind, st, sink, () => (healthySince ??= t.now()));
        if (stop.signal.aborted) break;
        if (n === 0 && t.now() - started < t.minWatchMs) throw new Error("watch ended at once with no event");
        hooks.onRestart?.(kind);
      } catch (e) {
        if (stop.signal.aborted) break;
        if (e instanceof Gone) {
          log.info("resourceVersion too old (410 Gone): relisting", { kind, resourceVersion: st.resourceVersion });
          st.resourceVersion = null;
          hooks.onRelist?.(kind);
          continue;
        }
        if (e instanceof NotInstalled) {
          // The CRD is absent: no objects of this kind, which does not hold back readiness.
          if (st.installed !== false) log.info("kind not installed (no CRD); checking again later", { kind, recheckMs: t.absentRecheckMs });
          st.installed = false;
          st.resourceVersion = null;
          sink.replace(kind, []);
          if (!st.synced) {
            st.synced = true;
            sink.synced(kind);
          }
          await sleep(t.absentRecheckMs, stop.signal);
          continue;
        }
        if (e instanceof Stalled) {
          // Resumed at once from the last resourceVersion (a 410 then relists): the silence
          // already waited minutes, and the stall timeout bounds how often this can happen.
          st.errors++;
          hooks.onError?.(kind, "watch stalled");
          log.warn("watch stalled: no event or bookmark, restarting it", { kind, resourceVersion: st.resourceVersion, silentMs: Math.round(e.silentMs), stallTimeoutMs: t.stallTimeoutMs });
          continue;
        }
        if (e instanceof TooLarge) {
          st.resourceVersion = null;
          hooks.onRelist?.(kind);
        }
        st.errors++;
        const reason = e instanceof Error ? e.message : String(e);
        hooks.onError?.(kind, reason);
        if (healthySince !== null && t.now() - healthySince >= t.backoffResetMs) attempt = 0;
        healthySince = null;
        const delay = backoffDelay(attempt++, t);
        log.warn("list/watch failed, retrying", { kind, err: reason, retryInMs: Math.round(delay) });
        await sleep(delay, stop.signal);
      }
    }
  }

  return {
    async start(given) {
      log.info("watching kinds", { kinds, namespace: o.config.watchNamespace ?? "(all)", server: client.server, ...(refs ? { byReference: ["ConfigMap"] } : {}) });
      const sink = refs === null ? given : refs.wrap(given);
      loops = kinds.map((k) => loop(k, sink));
    },
    async stop() {
      stop.abort();
      await Promise.allSettled(loops);
      await refs?.stop();
    },
    state: (kind) => states.get(kind) ?? { synced: false, resourceVersion: null, lists: 0, watches: 0, errors: 0, malformed: 0, invalid: 0 },
    nameConfigMaps: (keys) => refs?.setSettings(keys),
  };
}
