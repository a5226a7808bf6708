// The ConfigMaps that Ingresses name in auth-proxy-set-headers, watched one by one
// (docs/design.md "External authentication"): a list+watch per named object, the loop of
// kube/configmap.ts, started when the first Ingress names it and stopped when the last one
// stops naming it, so no other ConfigMap of the cluster is ever held (watching the kind whole
// would keep every namespace's kube-root-ca.crt and any large ConfigMap in memory).
//
// It sits between the list+watch source and the store's sink: it reads the Ingresses (and
// IngressNginxPolicies) going by to know which ConfigMaps are named, hands each named
// ConfigMap to the sink as a `ConfigMap` object, and says `synced("ConfigMap")` once the
// kinds that name them are synced and every ConfigMap named then has had its first list
// (an answer or a failure), so the first table does not answer 503 for a ConfigMap merely not
// read yet (docs/design.md "Control loop").
import type { Logger } from "../log/logger.ts";
import { objectKey, parseObject, type Kind } from "../model/kinds.ts";
import type { ConfigMap, Ingress } from "../model/schemas.ts";
import { authHeadersConfigMapKey } from "../model/secret-refs.ts";
import type { SourceSink, StoreEvent } from "../store/types.ts";
import type { KubeClient } from "./client.ts";
import { watchConfigMap, type ConfigMapWatch } from "./configmap.ts";
import type { WatchTimings } from "./watch-parts.ts";

/** The kinds whose objects name ConfigMaps (an IngressNginxPolicy carries an Ingress's annotations). */
const NAMING_KINDS: readonly Kind[] = ["Ingress", "IngressNginxPolicy"];

interface Watched {
  /** Resolves once the first list answered (or failed once: watchConfigMap keeps retrying). */
  readonly started: Promise<ConfigMapWatch>;
  settled: boolean;
  /** What the sink holds for it now. */
  held: ConfigMap | null;
}

export interface ConfigMapRefs {
  /** `sink`, with the named ConfigMaps watched and handed to it. */
  wrap(sink: SourceSink): SourceSink;
  /** Stops every watch. */
  stop(): Promise<void>;
  /** The ConfigMaps watched now (`namespace/name`). */
  watched(): string[];
}

export function createConfigMapRefs(o: {
  client: KubeClient;
  log: Logger;
  /** The kinds the source lists: a naming kind it does not list names nothing. */
  kinds: readonly Kind[];
  timings?: Partial<WatchTimings>;
}): ConfigMapRefs {
  const naming = NAMING_KINDS.filter((k) => o.kinds.includes(k));
  const log = o.log.child({ component: "auth-proxy-set-headers" });
  /** Owner (`Kind/namespace/name`) → the ConfigMap it names; ConfigMap → how many owners. */
  const refOf = new Map<string, string>();
  const count = new Map<string, number>();
  const watches = new Map<string, Watched>();
  const syncedKinds = new Set<Kind>();
  let announced = false;
  let stopped = false;
  let sink: SourceSink | null = null;

  const ownerKey = (kind: Kind, meta: { namespace?: string | undefined; name: string }) => `${kind}/${objectKey(meta)}`;

  function named(kind: Kind, object: { metadata: Ingress["metadata"]; spec?: unknown }): string | null {
    const annotations = kind === "IngressNginxPolicy" ? (object.spec as { annotations?: Record<string, string> } | undefined)?.annotations : object.metadata.annotations;
    return authHeadersConfigMapKey(annotations, object.metadata.namespace ?? "");
  }

  function setRef(owner: string, key: string | null): void {
    const before = refOf.get(owner) ?? null;
    if (before === key) return;
    if (before !== null) {
      refOf.delete(owner);
      const n = (count.get(before) ?? 1) - 1;
      if (n > 0) count.set(before, n);
      else {
        count.delete(before);
        unwatch(before);
      }
    }
    if (key !== null) {
      refOf.set(owner, key);
      count.set(key, (count.get(key) ?? 0) + 1);
      if (!watches.has(key)) watch(key);
    }
  }

  function hand(key: string, w: Watched, raw: unknown | null): void {
    if (stopped || watches.get(key) !== w || sink === null) return;
    let next: ConfigMap | null = null;
    if (raw !== null) {
      const p = parseObject("ConfigMap", raw);
      // The API server validates `data` as text; a version that is not is treated as absent,
      // which refuses the Ingresses naming it (503) rather than ask without their headers.
      if (p.ok) next = p.object;
      else log.warn("ConfigMap not read: invalid object", { configMap: key, err: p.diagnostic.message });
    }
    const prev = w.held;
    w.held = next;
    if (next !== null) sink.apply({ type: prev === null ? "ADDED" : "MODIFIED", kind: "ConfigMap", object: next } as StoreEvent);
    else if (prev !== null) sink.apply({ type: "DELETED", kind: "ConfigMap", object: prev } as StoreEvent);
  }

  function watch(key: string): void {
    const slash = key.indexOf("/");
    const ref = { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
    let w: Watched;
    const started = watchConfigMap({
      client: o.client,
      ref,
      log,
      onObject: (raw) => hand(key, w, raw),
      ...(o.timings ? { timings: o.timings } : {}),
    });
    w = { started, settled: false, held: null };
    watches.set(key, w);
    log.debug("watching ConfigMap", { configMap: key });
    void started.then(
      (handle) => {
        w.settled = true;
        // Named no longer (or stopping) while its first list was on the way.
        if (watches.get(key) !== w) void handle.stop();
        else announce();
      },
      (err) => {
        // watchConfigMap settles on its first failure instead of throwing; fail closed anyway.
        w.settled = true;
        log.warn("ConfigMap watch not started", { configMap: key, err: err instanceof Error ? err.message : String(err) });
        announce();
      },
    );
  }

  function unwatch(key: string): void {
    const w = watches.get(key);
    if (w === undefined) return;
    watches.delete(key);
    log.debug("ConfigMap named no longer: watch stopped", { configMap: key });
    if (w.settled) void w.started.then((h) => h.stop(), () => undefined);
    if (w.held !== null && sink !== null) sink.apply({ type: "DELETED", kind: "ConfigMap", object: w.held } as StoreEvent);
    w.held = null;
  }

  /** `synced("ConfigMap")` once the naming kinds are synced and every named ConfigMap was listed once. */
  function announce(): void {
    if (announced || stopped || sink === null) return;
    if (!naming.every((k) => syncedKinds.has(k))) return;
    for (const w of watches.values()) if (!w.settled) return;
    announced = true;
    sink.synced("ConfigMap");
  }

  return {
    wrap(inner) {
      sink = inner;
      const wrapped: SourceSink = {
        apply(event) {
          inner.apply(event);
          if (!naming.includes(event.kind)) return;
          const owner = ownerKey(event.kind, event.object.metadata);
          setRef(owner, event.type === "DELETED" ? null : named(event.kind, event.object as never));
        },
        replace(kind, objects) {
          inner.replace(kind, objects);
          if (!naming.includes(kind)) return;
          const next = new Map<string, string | null>();
          for (const obj of objects) next.set(ownerKey(kind, obj.metadata), named(kind, obj as never));
          // Owners of this kind gone from the list name nothing now.
          for (const owner of [...refOf.keys()]) if (owner.startsWith(`${kind}/`) && !next.has(owner)) setRef(owner, null);
          for (const [owner, key] of next) setRef(owner, key);
        },
        synced(kind) {
          inner.synced(kind);
          syncedKinds.add(kind);
          announce();
        },
      };
      announce(); // no naming kind listed: nothing to wait for
      return wrapped;
    },
    async stop() {
      stopped = true;
      const all = [...watches.values()];
      watches.clear();
      await Promise.allSettled(all.map((w) => w.started.then((h) => h.stop())));
    },
    watched: () => [...watches.keys()].sort(),
  };
}
