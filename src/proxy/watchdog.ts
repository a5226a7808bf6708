// A cheap inactivity timer. touch() only stores a timestamp, and no watchdog owns a timer: one
// shared interval per process checks every live watchdog each TICK_MS. A setTimeout/clearTimeout
// pair per request (the response deadline, the body-idle timer) cost ~4% of a small proxied
// request in the profile (issue 8 point 4); a Set add/delete costs a fraction of that.
// Consequence: a watchdog fires up to TICK_MS late, never early.

export interface Watchdog {
  touch(): void;
  stop(): void;
}

/** Granularity of every watchdog (deadlines are seconds in practice; tests allow the slack). */
export const TICK_MS = 50;

interface Dog {
  last: number;
  readonly ms: number;
  readonly onFire: () => void;
}

const live = new Set<Dog>();
let ticker: ReturnType<typeof setInterval> | null = null;

function tick(): void {
  if (live.size === 0) {
    // Idle: stop ticking until the next watchdog starts.
    if (ticker !== null) clearInterval(ticker);
    ticker = null;
    return;
  }
  const t = performance.now();
  for (const d of live) {
    if (t - d.last < d.ms) continue;
    live.delete(d);
    try {
      d.onFire();
    } catch {}
  }
}

export function createWatchdog(ms: number, onFire: () => void): Watchdog {
  if (!(ms > 0) || !Number.isFinite(ms)) return { touch() {}, stop() {} };
  const d: Dog = { last: performance.now(), ms, onFire };
  live.add(d);
  if (ticker === null) {
    ticker = setInterval(tick, TICK_MS);
    // The ticker alone never keeps the process alive: whoever waits on a watchdog holds a
    // socket or a promise that does.
    (ticker as { unref?: () => void }).unref?.();
  }
  return {
    touch() {
      d.last = performance.now();
    },
    stop() {
      live.delete(d);
    },
  };
}
