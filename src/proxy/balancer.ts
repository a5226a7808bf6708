// Endpoint choice (issue 3 point 5): round robin per Backend, with passive health. An endpoint
// that refused a connection is skipped for a back-off that grows 2 s → 4 s → 8 s → 10 s (cap)
// while it keeps failing, and is used again once the back-off has passed (and forgotten on the
// first success).
import type { Backend, Upstream } from "../table/types.ts";

const BASE_BACKOFF_MS = 2_000;
const MAX_BACKOFF_MS = 10_000;
const MAX_TRACKED = 10_000;
/** An endpoint that answered this recently is assumed reachable (Bun keeps idle connections). */
export const WARM_MS = 30_000;

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

export function createBalancer(now: () => number = () => performance.now()): Balancer {
  // Counters live as long as the Backend object (one table); a fresh table starts each backend
  // at a random offset so many processes / table swaps do not all hit endpoint 0 first.
  const cursor = new WeakMap<Backend, { i: number }>();
  const health = new Map<string, Health>();
  const lastOk = new Map<string, number>();

  function backedOff(authority: string, t: number): boolean {
    const h = health.get(authority);
    return h !== undefined && h.until > t;
  }

  return {
    pick(backend, exclude) {
      const eps = backend.endpoints;
      const n = eps.length;
      if (n === 0) return null;
      let c = cursor.get(backend);
      if (c === undefined) {
        c = { i: Math.floor(Math.random() * n) };
        cursor.set(backend, c);
      }
      const t = now();
      let fallback: Upstream | null = null;
      for (let k = 0; k < n; k++) {
        const u = eps[(c.i + k) % n] as Upstream;
        if (exclude?.has(u.authority)) continue;
        if (backedOff(u.authority, t)) {
          fallback ??= u;
          continue;
        }
        c.i = (c.i + k + 1) % n;
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
