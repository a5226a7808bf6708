// Shared pieces of the list+watch loop: metrics hooks, injectable timings, API paths, and
// the parsing of one watch line.
import { KIND_API, UNWATCHED_SECRET_TYPES, type Kind } from "../model/kinds.ts";
import { DEFAULT_MAX_LINE_BYTES } from "./ndjson.ts";

export interface SourceHooks {
  onEvent?(kind: Kind, type: string): void;
  /** A watch ended cleanly and was resumed from its resourceVersion. */
  onRestart?(kind: Kind): void;
  onRelist?(kind: Kind): void;
  onError?(kind: Kind, reason: string): void;
  onMalformed?(kind: Kind): void;
  onInvalid?(kind: Kind): void;
}

export interface WatchTimings {
  backoffInitialMs: number;
  backoffMaxMs: number;
  /** A watch healthy this long resets the back-off. */
  backoffResetMs: number;
  /** timeoutSeconds of each watch; kube recommends spreading them (client-go: 5-10 min). */
  watchTimeoutSeconds(): number;
  /** Extra time past timeoutSeconds before we abort a silent stream ourselves. */
  watchGraceMs: number;
  /**
   * A connected watch with no event and no bookmark for this long is stalled: aborted and
   * resumed from its resourceVersion (docs/design.md "API server failures").
   */
  stallTimeoutMs: number;
  /** Deadline for a list page or for a watch's response headers. */
  requestTimeoutMs: number;
  /** A clean end sooner than this with no event counts as an error (no hot loop). */
  minWatchMs: number;
  pageSize: number;
  maxLineBytes: number;
  random(): number;
  now(): number;
  /**
   * How often a kind whose CRD is not installed (its list answered 404) is listed again, so
   * Gateway API objects are picked up once the user installs the CRDs.
   */
  absentRecheckMs: number;
}

export const DEFAULT_WATCH_TIMINGS: WatchTimings = {
  backoffInitialMs: 800,
  backoffMaxMs: 30_000,
  backoffResetMs: 120_000,
  watchTimeoutSeconds: () => 300 + Math.floor(Math.random() * 301),
  watchGraceMs: 30_000,
  // kube-apiserver's watch cache sends a bookmark to every watch that asked for them about once a
  // minute, and one 2 s before the watch's deadline (apiserver/pkg/storage/cacher/cacher.go:
  // defaultBookmarkFrequency = time.Minute; cache_watcher.go nextBookmarkTime). Three intervals
  // tolerate two lost bookmarks and a busy server before a silent stream counts as stalled.
  stallTimeoutMs: 180_000,
  requestTimeoutMs: 60_000,
  minWatchMs: 1000,
  pageSize: 500,
  maxLineBytes: DEFAULT_MAX_LINE_BYTES,
  random: Math.random,
  now: () => Date.now(),
  absentRecheckMs: 30_000,
};

/**
 * A list or watch of an optional kind (model/kinds.ts) answered 404: its CRD is not installed
 * (or was removed). The kind then counts as synced and empty until a later list succeeds.
 */
export class NotInstalled extends Error {}

/** `/api/v1[/namespaces/NS]/services` and the like. */
export function collectionPath(kind: Kind, namespace: string | null): string {
  const a = KIND_API[kind];
  const base = a.group ? `/apis/${a.group}/${a.version}` : `/api/${a.version}`;
  return `${base}${a.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : ""}/${a.resource}`;
}

// Secrets of the types Portico never reads are not listed (model/kinds.ts names them and says
// why); a field selector can exclude types but not name two, so TLS and basic-auth Secrets come
// in one list.
export const FIELD_SELECTORS: Partial<Record<Kind, string>> = { Secret: UNWATCHED_SECRET_TYPES.map((t) => `type!=${t}`).join(",") };

export type WatchEvent = { type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR"; object: object };
const TYPES = new Set(["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]);

export function parseWatchLine(line: string): WatchEvent | null {
  try {
    const e = JSON.parse(line) as { type?: unknown; object?: unknown };
    if (typeof e?.type === "string" && TYPES.has(e.type) && e.object && typeof e.object === "object") return e as WatchEvent;
  } catch {
    // fall through
  }
  return null;
}

