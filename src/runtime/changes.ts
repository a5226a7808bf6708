// What an applied configuration changed, in words an operator can act on: which objects were
// added, updated or removed since the last table, which routes were gained and lost, and why
// an Ingress is not served. Counts alone ("routes=12") could not say what an edit did.
import { changedKeys } from "../compile/changes.ts";
import { classContext, classify, LEGACY_CLASS_ANNOTATION } from "../compile/class.ts";
import type { CompileConfig } from "../compile/config.ts";
import type { Kind, KindObjects } from "../model/kinds.ts";
import type { Ingress } from "../model/schemas.ts";
import { relevantEqual } from "../store/relevance.ts";
import type { Store } from "../store/store.ts";
import type { Snapshot } from "../store/types.ts";
import type { HostRoutes, Route, RouteTable } from "../table/types.ts";

/** Names listed per field of a log line; the rest is counted ("… and 12 more"). */
export const LIST_LIMIT = 10;

function capped(items: string[], limit = LIST_LIMIT): string[] {
  items.sort();
  if (items.length <= limit) return items;
  return [...items.slice(0, limit), `… and ${items.length - limit} more`];
}

export interface ObjectChanges {
  /** `Kind namespace/name`, sorted, at most LIST_LIMIT and a count of the rest. */
  readonly added: string[];
  readonly updated: string[];
  readonly removed: string[];
  /** Every Ingress touched (`namespace/name`), uncapped. */
  readonly ingresses: ReadonlySet<string>;
  /** Kinds with any change. */
  readonly kinds: ReadonlySet<Kind>;
}

/**
 * Objects touched since the last applied table, netted: added then removed within one burst
 * is nothing, removed then added again is an update. Only relevant changes are recorded (the
 * store already drops status-only updates), so each entry costs one map write per event.
 */
export class ChangeTracker {
  /** `Kind\0key` → whether the object existed before the first change of this burst. */
  private readonly touched = new Map<string, { kind: Kind; key: string; existed: boolean }>();

  /** Record a change to `kind`/`key`; `existed` is whether the store held it just before. */
  touch(kind: Kind, key: string, existed: boolean): void {
    const id = `${kind}\u0000${key}`;
    if (!this.touched.has(id)) this.touched.set(id, { kind, key, existed });
  }

  /** A relist replaced `before` with what the store holds now: record what differs. */
  touchReplaced<K extends Kind>(kind: K, before: ReadonlyMap<string, KindObjects[K]>, after: ReadonlyMap<string, KindObjects[K]>): void {
    for (const [key, o] of after) {
      const old = before.get(key);
      if (old === undefined) this.touch(kind, key, false);
      else if (old !== o && !relevantEqual(kind, old, o)) this.touch(kind, key, true);
    }
    for (const key of before.keys()) if (!after.has(key)) this.touch(kind, key, true);
  }

  /** What the touched objects amount to now; forgets them. */
  take(store: Store): ObjectChanges {
    const added: string[] = [];
    const updated: string[] = [];
    const removed: string[] = [];
    const ingresses = new Set<string>();
    const kinds = new Set<Kind>();
    for (const { kind, key, existed } of this.touched.values()) {
      const now = store.get(kind, key) !== undefined;
      const name = `${kind} ${key}`;
      if (existed && now) updated.push(name);
      else if (now) added.push(name);
      else if (existed) removed.push(name);
      else continue;
      kinds.add(kind);
      if (kind === "Ingress") ingresses.add(key);
    }
    this.touched.clear();
    return { added: capped(added), updated: capped(updated), removed: capped(removed), ingresses, kinds };
  }

  /** Forget everything (the first table reports counts, not names). */
  clear(): void {
    this.touched.clear();
  }
}

/** `host/path Type → backend` (the default route: `default → backend`). */
export function describeRoute(r: Route): string {
  const where = r.source === "rule" ? `${r.host ?? "*"}${r.path} ${r.pathType}` : `default (${r.ingress.namespace ? `${r.ingress.namespace}/${r.ingress.name}` : "--default-backend-service"})`;
  return `${where} → ${r.backend.id}`;
}

function hostEntriesChanged(prev: ReadonlyMap<string, HostRoutes>, next: ReadonlyMap<string, HostRoutes>, gained: Set<string>, lost: Set<string>): void {
  // Unchanged hosts keep their HostRoutes object and the maps keep their order
  // (compile/incremental.ts): a side-by-side walk (~1 ms at 10k hosts) finds the rebuilt
  // entries, and only those are compared route by route.
  changedKeys(prev, next, (host) => {
    for (const r of next.get(host)?.routes ?? []) gained.add(describeRoute(r));
    for (const r of prev.get(host)?.routes ?? []) lost.add(describeRoute(r));
  });
}

function endpointNote(r: Route): string {
  const b = r.backend;
  if (b.status !== "ok") return ` (503: ${b.status})`;
  return ` (${b.endpoints.length} endpoint${b.endpoints.length === 1 ? "" : "s"})`;
}

/** Every route of a table with its endpoints, for the start-up line: at most `limit` and a count. */
export function routeSummary(table: RouteTable, limit = LIST_LIMIT): string[] {
  const out: string[] = [];
  const add = (h: HostRoutes | null) => {
    for (const r of h?.routes ?? []) out.push(describeRoute(r) + endpointNote(r));
  };
  for (const h of table.exact.values()) add(h);
  for (const h of table.wildcard.values()) add(h);
  add(table.any);
  if (table.defaultRoute) out.push(describeRoute(table.defaultRoute) + endpointNote(table.defaultRoute));
  return capped(out, limit);
}

export interface RouteChanges {
  readonly gained: string[];
  readonly lost: string[];
}

/** Routes in `next` and not in `prev` (gained) and the reverse (lost); a route whose backend changed is both. */
export function routeChanges(prev: RouteTable, next: RouteTable): RouteChanges {
  const gained = new Set<string>();
  const lost = new Set<string>();
  if (prev !== next) {
    hostEntriesChanged(prev.exact, next.exact, gained, lost);
    hostEntriesChanged(prev.wildcard, next.wildcard, gained, lost);
    const anyPrev = new Map(prev.any ? [["*", prev.any]] : []);
    const anyNext = new Map(next.any ? [["*", next.any]] : []);
    hostEntriesChanged(anyPrev, anyNext, gained, lost);
    if (prev.defaultRoute !== next.defaultRoute) {
      if (next.defaultRoute) gained.add(describeRoute(next.defaultRoute));
      if (prev.defaultRoute) lost.add(describeRoute(prev.defaultRoute));
    }
  }
  // A rebuilt host keeps most of its routes: only the real differences are reported.
  for (const r of [...gained]) {
    if (lost.delete(r)) gained.delete(r);
  }
  return { gained: capped([...gained]), lost: capped([...lost]) };
}

/** The class ingress-nginx takes by default (its --ingress-class). */
const NGINX_CLASS = "nginx";

/**
 * Ingresses that are not ours, each said once with the reason (other class, no class), and
 * again only when the reason changes. `changed` limits the check to Ingresses touched since
 * the last table, unless IngressClasses changed (then every Ingress is checked again).
 */
export class NotServedLog {
  private readonly reasons = new Map<string, string>();
  /** Without --ingress-nginx-compat: the first Ingress of ingress-nginx's class not taken (said once). */
  private nginxClass: string | null | undefined = null;

  constructor(private readonly config: CompileConfig) {}

  /**
   * An Ingress of class `nginx` that is not served, once per process (undefined after): a team
   * trying Portico on ingress-nginx's Ingresses without --ingress-nginx-compat sees their
   * Ingresses ignored one by one, and this names the flag that takes them.
   */
  takeNginxHint(): string | null {
    const key = this.nginxClass;
    if (key === null || key === undefined) return null;
    this.nginxClass = undefined;
    return key;
  }

  /** New reasons to report: `namespace/name` → why it is not served. */
  check(snapshot: Snapshot, only: ReadonlySet<string> | null): Map<string, string> {
    const ctx = classContext(snapshot.ingressClasses, this.config);
    const out = new Map<string, string>();
    const look = (key: string, ing: Ingress | undefined) => {
      if (ing === undefined) {
        this.reasons.delete(key);
        return;
      }
      const d = classify(ing, ctx, this.config);
      if (d.served) {
        this.reasons.delete(key);
        return;
      }
      if (this.nginxClass === null && !this.config.ingressNginxCompat && this.config.ingressClass !== NGINX_CLASS) {
        const cls = ing.spec.ingressClassName ?? ing.metadata.annotations?.[LEGACY_CLASS_ANNOTATION];
        if (cls === NGINX_CLASS) this.nginxClass = key;
      }
      if (this.reasons.get(key) === d.reason) return;
      this.reasons.set(key, d.reason);
      out.set(key, d.reason);
    };
    if (only === null) {
      for (const [key, ing] of snapshot.ingresses) look(key, ing);
      for (const key of [...this.reasons.keys()]) if (!snapshot.ingresses.has(key)) this.reasons.delete(key);
    } else {
      for (const key of only) look(key, snapshot.ingresses.get(key));
    }
    return out;
  }
}
