// Endpoint choice: round robin per Backend, with passive health. An endpoint that refused a
// connection is skipped for a back-off that grows 2 s → 4 s → 8 s → 10 s (cap) while it keeps
// failing, and is used again once the back-off has passed (and forgotten on the first
// success). A backend with more endpoints than this process's share of the origin budget is
// balanced over a sliding window of them (subset.ts explains why and what it costs).
//
// A route's `backend` stage may choose otherwise for its requests (an EndpointChoice:
// `load-balance: ewma`, `upstream-hash-by`, cookie affinity; docs/design.md, "Balancing and
// affinity"). Round robin, the default, is untouched by them: a route without one pays nothing.
import type { Backend, Upstream } from "../../table/types.ts";
import type { Balancer } from "../../kinds/types.ts";
import { MAX_SUBSET, stableOrder, windowSize, windowStart } from "./subset.ts";


/** EWMA decay time (ingress-nginx rootfs/etc/nginx/lua/balancer/ewma.lua DECAY_TIME: 10 s). */
export const EWMA_DECAY_MS = 10_000;

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


export interface BalancerOptions {
  /**
   * Where this process's endpoint windows start, in [0, 1). Processes with different seeds
   * cover different endpoints at once; worker i of N can pass i / N. Default: random.
   */
  readonly seed?: number;
  /** Random numbers in [0, 1) for EWMA's two-candidate draw; default Math.random (tests pass a seeded one). */
  readonly random?: () => number;
  /** Where EWMA scores live; default the process's (see useEwmaScores), else a Map of its own. */
  readonly ewma?: EwmaScores;
}

/**
 * EWMA scores by endpoint (`ip:port`), with ingress-nginx's arithmetic (ewma.lua). Times are
 * the balancer's clock. A single process keeps them in a Map (below); the workers of a pod
 * share one table in memory (shared-ewma.ts), as ingress-nginx's nginx workers share the
 * balancer_ewma dictionary, so a slow pod learnt by one worker is avoided by all.
 */
export interface EwmaScores {
  /** The score at `t`, decayed toward 0 since it was last moved; 0 when it has none. */
  decayed(authority: string, t: number): number;
  /** The score as last moved (not decayed), or NaN when it has none (slow start's mean). */
  raw(authority: string): number;
  /** Give the endpoint `score` at `t` unless it has one (slow start). */
  seed(authority: string, score: number, t: number): void;
  /** The endpoint answered in `ms`: ingress-nginx's decay_ewma. */
  observe(authority: string, ms: number, t: number): void;
}

interface Ewma {
  score: number;
  at: number;
}

/** ingress-nginx's decay_ewma: the old score's weight falls with the time since it was moved. */
export function decayedEwma(score: number, at: number, ms: number, t: number): number {
  const w = Math.exp(-Math.max(0, t - at) / EWMA_DECAY_MS);
  return score * w + ms * (1 - w);
}

/** One process's scores: a Map bounded by MAX_TRACKED endpoints. */
export function createEwmaScores(): EwmaScores {
  const ewma = new Map<string, Ewma>();
  return {
    decayed(authority, t) {
      const e = ewma.get(authority);
      if (e === undefined) return 0;
      return e.score * Math.exp(-Math.max(0, t - e.at) / EWMA_DECAY_MS);
    },
    raw(authority) {
      return ewma.get(authority)?.score ?? NaN;
    },
    seed(authority, score, t) {
      if (!ewma.has(authority)) ewma.set(authority, { score, at: t });
    },
    observe(authority, ms, t) {
      if (ewma.size >= MAX_TRACKED && !ewma.has(authority)) {
        // Scores untouched for ten decay times are ~0 already: forgetting them changes nothing.
        for (const [key, e] of ewma) if (t - e.at > 10 * EWMA_DECAY_MS) ewma.delete(key);
        if (ewma.size >= MAX_TRACKED) return;
      }
      const e = ewma.get(authority);
      if (e === undefined) {
        ewma.set(authority, { score: ms, at: t });
        return;
      }
      // ingress-nginx's decay_ewma: the weight of the old score falls with the time since it
      // was last touched, so the score is a time-weighted average, not a per-request one.
      e.score = decayedEwma(e.score, e.at, ms, t);
      e.at = t;
    },
  };
}

/** A worker's scores live in the pod's shared table (workers/worker.ts sets this before serving). */
let processEwma: (() => EwmaScores) | null = null;

export function useEwmaScores(make: () => EwmaScores): void {
  processEwma = make;
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
  const windowSeed = opts.seed ?? Math.random();
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
    const start = windowStart(n, windowSeed, t);
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

  /** The backend's cursor, with this period's bookkeeping of active backends (window size). */
  function cursorOf(backend: Backend, n: number, t: number): Cursor {
    let c = cursor.get(backend);
    if (c === undefined) {
      c = { i: Math.floor(Math.random() * n), order: null, seen: -1 };
      cursor.set(backend, c);
    }
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
    return c;
  }

  // EWMA scores by `ip:port`, shared by every backend naming the endpoint, as ingress-nginx
  // shares its balancer_ewma dictionary. Bounded like `health`.
  const ewma = opts.ewma ?? processEwma?.() ?? createEwmaScores();
  /** Backend objects whose new endpoints got their starting score (once per endpoint set). */
  const seeded = new WeakSet<Backend>();
  /** The endpoints each backend (by id) had when this process last balanced it with ewma. */
  const lastEndpoints = new Map<string, ReadonlySet<string>>();
  const random = opts.random ?? Math.random;

  /** The score now: ingress-nginx decays a score toward 0 while the endpoint is not used. */
  const scoreAt = (authority: string, t: number): number => ewma.decayed(authority, t);

  /**
   * Endpoints added to a backend start at the mean score of its scored ones (ingress-nginx's
   * slow start: ewma.lua's sync gives calculate_slow_start_ewma to the endpoints the diff
   * against the balancer's previous peers added), not at 0, which would send them every
   * request until their first answers arrive. A backend this process balances for the first
   * time gets none (ewma.lua's new() sets its peers without it): with scores shared by the
   * workers, another worker's scores would otherwise make every endpoint it has not tried yet
   * look new.
   */
  function seedScores(backend: Backend, t: number): void {
    seeded.add(backend);
    const now = new Set(backend.endpoints.map((u) => u.authority));
    const before = lastEndpoints.get(backend.id);
    if (lastEndpoints.size >= MAX_TRACKED && before === undefined) lastEndpoints.clear();
    lastEndpoints.set(backend.id, now);
    if (before === undefined) return;
    const added = backend.endpoints.filter((u) => !before.has(u.authority));
    if (added.length === 0) return;
    let sum = 0;
    let scored = 0;
    for (const u of backend.endpoints) {
      const score = ewma.raw(u.authority);
      if (!Number.isNaN(score)) {
        sum += score;
        scored++;
      }
    }
    if (scored === 0) return;
    for (const u of added) ewma.seed(u.authority, sum / scored, t);
  }

  /** The window of a subset backend (k endpoints of the stable order from this process's start). */
  function windowOf(c: Cursor, backend: Backend, t: number): Upstream[] {
    const order = (c.order ??= stableOrder(backend.endpoints));
    const n = order.length;
    const start = windowStart(n, windowSeed, t);
    const out: Upstream[] = [];
    for (let j = 0; j < k; j++) out.push(order[(start + j) % n] as Upstream);
    return out;
  }

  return {
    pick(backend, exclude) {
      const eps = backend.endpoints;
      const n = eps.length;
      if (n === 0) return null;
      const t = now();
      const c = cursorOf(backend, n, t);
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
    pickEwma(backend, exclude) {
      const n = backend.endpoints.length;
      if (n === 0) return null;
      const t = now();
      const c = cursorOf(backend, n, t);
      if (!seeded.has(backend)) seedScores(backend, t);
      // Candidates: the window's (all endpoints of a small backend) not tried by this request
      // and not backing off; past the window when none is left, as round robin goes; then
      // those backing off (trying one beats a certain 502); once every endpoint has been tried,
      // all of them again (as ingress-nginx's ewma does).
      const pool = n > k ? windowOf(c, backend, t) : backend.endpoints;
      let cands: readonly Upstream[] = pool;
      if (exclude !== undefined || health.size > 0) {
        const untried = (u: Upstream) => exclude === undefined || !exclude.has(u.authority);
        const usable = (u: Upstream) => untried(u) && !backedOff(u.authority, t);
        let list = pool.filter(usable);
        if (list.length === 0 && pool !== backend.endpoints) list = backend.endpoints.filter(usable);
        if (list.length === 0) list = backend.endpoints.filter(untried);
        cands = list.length === 0 ? pool : list;
      }
      const m = cands.length;
      if (m === 1) return cands[0] as Upstream;
      // Two distinct random candidates; the lower score wins, the first on a tie
      // (ingress-nginx's pick_and_score with PICK_SET_SIZE 2).
      const i = Math.floor(random() * m);
      let j = Math.floor(random() * (m - 1));
      if (j >= i) j++;
      const a = cands[i] as Upstream;
      const b = cands[j] as Upstream;
      return scoreAt(b.authority, t) < scoreAt(a.authority, t) ? b : a;
    },
    observe(u, ms) {
      ewma.observe(u.authority, ms, now());
    },
    ewmaScore(authority) {
      return Number.isNaN(ewma.raw(authority)) ? null : scoreAt(authority, now());
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
