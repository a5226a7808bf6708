// Endpoint choice: round robin per Backend, with passive health. An endpoint
// that refused a connection is skipped for a back-off that grows 2 s → 4 s → 8 s → 10 s (cap)
// while it keeps failing, and is used again once the back-off has passed (and forgotten on the
// first success). A backend with more endpoints than this process's share of the origin budget
// is balanced over a sliding window of them (subset.ts explains why and what it costs).
import type { Backend, Upstream } from "../table/types.ts";
import { MAX_SUBSET, stableOrder, windowSize, windowStart } from "./subset.ts";

const BASE_BACKOFF_MS = 2_000;
const MAX_BACKOFF_MS = 10_000;
const MAX_TRACKED = 10_000;
/** An endpoint that answered this recently is assumed reachable (Bun keeps idle connections). */
export const WARM_MS = 30_000;

/** How often the window size is recomputed from the backends used in the last period. */
const ACTIVE_MS = 2_000;

interface Health {
  until: number;
  backoff: number;
}

export interface Balancer {
  /** Next endpoint for the backend, never one in `exclude`; null when the list is empty. */
  pick(backend: Backend, exclude?: ReadonlySet<string>): Upstream | null;
  /** The endpoint refused or failed to connect. */
  failed(u: Upstream): void;
  /** The endpoint answered. */
  succeeded(u: Upstream): void;
  /** Whether the endpoint is in back-off now (for tests and /debug). */
  isBackedOff(authority: string): boolean;
  /** Whether the endpoint answered within the last WARM_MS (else connect is probed first). */
  isWarm(u: Upstream): boolean;
  /** Forget that the endpoint was warm (it timed out): the next request probes it. */
  cooled(u: Upstream): void;
}

export interface BalancerOptions {
  /**
   * Where this process's endpoint windows start, in [0, 1). Processes with different seeds
   * cover different endpoints at once; worker i of N can pass i / N. Default: random.
   */
  readonly seed?: number;
}

interface Cursor {
  i: number;
  /** Endpoints in their stable order, computed when the backend is first subset. */
  order: readonly Upstream[] | null;
  /** Last period in which this backend was picked for. */
  seen: number;
}

export function createBalancer(now: () => number = () => performance.now(), opts: BalancerOptions = {}): Balancer {
  // Counters live as long as the Backend object (one table); a fresh table starts each backend
  // at a random offset so many processes / table swaps do not all hit endpoint 0 first.
  const cursor = new WeakMap<Backend, Cursor>();
  const health = new Map<string, Health>();
  const lastOk = new Map<string, number>();
  const seed = opts.seed ?? Math.random();
  // Window size for large backends, recomputed every ACTIVE_MS from the backends picked for
  // in the previous period (their endpoints share one pool).
  let k = MAX_SUBSET;
  let period = 0;
  let periodEnd = now() + ACTIVE_MS;
  let active: Backend[] = [];

  function backedOff(authority: string, t: number): boolean {
    const h = health.get(authority);
    return h !== undefined && h.until > t;
  }

  /** Round robin over a window of k endpoints of the stable order; outside it only when it is all unusable. */
  function pickSubset(c: Cursor, backend: Backend, exclude: ReadonlySet<string> | undefined, t: number): Upstream | null {
    const order = (c.order ??= stableOrder(backend.endpoints));
    const n = order.length;
    const start = windowStart(n, seed, t);
    let fallback: Upstream | null = null;
    for (let j = 0; j < k; j++) {
      const u = order[(start + ((c.i + j) % k)) % n] as Upstream;
      if (exclude?.has(u.authority)) continue;
      if (backedOff(u.authority, t)) {
        fallback ??= u;
        continue;
      }
      c.i = (c.i + j + 1) % k;
      return u;
    }
    // Health and retries come first: when the whole window is failing or already tried, the
    // endpoints after it are next, in order.
    for (let j = k; j < n; j++) {
      const u = order[(start + j) % n] as Upstream;
      if (exclude?.has(u.authority)) continue;
      if (backedOff(u.authority, t)) {
        fallback ??= u;
        continue;
      }
      return u;
    }
    return fallback;
  }

  return {
    pick(backend, exclude) {
      const eps = backend.endpoints;
      const n = eps.length;
      if (n === 0) return null;
      let c = cursor.get(backend);
      if (c === undefined) {
        c = { i: Math.floor(Math.random() * n), order: null, seen: -1 };
        cursor.set(backend, c);
      }
      const t = now();
      if (t >= periodEnd) {
        k = active.length === 0 ? MAX_SUBSET : windowSize(active);
        active = [];
        period++;
        periodEnd = t + ACTIVE_MS;
      }
      if (c.seen !== period) {
        c.seen = period;
        active.push(backend);
      }
      if (n > k) return pickSubset(c, backend, exclude, t);
      let fallback: Upstream | null = null;
      for (let j = 0; j < n; j++) {
        const u = eps[(c.i + j) % n] as Upstream;
        if (exclude?.has(u.authority)) continue;
        if (backedOff(u.authority, t)) {
          fallback ??= u;
          continue;
        }
        c.i = (c.i + j + 1) % n;
        return u;
      }
      // Every candidate is backing off: trying one beats a certain 502.
      if (fallback !== null) c.i = (c.i + 1) % n;
      return fallback;
    },
    failed(u) {
      const t = now();
      lastOk.delete(u.authority);
      const prev = health.get(u.authority);
      const backoff = prev === undefined ? BASE_BACKOFF_MS : Math.min(prev.backoff * 2, MAX_BACKOFF_MS);
      if (health.size >= MAX_TRACKED) {
        for (const [k, h] of health) if (h.until <= t) health.delete(k);
      }
      health.set(u.authority, { until: t + backoff, backoff });
    },
    succeeded(u) {
      if (health.size > 0) health.delete(u.authority);
      const t = now();
      if (lastOk.size >= MAX_TRACKED && !lastOk.has(u.authority)) {
        for (const [k, v] of lastOk) if (t - v > WARM_MS) lastOk.delete(k);
      }
      lastOk.set(u.authority, t);
    },
    isWarm(u) {
      const t = lastOk.get(u.authority);
      return t !== undefined && now() - t < WARM_MS;
    },
    cooled(u) {
      lastOk.delete(u.authority);
    },
    isBackedOff(authority) {
      return backedOff(authority, now());
    },
  };
}
