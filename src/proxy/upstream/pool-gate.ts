// Holding plain-HTTP upstream requests past Bun's keep-alive pool (docs/design.md, "Performance
// notes", "Past 64 requests in flight"). Bun's fetch parks idle upstream connections in a fixed pool
// of 64 slots per process (oven-sh/bun src/http/HTTPContext: `pool_size`/`POOL_SIZE`, a
// compile-time constant; `Bun.FetchSession`'s `keepAlive.maxIdleSockets` does not raise it,
// measured on 1.4.5). With more requests in flight than that, a connection freed while the
// pool is full is closed and a later request opens a new one (bench/h2-pool.ts: about half the
// requests at 160 in flight). So at most POOL_SLOTS plain-HTTP requests hold an upstream
// connection at once, and the next one waits for one of them to end, which leaves a pooled
// connection for it.
//
// Holding trades concurrency for CPU, which pays only while the process's CPU is the
// bottleneck: then the request would have waited for the CPU anyway, and a connection per
// request is CPU it does not have. While the process has idle time, the requests in flight are
// waiting on the pods, and holding would cap the process at POOL_SLOTS / pod latency (64 at
// 5 ms: 12.8k req/s). So a request past the cap waits only while the process was busy for at
// least BUSY of the last SAMPLE_MS (processBusy: its CPU time plus its event-loop thread's
// wait for a CPU), and otherwise goes at once, as without the gate; the timer asks again every
// SAMPLE_MS while requests wait, and lets them all go once the process has idle time.
//
// A plain cap would also let requests that hold their connection for long (a slow pod, a long
// poll, a big download to a slow client) stall every other backend's requests. So:
// - A request waits at most MAX_WAIT_MS. When the oldest one has waited that long, the slots
//   held now are taken to be slow: they are forgotten (a new epoch; their ends no longer free
//   anything) and waiting requests go at once, up to POOL_SLOTS again. A slow request therefore
//   costs the others at most one MAX_WAIT_MS per POOL_SLOTS slow requests.
// - One shared timer for the whole queue, armed only while something waits (every SAMPLE_MS,
//   a schedstat read of about 6 µs: under 0.1% of a core). Under the cap a
//   request takes a slot with two field writes: no promise, timer, closure or clock read.
// Only `fetch` to `http://` upstreams passes here, the pool measured: Bun keeps HTTPS
// connections of a custom TLS configuration (Portico's `tls.serverName`) in a context of that
// configuration with its own pool (HTTPContext's custom SSL contexts; not measured here), and
// gRPC and h2c go over node:http2 (grpc.ts).
import { readFileSync } from "node:fs";

/** Bun's keep-alive pool size for fetch (HTTPContext's `pool_size`, 1.4.5). */
export const POOL_SLOTS = 64;
/**
 * Longest wait for a slot, in ms. Above what a queue of fast requests waits on a saturated
 * core (96 waiting at 5-10k req/s is 10-20 ms), small beside a slow pod's own latency.
 */
export const MAX_WAIT_MS = 50;

/** Share of the last sample the process was busy (see processBusy). */
export const BUSY = 0.9;
/** How often, at most, the process's load is read (only while requests are past the cap). */
export const SAMPLE_MS = 10;

/**
 * Whether the process was busy for at least BUSY of the time since the previous call: the CPU
 * time of all its threads (process.cpuUsage: Bun's fetch runs on its own HTTP thread, and when
 * both share a core the event-loop thread sleeps while that one works) plus the time its
 * event-loop thread spent runnable but waiting for a CPU (Linux /proc/thread-self/schedstat,
 * second field, ns: a core shared with other work). Where that cannot be read the answer is
 * always false, and the gate never holds.
 */
export function processBusy(): () => boolean {
  let at = 0;
  let used = -1;
  let busy = false;
  return () => {
    const now = performance.now();
    if (now - at < SAMPLE_MS) return busy;
    let s: string;
    try {
      s = readFileSync("/proc/thread-self/schedstat", "latin1");
    } catch {
      return false;
    }
    const a = s.indexOf(" ");
    const waited = Number(s.slice(a + 1, s.indexOf(" ", a + 1)));
    if (!Number.isFinite(waited)) return false;
    const cpu = process.cpuUsage();
    const ms = (cpu.user + cpu.system) / 1000 + waited / 1e6;
    busy = used >= 0 && ms - used >= BUSY * (now - at);
    used = ms;
    at = now;
    return busy;
  };
}

/** What holds a slot: the request (proxy/pipeline/context.ts Exchange). -1: none. */
export interface SlotHolder {
  slot: number;
}

class Waiter {
  constructor(
    readonly holder: SlotHolder,
    readonly resolve: () => void,
    readonly since: number,
  ) {}
}

export class PoolGate {
  /** Slots taken in this epoch. */
  private active = 0;
  private epoch = 0;
  /** FIFO: `queue[head..]` wait, oldest first. */
  private queue: Waiter[] = [];
  private head = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly slots: number = POOL_SLOTS,
    private readonly maxWaitMs: number = MAX_WAIT_MS,
    /** Whether waiting pays now (processBusy); asked only past the cap and while someone waits. */
    private readonly saturated: () => boolean = processBusy(),
    /** How often the timer asks it while someone waits. */
    private readonly checkMs: number = SAMPLE_MS,
  ) {}

  /** Requests waiting for a slot (tests and metrics). */
  get waiting(): number {
    return this.queue.length - this.head;
  }
  /** Slots held in the current epoch (tests). */
  get held(): number {
    return this.active;
  }

  /**
   * Takes a slot for `h`: null when one was free or waiting would not pay (synchronously), else
   * a promise that resolves once one is handed over or the wait ran out. Either way `h` holds a slot afterwards and must
   * give it back with release().
   */
  acquire(h: SlotHolder): Promise<void> | null {
    if (this.active < this.slots && this.head === this.queue.length) {
      this.active++;
      h.slot = this.epoch;
      return null;
    }
    // Past the cap while the process has idle time: waiting would only add latency, so this
    // request goes, and so does everyone still waiting (oldest first).
    if (!this.saturated()) {
      this.releaseAll();
      this.active++;
      h.slot = this.epoch;
      return null;
    }
    return new Promise<void>((resolve) => {
      this.queue.push(new Waiter(h, resolve, performance.now()));
      if (this.timer === null) this.arm(this.maxWaitMs);
    });
  }

  /** Gives `h`'s slot back (once; a holder without one is ignored): the oldest waiter gets it. */
  release(h: SlotHolder): void {
    const e = h.slot;
    if (e < 0) return;
    h.slot = -1;
    // A slot of a forgotten epoch was already given up for (expire below).
    if (e !== this.epoch) return;
    if (this.head < this.queue.length) this.handTo(this.next());
    else this.active--;
  }

  private next(): Waiter {
    const w = this.queue[this.head] as Waiter;
    this.queue[this.head++] = undefined as unknown as Waiter;
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    return w;
  }

  private handTo(w: Waiter): void {
    w.holder.slot = this.epoch;
    w.resolve();
  }

  private arm(ms: number): void {
    this.timer = setTimeout(this.expire, Math.max(1, Math.min(ms, this.checkMs)));
    // Whoever waits holds a client connection that keeps the process alive; the timer never does.
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** Lets every waiter go, oldest first, past the cap. */
  private releaseAll(): void {
    while (this.head < this.queue.length) {
      this.active++;
      this.handTo(this.next());
    }
  }

  /**
   * The shared timer, every checkMs while something waits: if the process had idle time, the
   * waiters go (the pods are what they wait on now); if the oldest has waited MAX_WAIT_MS, the
   * held slots are forgotten.
   */
  private readonly expire = (): void => {
    this.timer = null;
    if (this.head === this.queue.length) return;
    if (!this.saturated()) {
      this.releaseAll();
      return;
    }
    const now = performance.now();
    const oldest = (this.queue[this.head] as Waiter).since;
    const left = oldest + this.maxWaitMs - now;
    if (left > 0) {
      this.arm(left);
      return;
    }
    // The held slots did not free one in time: forget them and start counting again.
    this.epoch++;
    this.active = 0;
    while (this.head < this.queue.length && this.active < this.slots) {
      this.active++;
      this.handTo(this.next());
    }
    if (this.head < this.queue.length) this.arm(this.maxWaitMs);
  };
}

/** The process's gate (Bun's pool is per process, whatever the listener). */
export let upstreamGate = new PoolGate();

/** Replaces the process's gate (tests: one that always holds, whatever the machine's load). */
export function setUpstreamGate(g: PoolGate): void {
  upstreamGate = g;
}
