// One ConfigMap, listed and watched by name (--nginx-configmap): the list+watch loop of
// watch.ts for a single object outside the store's kinds. A list with
// fieldSelector=metadata.name=NAME gives the object (or none) and a resourceVersion; the watch
// from it reports each change; 410 Gone lists again; any other failure retries with back-off.
// Kubernetes API concepts, "Efficient detection of changes".
import type { NamespacedName } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import { backoffDelay, sleep } from "./backoff.ts";
import { apiError, type KubeClient } from "./client.ts";
import { readNdjson } from "./ndjson.ts";
import { assertDeclared } from "./permissions.ts";
import { DEFAULT_WATCH_TIMINGS, parseWatchLine, type WatchTimings } from "./watch-parts.ts";

export interface ConfigMapWatch {
  stop(): Promise<void>;
}

class Gone extends Error {}

/**
 * Calls `onObject` with the raw object (null: there is none) after each list and each change.
 * Resolves once the first list has been reported (or failed once: the caller serves without it
 * and the loop keeps trying).
 */
export async function watchConfigMap(o: {
  client: KubeClient;
  ref: NamespacedName;
  log: Logger;
  onObject: (raw: unknown | null) => void;
  timings?: Partial<WatchTimings>;
}): Promise<ConfigMapWatch> {
  for (const verb of ["list", "watch"]) assertDeclared("", "configmaps", verb);
  const t: WatchTimings = { ...DEFAULT_WATCH_TIMINGS, ...o.timings };
  const { client, ref, log } = o;
  const stop = new AbortController();
  const collection = `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/configmaps`;
  const query = (extra: Record<string, string>) => `${collection}?${new URLSearchParams({ fieldSelector: `metadata.name=${ref.name}`, ...extra })}`;
  let first: (() => void) | null = null;
  const firstDone = new Promise<void>((resolve) => (first = resolve));
  const settle = () => {
    first?.();
    first = null;
  };

  async function list(): Promise<string> {
    const path = query({});
    const res = await client.request("GET", path, { signal: AbortSignal.any([stop.signal, AbortSignal.timeout(t.requestTimeoutMs)]) });
    if (!res.ok) throw await apiError(res, "GET", path, client.server);
    const body = (await res.json()) as { metadata?: { resourceVersion?: unknown }; items?: unknown };
    if (!Array.isArray(body.items) || typeof body.metadata?.resourceVersion !== "string") throw new Error(`list ${path}: not a list`);
    o.onObject(body.items[0] ?? null);
    return body.metadata.resourceVersion;
  }

  async function watchOnce(rv: string): Promise<string> {
    const timeoutS = t.watchTimeoutSeconds();
    const path = query({ watch: "1", resourceVersion: rv, allowWatchBookmarks: "true", timeoutSeconds: String(timeoutS) });
    const ac = new AbortController();
    const deadline = setTimeout(() => ac.abort(new Error("watch outlived timeoutSeconds")), timeoutS * 1000 + t.watchGraceMs);
    try {
      const res = await client.stream(path, { signal: AbortSignal.any([stop.signal, ac.signal]) });
      if (res.status === 410) {
        await res.body?.cancel();
        throw new Gone();
      }
      if (!res.ok || !res.body) throw await apiError(res, "GET", path, client.server);
      for await (const item of readNdjson(res.body, t.maxLineBytes)) {
        const ev = "line" in item ? parseWatchLine(item.line) : null;
        if (ev === null) continue;
        const next = (ev.object as { metadata?: { resourceVersion?: unknown } }).metadata?.resourceVersion;
        if (ev.type === "ERROR") {
          if ((ev.object as { code?: unknown }).code === 410) throw new Gone();
          throw new Error(`watch ERROR event: ${String((ev.object as { message?: unknown }).message ?? "")}`.slice(0, 300));
        }
        if (ev.type !== "BOOKMARK") o.onObject(ev.type === "DELETED" ? null : ev.object);
        if (typeof next === "string" && next !== "") rv = next;
      }
      return rv;
    } finally {
      clearTimeout(deadline);
      ac.abort();
    }
  }

  const loop = (async () => {
    let rv: string | null = null;
    let attempt = 0;
    while (!stop.signal.aborted) {
      try {
        if (rv === null) {
          rv = await list();
          settle();
          attempt = 0;
        }
        const started = t.now();
        rv = await watchOnce(rv);
        // A watch that ends at once must not turn into a busy loop (watch.ts does the same).
        if (t.now() - started < t.minWatchMs) await sleep(backoffDelay(attempt++, t), stop.signal);
      } catch (e) {
        if (stop.signal.aborted) break;
        if (e instanceof Gone) {
          rv = null;
          continue;
        }
        settle();
        const delay = backoffDelay(attempt++, t);
        log.warn("ConfigMap list/watch failed, retrying", { kind: "ConfigMap", namespace: ref.namespace, name: ref.name, err: e instanceof Error ? e.message : String(e), retryInMs: Math.round(delay) });
        await sleep(delay, stop.signal);
      }
    }
  })();
  await firstDone;
  return {
    async stop() {
      stop.abort();
      await loop;
    },
  };
}
