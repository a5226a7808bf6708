// One compile per burst of changes: run after `holdoffMs` without a trigger,
// but never later than `maxDelayMs` after the burst's first trigger, so a steady stream of
// EndpointSlice updates cannot postpone routing forever. With `leading`, a trigger that finds
// the coalescer quiet (no run pending, none ended within `holdoffMs`) runs on the next tick
// instead: an isolated change does not wait, and triggers in the same tick (a chunk of watch
// events) join that run. Runs stay at least `holdoffMs` apart either way (measured from the
// end of the previous run). The clock is injected: store/ never touches timers itself (the
// import-direction test enforces it). The holdoff and ceiling chosen: docs/design.md "Control loop".

export interface CoalescerClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface CoalescerOptions {
  holdoffMs: number;
  maxDelayMs: number;
  clock: CoalescerClock;
  run: () => void;
  /** Run at once (next tick) when quiet; default false (trailing edge only). */
  leading?: boolean;
}

export class Coalescer {
  private burstStart: number | null = null;
  /** When the pending run is due; only ever moves later within a burst. */
  private dueAt = 0;
  private timer: unknown = null;
  private disposed = false;
  /** The pending run is a leading one: it is due now and later triggers do not move it. */
  private leadingPending = false;
  /** When the last run ended (null: never ran). */
  private lastRunEnd: number | null = null;
  private running = false;

  constructor(private readonly opts: CoalescerOptions) {
    if (!(opts.holdoffMs >= 0) || !(opts.maxDelayMs >= 0)) throw new RangeError("holdoffMs and maxDelayMs must be >= 0");
  }

  /** Whether a run is scheduled. */
  get pending(): boolean {
    return this.burstStart !== null;
  }

  trigger(): void {
    if (this.disposed) return;
    const now = this.opts.clock.now();
    if (this.burstStart === null) {
      this.burstStart = now;
      const quiet = !this.running && (this.lastRunEnd === null || now - this.lastRunEnd >= this.opts.holdoffMs);
      if (this.opts.leading && quiet) {
        this.leadingPending = true;
        this.dueAt = now;
        this.arm(0);
        return;
      }
    } else if (this.leadingPending) return;
    this.dueAt = Math.min(now + this.opts.holdoffMs, this.burstStart + this.opts.maxDelayMs);
    // One armed timer per burst: a trigger only moves dueAt, and an early wake-up re-arms
    // (cheaper than clear+set on each of thousands of events in a relist).
    if (this.timer === null) this.arm(this.dueAt - now);
  }

  /** Run now if a run is pending (shutdown, tests). */
  flush(): void {
    if (this.burstStart === null) return;
    this.fire();
  }

  dispose(): void {
    this.disposed = true;
    this.disarm();
    this.burstStart = null;
    this.leadingPending = false;
  }

  private arm(ms: number): void {
    this.timer = this.opts.clock.setTimeout(() => this.wake(), Math.max(0, ms));
  }

  private disarm(): void {
    if (this.timer !== null) this.opts.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  private wake(): void {
    this.timer = null;
    if (this.disposed || this.burstStart === null) return;
    const wait = this.dueAt - this.opts.clock.now();
    if (wait > 0) this.arm(wait);
    else this.fire();
  }

  private fire(): void {
    this.disarm();
    this.burstStart = null;
    this.leadingPending = false;
    // State is reset before running: a trigger from inside run() starts the next burst,
    // and a throwing run() cannot wedge the coalescer.
    this.running = true;
    try {
      this.opts.run();
    } finally {
      this.running = false;
      this.lastRunEnd = this.opts.clock.now();
    }
  }
}
