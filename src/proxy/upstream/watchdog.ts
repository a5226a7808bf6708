// Cheap per-request timers. touch() only stores a timestamp, and no watchdog owns a timer: one
// shared interval per process checks every live watchdog each TICK_MS. A setTimeout/clearTimeout
// pair per request (the response deadline, the body-idle timer) cost ~4% of a small proxied
// request in the profile; linking a node into a list costs a fraction of that.
// The same sweep also notices a client that left (guardRequest): polling `signal.aborted` there
// replaced an abort listener per request (addEventListener + its closure, ~2% of a request).
// Consequence: a watchdog fires, and a departure is noticed, up to TICK_MS late, never early.

/** What a request guard aborts: an AbortController, or the request's control (forward.ts). */
export interface Abortable {
  abort(reason?: unknown): void;
}

/** What a deadline calls when it fires: a function, or an object's fire() (no closure to make). */
export type OnFire = (() => void) | { fire(): void };

export interface Watchdog {
  touch(): void;
  stop(): void;
}

/** Granularity of every watchdog (deadlines are seconds in practice; tests allow the slack). */
export const TICK_MS = 50;

// One class for every kind of node (methods on the prototype: no closures per request).
// An intrusive doubly-linked list: insert and unlink are a few pointer writes (a JS Set's
// add+delete measured 170 ns, more than the setTimeout pair it was meant to replace).
class Dog implements Watchdog {
  last: number;
  prev: Dog | null = null;
  next: Dog | null = null;
  linked = true;

  constructor(
    readonly ms: number,
    readonly onFire: OnFire | null,
    /** guardRequest: aborted when either signal is. */
    readonly client: AbortSignal | null,
    readonly halt: AbortSignal | null,
    readonly ac: Abortable | null,
  ) {
    // A request guard has no deadline: no clock read per request for it.
    this.last = client === null ? performance.now() : 0;
  }

  touch(): void {
    this.last = performance.now();
  }

  stop(): void {
    unlink(this);
  }

  /** Whether the node is due at time t (it is unlinked by the caller before firing). */
  due(t: number): boolean {
    if (this.client !== null) return this.client.aborted || (this.halt !== null && this.halt.aborted);
    return t - this.last >= this.ms;
  }

  fire(): void {
    if (this.ac !== null) {
      const client = this.client as AbortSignal;
      this.ac.abort(client.aborted ? client.reason : this.halt?.reason);
      return;
    }
    const f = this.onFire;
    if (typeof f === "function") f();
    else f?.fire();
  }
}

let head: Dog | null = null;
let ticker: ReturnType<typeof setInterval> | null = null;

const NOOP: Watchdog = { touch() {}, stop() {} };

function unlink(d: Dog): void {
  if (!d.linked) return;
  d.linked = false;
  if (d.prev !== null) d.prev.next = d.next;
  else head = d.next;
  if (d.next !== null) d.next.prev = d.prev;
  d.prev = null;
  d.next = null;
}

function link(d: Dog): Dog {
  d.next = head;
  if (head !== null) head.prev = d;
  head = d;
  if (ticker === null) {
    ticker = setInterval(tick, TICK_MS);
    // The ticker alone never keeps the process alive: whoever waits on a watchdog holds a
    // socket or a promise that does.
    (ticker as { unref?: () => void }).unref?.();
  }
  return d;
}

/** Check every node now (the ticker does this each TICK_MS). */
export function sweep(): void {
  const t = performance.now();
  // Due nodes are found first and fired after: a callback may stop other nodes (finish() stops
  // the request's guard), which must then neither fire nor cut the walk short.
  let due: Dog[] | null = null;
  for (let d: Dog | null = head; d !== null; d = d.next) if (d.due(t)) (due ??= []).push(d);
  if (due === null) return;
  for (const d of due) {
    if (!d.linked) continue; // stopped by an earlier callback of this sweep
    unlink(d);
    try {
      d.fire();
    } catch {}
  }
}

function tick(): void {
  if (head === null) {
    // Idle: stop ticking until the next watchdog starts.
    if (ticker !== null) clearInterval(ticker);
    ticker = null;
    return;
  }
  sweep();
}

/** Calls onFire once `ms` pass without touch() (never for a zero or non-finite `ms`). */
export function createWatchdog(ms: number, onFire: OnFire): Watchdog {
  if (!(ms > 0) || !Number.isFinite(ms)) return NOOP;
  return link(new Dog(ms, onFire, null, null, null));
}

/**
 * Aborts `ac` (with the signal's reason) once `client` or `halt` is aborted; stop() when the
 * request is done. Bun does not fire a request's signal after its response, so a guard that is
 * not stopped costs one check per tick and is never a false abort.
 */
export function guardRequest(client: AbortSignal, halt: AbortSignal, ac: Abortable): Watchdog {
  return link(new Dog(Infinity, null, client, halt, ac));
}
