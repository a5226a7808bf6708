// The request limiter of one process (the `limits` kind counts in it: kinds/limits.ts): nginx's
// leaky bucket per key in an LRU, and connection slots. Here, on the I/O side, because it
// reads the monotonic clock; with --workers N every worker counts in the shared table
// instead (proxy/shared/limits.ts).
//
// Memory: the rate state is an LRU of at most MAX_CLIENTS keys (zone × address), about 180
// bytes each with a long Ingress name and an IPv6 client (measured with Bun 1.4.5: ~12 MB at
// the bound). When it is full the key seen least recently is forgotten; that client starts
// again with an empty bucket, which can only matter when more than MAX_CLIENTS keys are active
// within one burst period. nginx's 5 MB zone holds about 40,000 keys and then refuses new
// clients with 500. Connection counts exist only for requests in flight.
import { LRUCache } from "lru-cache";
import { excessAfter } from "../../kinds/limits.ts";
import type { Limiter } from "../../kinds/types.ts";

/** Keys (Ingress zone × client address) whose rate state is kept. */
export const MAX_CLIENTS = 65_536;

/** Per key: the excess in milli-requests and the ms it was last moved at, per rate (-1: never). */
interface Bucket {
  e0: number;
  t0: number;
  e1: number;
  t1: number;
}


interface LimiterOptions {
  /** Milliseconds, monotonic; default performance.now. Tests inject their own. */
  readonly now?: () => number;
  readonly maxClients?: number;
}

export function createLimiter(opts: LimiterOptions = {}): Limiter {
  const now = opts.now ?? (() => performance.now());
  const rates = new LRUCache<string, Bucket>({ max: opts.maxClients ?? MAX_CLIENTS });
  const conns = new Map<string, number>();

  return {
    admit(key, first, second) {
      const t = Math.floor(now());
      const b = rates.get(key);
      if (b === undefined) {
        rates.set(key, { e0: 0, t0: first ? t : -1, e1: 0, t1: second ? t : -1 });
        return true;
      }
      const e0 = first ? excessAfter(b.e0, b.t0, first, t) : 0;
      if (first && e0 > first.burst) return false;
      const e1 = second ? excessAfter(b.e1, b.t1, second, t) : 0;
      if (second && e1 > second.burst) return false;
      if (first) {
        b.e0 = e0;
        b.t0 = t;
      }
      if (second) {
        b.e1 = e1;
        b.t1 = t;
      }
      return true;
    },
    acquire(key, max) {
      const n = conns.get(key) ?? 0;
      if (n >= max) return null;
      conns.set(key, n + 1);
      let held = true;
      return () => {
        if (!held) return;
        held = false;
        const left = (conns.get(key) ?? 1) - 1;
        if (left <= 0) conns.delete(key);
        else conns.set(key, left);
      };
    },
    get sizes() {
      return { rates: rates.size, connections: conns.size };
    },
  };
}

/**
 * The process's limiter: both listeners' handlers (HTTP and HTTPS) count in it. In a single
 * process it is an in-memory one, created on first use (nothing when no route has limits).
 */
let current: Limiter | null = null;

/**
 * A worker counts in the pod's shared table instead (workers/worker.ts calls this before it
 * builds any route: a route holds the limiter it was built with).
 */
export function useProcessLimiter(limiter: Limiter): void {
  current = limiter;
}

/** The process's limiter, made on first use (PolicyCaps.limiter: proxy/policies/caps.ts). */
export function processLimiter(): Limiter {
  return (current ??= createLimiter());
}
