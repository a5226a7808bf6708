// Shared pieces of the list+watch loops (watch.ts for the store's kinds, configmap.ts for the
// ingress-nginx ConfigMap): metrics hooks, injectable timings, API paths, the parsing of one
// watch line, the resume point a watch event may move, and the timers of one watch request.
import * as v from "valibot";
import { KIND_API, UNWATCHED_SECRET_TYPES, type Kind } from "../model/kinds.ts";
import { apiError } from "./client.ts";
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

/**
 * A resourceVersion as kube-apiserver writes and reads them: a decimal uint64. The API server's
 * storage formats them with strconv.FormatUint and parses the one a list or watch is given with
 * strconv.ParseUint, refusing anything else (k8s.io/apiserver pkg/storage
 * APIObjectVersioner.ParseResourceVersion). So a version that is not one cannot be resumed from:
 * taken, it would fail every later watch and never reach the 410 that relists.
 */
export const ResourceVersionSchema = v.pipe(
  v.string(),
  // One check: valibot runs the later actions of a pipe after a failed one, and BigInt throws on
  // what the pattern refused.
  v.check((s) => /^(?:0|[1-9][0-9]{0,19})$/.test(s) && BigInt(s) <= 0xffff_ffff_ffff_ffffn, "resourceVersion is not a decimal uint64"),
);

/** Where a watch resumes after an event: its version (null: it carries none, the point stays), or why the event is skipped. */
export type ResumePoint = { readonly ok: true; readonly rv: string | null } | { readonly ok: false; readonly why: string };

/**
 * The resume point after `ev`, whose object is well-formed (parseWatchLine). A watch delivers
 * events in resourceVersion order and a bookmark is never older than the events before it (API
 * concepts, "Efficient detection of changes" and "Watch bookmarks"), so an event with a malformed
 * version, or one older than the point already reached (`current`, a list's or an earlier
 * event's), is not the server's word: it is skipped whole, and the point never moves back. A
 * bookmark must carry a version. An object that carries none (or an empty one) leaves the
 * point where it is.
 */
export function resumeAfter(current: string | null, ev: WatchEvent): ResumePoint {
  const meta = (ev.object as { metadata?: unknown }).metadata;
  const raw = meta !== null && typeof meta === "object" ? (meta as { resourceVersion?: unknown }).resourceVersion : undefined;
  if (raw === undefined || raw === "") return ev.type === "BOOKMARK" ? { ok: false, why: "bookmark without a resourceVersion" } : { ok: true, rv: null };
  const r = v.safeParse(ResourceVersionSchema, raw);
  if (!r.success) return { ok: false, why: r.issues[0].message };
  if (current !== null && v.is(ResourceVersionSchema, current) && BigInt(r.output) < BigInt(current)) {
    return { ok: false, why: `resourceVersion ${r.output} is older than ${current}` };
  }
  return { ok: true, rv: r.output };
}

/** The stream stayed open with no event and no bookmark for stallTimeoutMs. */
export class Stalled extends Error {
  constructor(readonly silentMs: number) {
    super(`no event or bookmark for ${Math.round(silentMs)} ms`);
  }
}

/** The timers of one watch request (watchTimers). */
export interface WatchTimers {
  /** Aborts the request: the loop's stop, or one of the timers below. */
  readonly signal: AbortSignal;
  /** The response headers came: their deadline ends and the stall watchdog starts. */
  connected(): void;
  /** A well-formed event or bookmark came (a malformed line is not a sign of life). */
  heard(): void;
  /**
   * The stall watchdog's verdict, once it aborted the request: it wins over whatever the
   * runtime made of the abort (a failed read, or what looks like the stream's clean end).
   */
  readonly stalled: Stalled | null;
  /** Clears every timer and aborts the request (the stream is done with). */
  dispose(): void;
}

/**
 * The deadlines of one watch request, shared by every list+watch loop (docs/design.md "API
 * server failures"): its response headers (and an error's Status body) within requestTimeoutMs;
 * the whole stream within its timeoutSeconds plus watchGraceMs; and, once connected, no silence
 * longer than stallTimeoutMs. The stream's own end is minutes away; a stream that stays open while
 * nothing arrives (a watcher the server lost, a half-open connection behind a proxy) would hide
 * every change until then. Each event or bookmark moves the last sign of life; the stall timer
 * re-arms for the time left rather than per event.
 */
export function watchTimers(t: WatchTimings, timeoutS: number, stop: AbortSignal): WatchTimers {
  const ac = new AbortController();
  const signal = AbortSignal.any([stop, ac.signal]);
  const headerTimer = setTimeout(() => ac.abort(new Error("watch response headers timed out")), t.requestTimeoutMs);
  const deadline = setTimeout(() => ac.abort(new Error("watch outlived timeoutSeconds")), timeoutS * 1000 + t.watchGraceMs);
  let lastEvent = t.now();
  let stalled: Stalled | null = null;
  let stallTimer: ReturnType<typeof setTimeout> | undefined;
  const checkStall = () => {
    const silent = t.now() - lastEvent;
    if (silent >= t.stallTimeoutMs) {
      stalled = new Stalled(silent);
      ac.abort(stalled);
    } else stallTimer = setTimeout(checkStall, t.stallTimeoutMs - silent);
  };
  return {
    signal,
    connected() {
      clearTimeout(headerTimer);
      lastEvent = t.now();
      clearTimeout(stallTimer);
      stallTimer = setTimeout(checkStall, t.stallTimeoutMs);
    },
    heard() {
      lastEvent = t.now();
    },
    get stalled() {
      return stalled;
    },
    dispose() {
      clearTimeout(headerTimer);
      clearTimeout(deadline);
      clearTimeout(stallTimer);
      ac.abort();
    },
  };
}

export function parseWatchLine(line: string): WatchEvent | null {
  try {
    const e = JSON.parse(line) as { type?: unknown; object?: unknown };
    if (typeof e?.type === "string" && TYPES.has(e.type) && e.object && typeof e.object === "object") return e as WatchEvent;
  } catch {
    // fall through
  }
  return null;
}

/** 410 Gone (the HTTP status or an ERROR event): the resourceVersion is too old; list afresh. */
export class Gone extends Error {}
/** The watch's resourceVersion is ahead of the API server's: retried after the back-off, from a new list. */
export class TooLarge extends Error {}

/**
 * The error a watch request that did not open becomes, for both loops: 410 is Gone; a version
 * the API server has not reached is TooLarge: kube-apiserver answers 504 "Too large resource
 * version" (k8s.io/apiserver storage.NewTooLargeResourceVersionError), and client-go's reflector
 * lists afresh. The same version would fail every retry, for good: one from before an etcd
 * restore, or one a broken server sent (which also held back every event after it,
 * resumeAfter). Anything else is the API's own error.
 */
export async function watchRefused(res: Response, path: string, server: string): Promise<Error> {
  if (res.status === 410) {
    await res.body?.cancel();
    return new Gone();
  }
  const err = await apiError(res, "GET", path, server);
  return res.status === 504 && /too large resource version/i.test(err.message) ? new TooLarge(err.message) : err;
}
