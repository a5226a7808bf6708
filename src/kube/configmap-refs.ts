// The ConfigMaps that Ingresses name in auth-proxy-set-headers and custom-headers (docs/design.md "External
// authentication", "Watching"): only the named ones are ever held, and the API connections
// they cost are bounded whatever the Ingresses say.
//
// - Up to `maxByName` named ConfigMaps: a list+watch per named object, the loop of
//   kube/configmap.ts, started when the first Ingress names it and stopped when the last one
//   stops naming it (watching the kind whole would pull every namespace's kube-root-ca.crt and
//   any large ConfigMap through Portico for a rarely used annotation).
// - Above it: ONE list+watch of the ConfigMaps of the watched namespaces (watch.ts's loop with
//   `keep`), which keeps the named ones and drops every other as it arrives; a ConfigMap named
//   later is read with one list by name (one at a time, so a burst of new names costs no more
//   connections). When the count falls to half of `maxByName`, the by-name watches come back.
//   Tenants creating Ingresses could otherwise open one API server watch each.
//
// A switch never loses what the sink holds: the watches of the old way run until the new way
// has answered (the collection's first list; every by-name watch's first list), and a ConfigMap
// not answered yet keeps the version the sink holds.
//
// It sits between the list+watch source and the store's sink: it reads the Ingresses (and
// IngressNginxPolicies) going by to know which ConfigMaps are named, hands each named
// ConfigMap to the sink as a `ConfigMap` object, and says `synced("ConfigMap")` once the
// kinds that name them are synced and every ConfigMap named then has had its first answer
// (or a failure), so the first table does not answer 503 for a ConfigMap merely not read yet
// (docs/design.md "Control loop").
import type { Logger } from "../log/logger.ts";
import { objectKey, parseObject, type Kind } from "../model/kinds.ts";
import type { ConfigMap, Ingress } from "../model/schemas.ts";
import { authHeadersConfigMapKey, customHeadersConfigMapKey, gatewayCaConfigMapKeys, MAX_GATEWAY_CA_CONFIGMAPS } from "../model/secret-refs.ts";
import type { Source, SourceSink, StoreEvent } from "../store/types.ts";
import { backoffDelay, sleep } from "./backoff.ts";
import type { KubeClient } from "./client.ts";
import { listConfigMapByName, watchConfigMap, type ConfigMapWatch } from "./configmap.ts";
import { DEFAULT_WATCH_TIMINGS, ResourceVersionSchema, type WatchTimings } from "./watch-parts.ts";
import * as v from "valibot";

/**
 * The kinds whose objects name ConfigMaps (an IngressNginxPolicy carries an Ingress's
 * annotations; a Gateway's spec.tls.frontend names client certificate CAs).
 */
const NAMING_KINDS: readonly Kind[] = ["Ingress", "IngressNginxPolicy", "Gateway"];

/**
 * Named ConfigMaps watched one by one at most. Clusters name a handful (one per auth service
 * or tenant); each is one long-lived API server connection. Above it, one collection watch.
 */
export const MAX_BY_NAME = 16;

/** A list+watch of every ConfigMap of the watched namespaces, keeping what `keep` accepts. */
export type WatchAll = (o: {
  keep(meta: { namespace?: string | undefined; name: string }): boolean;
  /** A list begins: a name added after this may have been dropped from its pages. */
  onListStart(): void;
  /** A list or watch failed (the loop retries with back-off). */
  onError(reason: string): void;
  /** A kept ConfigMap's latest version is invalid (true) or no longer (false). */
  onInvalid(key: string, invalid: boolean): void;
}) => Pick<Source, "start" | "stop">;

interface ByName {
  /** Resolves once the first list answered (or failed once: watchConfigMap keeps retrying). */
  readonly started: Promise<ConfigMapWatch>;
  settled: boolean;
  /** It has reported the object (or its absence) at least once: `latest` is its answer. */
  answered: boolean;
  latest: ConfigMap | null;
}

interface Collection {
  readonly source: Pick<Source, "start" | "stop">;
  readonly stop: AbortController;
  /** Its first list was applied: it answers for every named key not `pending`. */
  listed: boolean;
  /** A list or watch failed before the first list: for the first table, its keys count as tried. */
  failed: boolean;
  /** The named ConfigMaps it holds (only named ones are ever kept). */
  objects: Map<string, ConfigMap>;
  /** Named after its list: read with one list by name each (`readPending`), in this order. */
  pending: Set<string>;
  /** Named since the current list began: absent from it, such a key is read by name. */
  namedDuringList: Set<string>;
  /** Pending keys whose read failed once (they count as tried for the first table). */
  tried: Set<string>;
  /** A read's list resourceVersion per key: a watch event at or below it is older than the read. */
  floor: Map<string, bigint>;
  fetching: boolean;
  /** Bumped by each list, so a read from before it is not applied over it. */
  generation: number;
}

export interface ConfigMapRefs {
  /** `sink`, with the named ConfigMaps watched and handed to it. */
  wrap(sink: SourceSink): SourceSink;
  /** Stops every watch. */
  stop(): Promise<void>;
  /** The ConfigMaps watched by name now (`namespace/name`). */
  watched(): string[];
  /** How they are watched: one by one, or through one collection watch. */
  mode(): "byName" | "collection";
  /** The ConfigMaps the settings name (add-headers, proxy-set-headers), watched as an Ingress's are. */
  setSettings(keys: readonly string[]): void;
}

export function createConfigMapRefs(o: {
  client: KubeClient;
  log: Logger;
  /** The kinds the source lists: a naming kind it does not list names nothing. */
  kinds: readonly Kind[];
  timings?: Partial<WatchTimings>;
  /** The collection watch (watch.ts's loop with `keep`; passed in, as watch.ts creates this module). */
  watchAll: WatchAll;
  maxByName?: number;
  /** The ConfigMaps the settings name at start (setSettings later). */
  settings?: readonly string[];
}): ConfigMapRefs {
  const t: WatchTimings = { ...DEFAULT_WATCH_TIMINGS, ...o.timings };
  const maxByName = o.maxByName ?? MAX_BY_NAME;
  // Hysteresis: back to by-name watches only at half the bound, so a count moving around it
  // does not relist every ConfigMap of the cluster at each step.
  const backAt = Math.floor(maxByName / 2);
  const naming = NAMING_KINDS.filter((k) => o.kinds.includes(k));
  const log = o.log.child({ component: "auth-proxy-set-headers" });
  /** Owner (`Kind/namespace/name`) → the ConfigMap it names; ConfigMap → how many owners. */
  const refOf = new Map<string, string>();
  const count = new Map<string, number>();
  const byName = new Map<string, ByName>();
  /** What the sink holds, per named key. */
  const held = new Map<string, ConfigMap>();
  let coll: Collection | null = null;
  let mode: "byName" | "collection" = "byName";
  const syncedKinds = new Set<Kind>();
  let announced = false;
  let stopped = false;
  let sink: SourceSink | null = null;

  const ownerKey = (kind: Kind, meta: { namespace?: string | undefined; name: string }) => `${kind}/${objectKey(meta)}`;
  const refOfKey = (key: string) => {
    const slash = key.indexOf("/");
    return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
  };

  /**
   * What an object names, one owner entry per annotation (`<owner>#auth`: auth-proxy-set-headers,
   * `<owner>#custom`: custom-headers), so each owner entry names at most one ConfigMap.
   */
  function named(kind: Kind, object: { metadata: Ingress["metadata"]; spec?: unknown }): readonly [string, string | null][] {
    if (kind === "Gateway") {
      // A fixed set of owner entries (`<owner>#ca<i>`), each naming at most one ConfigMap, so
      // an update that names fewer clears the rest.
      const keys = gatewayCaConfigMapKeys(object.spec, object.metadata.namespace ?? "default");
      const out: [string, string | null][] = [];
      for (let i = 0; i < MAX_GATEWAY_CA_CONFIGMAPS; i++) out.push([`${ownerKey(kind, object.metadata)}#ca${i}`, keys[i] ?? null]);
      return out;
    }
    const annotations = kind === "IngressNginxPolicy" ? (object.spec as { annotations?: Record<string, string> } | undefined)?.annotations : object.metadata.annotations;
    const owner = ownerKey(kind, object.metadata);
    const ns = object.metadata.namespace ?? "";
    return [[`${owner}#auth`, authHeadersConfigMapKey(annotations, ns)], [`${owner}#custom`, customHeadersConfigMapKey(annotations, ns)]];
  }

  /** A raw object as a ConfigMap, or null (absent, or invalid: which refuses its Ingresses, 503). */
  function parse(key: string, raw: unknown | null): ConfigMap | null {
    if (raw === null) return null;
    const p = parseObject("ConfigMap", raw);
    // The API server validates `data` as text; a version that is not is treated as absent,
    // which refuses the Ingresses naming it (503) rather than ask without their headers.
    if (p.ok) return p.object;
    log.warn("ConfigMap not read: invalid object", { configMap: key, err: p.diagnostic.message });
    return null;
  }

  /**
   * The answer for a named key: a by-name watch's once it answered, else the collection's once
   * it listed and the key is not waiting for its read; undefined: none yet.
   */
  function answer(key: string): ConfigMap | null | undefined {
    const w = byName.get(key);
    if (w?.answered) return w.latest;
    if (coll?.listed && !coll.pending.has(key)) return coll.objects.get(key) ?? null;
    return undefined;
  }

  /** Hands the sink the key's answer when it changed; with no answer yet, the sink keeps what it has. */
  function sync(key: string): void {
    if (stopped || sink === null || !count.has(key)) return;
    const next = answer(key);
    if (next === undefined) return;
    const prev = held.get(key) ?? null;
    if (prev === next) return;
    if (next !== null) {
      held.set(key, next);
      sink.apply({ type: prev === null ? "ADDED" : "MODIFIED", kind: "ConfigMap", object: next } as StoreEvent);
    } else if (prev !== null) {
      held.delete(key);
      sink.apply({ type: "DELETED", kind: "ConfigMap", object: prev } as StoreEvent);
    }
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
        dropKey(before);
      }
    }
    if (key !== null) {
      refOf.set(owner, key);
      const n = (count.get(key) ?? 0) + 1;
      count.set(key, n);
      if (n === 1) addKey(key);
    }
  }

  /** A ConfigMap named now and not before. */
  function addKey(key: string): void {
    if (mode === "byName" && count.size > maxByName) {
      mode = "collection";
      if (coll === null) {
        // Counted already: the new collection's first list keeps it.
        startCollection();
        return;
      }
      // Else the collection still running from before answers it as below.
    }
    // The collection, while it runs, answers for every named key: from its list, or read by
    // name once listed (a list under way may have dropped it from a page already read).
    if (coll !== null) {
      coll.namedDuringList.add(key);
      if (coll.listed) {
        coll.pending.add(key);
        void readPending(coll);
      }
    }
    if (mode === "byName") startByName(key);
  }

  /** A ConfigMap named no more: its watch stops and its object leaves the sink. */
  function dropKey(key: string): void {
    stopByName(key);
    if (coll !== null) {
      coll.objects.delete(key);
      coll.pending.delete(key);
      coll.tried.delete(key);
      coll.floor.delete(key);
    }
    const prev = held.get(key);
    held.delete(key);
    if (prev !== undefined && sink !== null && !stopped) sink.apply({ type: "DELETED", kind: "ConfigMap", object: prev } as StoreEvent);
  }

  function startByName(key: string): void {
    if (byName.has(key) || stopped) return;
    let w: ByName;
    const started = watchConfigMap({
      client: o.client,
      ref: refOfKey(key),
      log,
      onObject: (raw) => {
        if (stopped || byName.get(key) !== w) return;
        w.latest = parse(key, raw);
        w.answered = true;
        sync(key);
        settle();
      },
      ...(o.timings ? { timings: o.timings } : {}),
    });
    w = { started, settled: false, answered: false, latest: null };
    byName.set(key, w);
    log.debug("watching ConfigMap", { configMap: key });
    void started.then(
      (handle) => {
        w.settled = true;
        // Named no longer (or stopping) while its first list was on the way.
        if (byName.get(key) !== w) void handle.stop();
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

  function stopByName(key: string): void {
    const w = byName.get(key);
    if (w === undefined) return;
    byName.delete(key);
    log.debug("ConfigMap watch stopped", { configMap: key });
    if (w.settled) void w.started.then((h) => h.stop(), () => undefined);
  }

  function startCollection(): void {
    if (coll !== null || stopped || sink === null) return;
    let c: Collection;
    const source = o.watchAll({
      keep: (meta) => count.has(objectKey(meta)),
      onListStart: () => {
        if (coll === c) c.namedDuringList.clear();
      },
      onError: () => {
        if (coll !== c || c.listed) return;
        c.failed = true;
        announce();
      },
      onInvalid: (key, invalid) => {
        // An invalid version is treated as absent, as a by-name watch does (parse above).
        if (coll !== c || !invalid || !count.has(key)) return;
        c.objects.delete(key);
        c.pending.delete(key);
        sync(key);
      },
    });
    c = { source, stop: new AbortController(), listed: false, failed: false, objects: new Map(), pending: new Set(), namedDuringList: new Set(), tried: new Set(), floor: new Map(), fetching: false, generation: 0 };
    coll = c;
    const inner: SourceSink = {
      replace(_kind, objects) {
        if (coll !== c) return;
        c.objects = new Map();
        for (const obj of objects as readonly ConfigMap[]) {
          const key = objectKey(obj.metadata);
          if (count.has(key)) c.objects.set(key, obj);
        }
        c.listed = true;
        c.generation++;
        c.floor.clear();
        // The list answers every key named before it began; one named since and absent from
        // it may have been on a page read before: that one is read by name.
        for (const key of count.keys()) {
          if (c.objects.has(key) || !c.namedDuringList.has(key)) {
            c.pending.delete(key);
            c.tried.delete(key);
          } else c.pending.add(key);
        }
        c.namedDuringList.clear();
        settle();
        for (const key of count.keys()) sync(key);
        announce();
        if (c.pending.size > 0) void readPending(c);
      },
      apply(event) {
        if (coll !== c || !c.listed) return;
        const key = objectKey(event.object.metadata);
        if (!count.has(key)) return;
        const floor = c.floor.get(key);
        const rv = event.object.metadata.resourceVersion;
        // Older than the read that answered for the key: the watch is behind, it will catch up.
        if (floor !== undefined && v.is(ResourceVersionSchema, rv) && BigInt(rv) <= floor) return;
        if (event.type === "DELETED") c.objects.delete(key);
        else c.objects.set(key, event.object as ConfigMap);
        // An event answers a key waiting for its read as well (the read, if it comes, is dropped).
        c.pending.delete(key);
        sync(key);
        announce();
      },
      synced() {},
    };
    log.info("many ConfigMaps named: watching the ConfigMaps of the watched namespaces as one collection, keeping the named ones", { named: count.size, maxByName });
    void source.start(inner);
  }

  async function stopCollection(): Promise<void> {
    const c = coll;
    if (c === null) return;
    coll = null;
    c.stop.abort();
    await c.source.stop();
  }

  /**
   * Reads the collection's pending keys one at a time, by name: a key named after its list.
   * A failed read is retried after the back-off, behind the other pending keys.
   */
  async function readPending(c: Collection): Promise<void> {
    if (c.fetching) return;
    c.fetching = true;
    let attempt = 0;
    try {
      while (!stopped && coll === c && c.pending.size > 0) {
        const key = c.pending.values().next().value!;
        const generation = c.generation;
        try {
          const got = await listConfigMapByName(o.client, refOfKey(key), AbortSignal.any([c.stop.signal, AbortSignal.timeout(t.requestTimeoutMs)]));
          attempt = 0;
          if (coll !== c || c.generation !== generation || !c.pending.has(key)) continue;
          c.pending.delete(key);
          c.tried.delete(key);
          c.floor.set(key, BigInt(got.resourceVersion));
          const obj = parse(key, got.item);
          if (obj === null) c.objects.delete(key);
          else c.objects.set(key, obj);
          sync(key);
          announce();
        } catch (e) {
          if (stopped || coll !== c) break;
          c.tried.add(key);
          if (c.pending.delete(key)) c.pending.add(key);
          announce();
          const delay = backoffDelay(attempt++, t);
          log.warn("ConfigMap read failed, retrying", { configMap: key, err: e instanceof Error ? e.message : String(e), retryInMs: Math.round(delay) });
          await sleep(delay, c.stop.signal);
        }
      }
    } finally {
      c.fetching = false;
    }
  }

  /** After a change of names: the way they are watched, and the hand-over between the two. */
  function reconcile(): void {
    if (stopped || sink === null) return;
    if (mode === "byName" && count.size > maxByName) {
      mode = "collection";
      startCollection();
    } else if (mode === "collection" && count.size <= backAt) {
      mode = "byName";
      log.info("few ConfigMaps named: watching them one by one again", { named: count.size, maxByName });
      for (const key of count.keys()) startByName(key);
    }
    settle();
  }

  /** Stops the old way's watches once the new way answers every named key. */
  function settle(): void {
    if (stopped) return;
    if (mode === "collection" && coll?.listed && byName.size > 0) {
      for (const key of [...byName.keys()]) {
        stopByName(key);
        sync(key);
      }
    }
    if (mode === "byName" && coll !== null && [...count.keys()].every((k) => byName.get(k)?.answered === true)) {
      log.info("ConfigMap collection watch stopped: each named ConfigMap is watched by name", { named: count.size });
      void stopCollection();
    }
  }

  /** Has the key had its first answer, or a failure (then it counts as missing, 503)? */
  function tried(key: string): boolean {
    if (byName.get(key)?.settled) return true;
    if (coll === null) return false;
    if (coll.listed) return !coll.pending.has(key) || coll.tried.has(key);
    return coll.failed;
  }

  /** `synced("ConfigMap")` once the naming kinds are synced and every named ConfigMap was tried once. */
  function announce(): void {
    if (announced || stopped || sink === null) return;
    if (!naming.every((k) => syncedKinds.has(k))) return;
    for (const key of count.keys()) if (!tried(key)) return;
    announced = true;
    sink.synced("ConfigMap");
  }

  return {
    wrap(inner) {
      sink = inner;
      setSettings(o.settings ?? []);
      const wrapped: SourceSink = {
        apply(event) {
          inner.apply(event);
          if (!naming.includes(event.kind)) return;
          for (const [owner, key] of named(event.kind, event.object as never)) setRef(owner, event.type === "DELETED" ? null : key);
          reconcile();
          announce();
        },
        replace(kind, objects) {
          inner.replace(kind, objects);
          if (!naming.includes(kind)) return;
          // The whole list is counted before any watch starts, so a cluster that names many
          // ConfigMaps goes to the collection watch at once rather than through a watch each.
          const next = new Map<string, string | null>();
          for (const obj of objects) for (const [owner, key] of named(kind, obj as never)) next.set(owner, key);
          const many = mode === "byName" && projectedCount(kind, next) > maxByName;
          if (many) mode = "collection";
          // Owners of this kind gone from the list name nothing now.
          for (const owner of [...refOf.keys()]) if (owner.startsWith(`${kind}/`) && !next.has(owner)) setRef(owner, null);
          for (const [owner, key] of next) setRef(owner, key);
          // Started once every name is counted: its list keeps them all.
          if (many) startCollection();
          reconcile();
          announce();
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
      const all = [...byName.values()];
      byName.clear();
      await Promise.allSettled([...all.map((w) => w.started.then((h) => h.stop())), stopCollection()]);
    },
    watched: () => [...byName.keys()].sort(),
    mode: () => mode,
    setSettings(keys) {
      setSettings(keys);
      if (sink !== null) {
        reconcile();
        announce();
      }
    },
  };

  /** One owner entry per setting (`Settings/#0`, `Settings/#1`), as an Ingress has one per annotation. */
  function setSettings(keys: readonly string[]): void {
    for (let i = 0; i < 2; i++) setRef(`Settings/#${i}`, keys[i] ?? null);
  }

  /** How many ConfigMaps would be named once `kind`'s owners are `next`. */
  function projectedCount(kind: Kind, next: ReadonlyMap<string, string | null>): number {
    const keys = new Set<string>();
    for (const [owner, key] of refOf) if (!owner.startsWith(`${kind}/`)) keys.add(key);
    for (const key of next.values()) if (key !== null) keys.add(key);
    return keys.size;
  }
}
