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
  prev: Dog | null;
  next: Dog | null;
  linked: boolean;
}

// An intrusive doubly-linked list: insert and unlink are a few pointer writes (a JS Set's
// add+delete measured 170 ns, more than the setTimeout pair it was meant to replace).
let head: Dog | null = null;
let ticker: ReturnType<typeof setInterval> | null = null;

function unlink(d: Dog): void {
  if (!d.linked) return;
  d.linked = false;
  if (d.prev !== null) d.prev.next = d.next;
  else head = d.next;
  if (d.next !== null) d.next.prev = d.prev;
  d.prev = null;
  d.next = null;
}

function tick(): void {
  if (head === null) {
    // Idle: stop ticking until the next watchdog starts.
    if (ticker !== null) clearInterval(ticker);
    ticker = null;
    return;
  }
  const t = performance.now();
  let d: Dog | null = head;
  while (d !== null) {
    const next: Dog | null = d.next;
    if (t - d.last >= d.ms) {
      unlink(d);
      try {
        d.onFire();
      } catch {}
    }
    d = next;
  }
}

export function createWatchdog(ms: number, onFire: () => void): Watchdog {
  if (!(ms > 0) || !Number.isFinite(ms)) return { touch() {}, stop() {} };
  const d: Dog = { last: performance.now(), ms, onFire, prev: null, next: head, linked: true };
  if (head !== null) head.prev = d;
  head = d;
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
      unlink(d);
    },
  };
}
