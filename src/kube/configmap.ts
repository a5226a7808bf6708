// One ConfigMap, listed and watched by name (--nginx-configmap): the list+watch loop of
// watch.ts for a single object outside the store's kinds. A list with
// fieldSelector=metadata.name=NAME gives the object (or none) and a resourceVersion; the watch
// from it reports each change; 410 Gone lists again; a watch silent past the stall timeout is
// restarted at once; any other failure retries with back-off. Kubernetes API concepts,
// "Efficient detection of changes"; docs/design.md "API server failures".
import * as v from "valibot";
import type { NamespacedName } from "../config/types.ts";
import type { Logger } from "../log/logger.ts";
import { ObjectMetaSchema } from "../model/schemas.ts";
import { backoffDelay, sleep } from "./backoff.ts";
import { apiError, type KubeClient } from "./client.ts";
import { readNdjson } from "./ndjson.ts";
import { assertDeclared } from "./permissions.ts";
import { DEFAULT_WATCH_TIMINGS, Gone, parseWatchLine, ResourceVersionSchema, resumeAfter, Stalled, TooLarge, watchRefused, watchTimers, type WatchTimings } from "./watch-parts.ts";

export interface ConfigMapWatch {
  stop(): Promise<void>;
}

const byNameQuery = (ref: NamespacedName, extra: Record<string, string>): string =>
  `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/configmaps?${new URLSearchParams({ fieldSelector: `metadata.name=${ref.name}`, ...extra })}`;

/**
 * One list of one ConfigMap by name: the raw object (null: there is none) and the list's
 * resourceVersion, the point from which a watch would follow it. Throws on an API error or an
 * answer that is not a list.
 */
export async function listConfigMapByName(client: KubeClient, ref: NamespacedName, signal: AbortSignal): Promise<{ item: unknown | null; resourceVersion: string }> {
  const path = byNameQuery(ref, {});
  const res = await client.request("GET", path, { signal });
  if (!res.ok) throw await apiError(res, "GET", path, client.server);
  const body = (await res.json()) as { metadata?: { resourceVersion?: unknown }; items?: unknown };
  if (!Array.isArray(body.items) || !v.is(ResourceVersionSchema, body.metadata?.resourceVersion)) throw new Error(`list ${path}: not a list`);
  return { item: (body.items[0] as unknown) ?? null, resourceVersion: body.metadata.resourceVersion };
}

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
  const query = (extra: Record<string, string>) => byNameQuery(ref, extra);
  let first: (() => void) | null = null;
  const firstDone = new Promise<void>((resolve) => (first = resolve));
  const settle = () => {
    first?.();
    first = null;
  };

  /** Where the watch resumes: the last list's version, moved on by each well-formed event (watch-parts.ts resumeAfter). */
  let rv: string | null = null;

  /** The watch asked for this one object: an event about any other is not the server's answer. */
  const isOurs = (obj: object): boolean => {
    const meta = (obj as { metadata?: unknown }).metadata;
    return v.is(ObjectMetaSchema, meta) && meta.name === ref.name && (meta.namespace === undefined || meta.namespace === ref.namespace);
  };

  const malformed = (why: string) => log.warn("malformed watch line skipped", { kind: "ConfigMap", namespace: ref.namespace, name: ref.name, err: why });

  async function list(): Promise<string> {
    const got = await listConfigMapByName(client, ref, AbortSignal.any([stop.signal, AbortSignal.timeout(t.requestTimeoutMs)]));
    o.onObject(got.item);
    return got.resourceVersion;
  }

  /** Follows one watch from `from`, moving `rv` as events come; throws Gone on 410 and Stalled on silence. */
  async function watchOnce(from: string): Promise<void> {
    const timeoutS = t.watchTimeoutSeconds();
    const path = query({ watch: "1", resourceVersion: from, allowWatchBookmarks: "true", timeoutSeconds: String(timeoutS) });
    // The same deadlines and stall watchdog as the store's watches (watch-parts.ts watchTimers).
    const timers = watchTimers(t, timeoutS, stop.signal);
    try {
      const res = await client.stream(path, { signal: timers.signal });
      if (!res.ok || !res.body) throw await watchRefused(res, path, client.server);
      timers.connected();
      for await (const item of readNdjson(res.body, t.maxLineBytes)) {
        const ev = "line" in item ? parseWatchLine(item.line) : null;
        if (ev === null) {
          malformed("tooLong" in item ? `line of ${item.tooLong} bytes over the limit` : "not a watch event");
          continue;
        }
        if (ev.type === "ERROR") {
          timers.heard();
          if ((ev.object as { code?: unknown }).code === 410) throw new Gone();
          throw new Error(`watch ERROR event: ${String((ev.object as { message?: unknown }).message ?? "")}`.slice(0, 300));
        }
        // Never back, never to a version the API server would refuse (watch-parts.ts resumeAfter);
        // and never another object's settings, or none, from a line about something else.
        const next = resumeAfter(rv, ev);
        if (!next.ok) {
          malformed(next.why);
          continue;
        }
        if (ev.type !== "BOOKMARK") {
          if (!isOurs(ev.object)) {
            malformed("not the watched ConfigMap");
            continue;
          }
          o.onObject(ev.type === "DELETED" ? null : ev.object);
        }
        timers.heard();
        if (next.rv !== null) rv = next.rv;
      }
      // An abort may also surface as the end of the stream: still a stall, not a clean end.
      if (timers.stalled) throw timers.stalled;
    } catch (e) {
      throw timers.stalled ?? e;
    } finally {
      timers.dispose();
    }
  }

  const loop = (async () => {
    let attempt = 0;
    while (!stop.signal.aborted) {
      try {
        if (rv === null) {
          rv = await list();
          settle();
          attempt = 0;
        }
        const started = t.now();
        await watchOnce(rv);
        // A watch that ends at once must not turn into a busy loop (watch.ts does the same).
        if (t.now() - started < t.minWatchMs) await sleep(backoffDelay(attempt++, t), stop.signal);
      } catch (e) {
        if (stop.signal.aborted) break;
        if (e instanceof Gone) {
          rv = null;
          continue;
        }
        if (e instanceof Stalled) {
          // Resumed at once from the last resourceVersion, as watch.ts does (a 410 then relists).
          log.warn("watch stalled: no event or bookmark, restarting it", { kind: "ConfigMap", namespace: ref.namespace, name: ref.name, resourceVersion: rv, silentMs: Math.round(e.silentMs), stallTimeoutMs: t.stallTimeoutMs });
          continue;
        }
        settle();
        // A version the API server has not reached lists afresh after the back-off, as the
        // store's watches do (watch-parts.ts watchRefused).
        if (e instanceof TooLarge) rv = null;
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
