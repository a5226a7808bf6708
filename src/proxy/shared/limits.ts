// The limits' counters shared by every worker of one Portico (--workers N ≥ 2; docs/design.md,
// "Limits"), so a client gets the same number of requests and connections from the pod as from
// a single process, as ingress-nginx's nginx workers share each limit_req / limit_conn zone in
// shared memory. The arithmetic is limits.ts's (nginx's leaky bucket, nodelay); only where the
// state lives differs.
//
// The memory is a file mapped MAP_SHARED by every worker (workers/shared-memory.ts makes it).
// Bun 1.4.5's Bun.mmap gives a plain ArrayBuffer over it, and Atomics on an Int32Array view of
// it are the CPU's atomic instructions across processes (measured: two processes each doing
// 20 M Atomics.add lose none; plain `+=` loses half).
//
// Layout: a header, then BUCKETS buckets of SLOTS slots. A key (zone × client address) is a
// 64-bit wyhash under a per-pod random seed (clients cannot aim at a bucket), its low bits pick
// the bucket. Each bucket has one lock, an Int32 holding the pid of the process inside it, taken
// with compareExchange and dropped with store (seq_cst on both: what the holder wrote is seen
// by the next holder). The critical sections are a few dozen instructions. A process that dies
// holding a lock cannot hang its siblings: the primary force-unlocks every lock holding the
// dead pid before it restarts the worker (as nginx's master does with ngx_shmtx_force_unlock
// for a crashed worker), and a waiter that spins long checks the holder is still alive.
//
// A slot: the key's hash (0 = empty), when it was last seen, the two rates' excess and last
// time (as limits.ts's Bucket), and one connection count per worker. Counting connections per
// worker lets the primary zero a dead worker's column: its requests died with it, and nothing
// else would ever give their slots back. A key with connections in flight is never evicted.
//
// Bounds: BUCKETS × SLOTS = 131,072 keys, twice limits.ts's 65,536-key LRU. A new key takes a
// free slot of its bucket, else the bucket's least recently seen key without connections
// (forgotten; it starts again with an empty bucket, as with the LRU). With 65,536 active keys,
// about 2% of buckets (8 slots, 4 keys on average) overflow and forget their oldest. If every
// slot of the bucket holds connections the request is refused (the key cannot be counted; nginx
// also refuses a request when its zone has no room). Memory: 8 + SLOTS × (48 + 2 × workers,
// rounded to 8) bytes per bucket: 7.5 MB with 2 workers, pages touched only as keys are used.
//
// Clock: a slot's times must mean the same in every process. performance.now() starts at each
// process's start, so times are performance.timeOrigin + performance.now() (the wall clock when
// the process started, then monotonic): two workers disagree only by a wall-clock step between
// their starts, and a time before the slot's own is taken as no time passed (as limits.ts does).
import { formatTableHeader, KeyHash, TABLE_HEADER, tableSeed } from "./header.ts";
import { excessAfter } from "../../kinds/limits.ts";
import type { Limiter } from "../../kinds/types.ts";

export const BUCKETS = 16_384;
export const SLOTS = 8;
const MAGIC = 0x504c_4d31; // "PLM1"
/** Header: magic, workers, seed (two Int32), then padding to 64 bytes. */
const HEADER = TABLE_HEADER;
/** Fixed part of a slot: hash (2 × Int32), seen, e0, t0, e1, t1 (Float64). */
const SLOT_FIXED = 48;
/** Spins before a waiter checks that the lock's holder is alive (~1 ms). */
const SPINS = 100_000;
/** One worker's connection count on a key is a Uint16. */
const MAX_PER_WORKER = 0xffff;

const slotBytes = (workers: number) => SLOT_FIXED + Math.ceil((2 * workers) / 8) * 8;
const bucketBytes = (workers: number) => 8 + SLOTS * slotBytes(workers);

/** Bytes of shared memory the table needs for `workers` workers. */
export function sharedLimitsBytes(workers: number): number {
  return HEADER + BUCKETS * bucketBytes(workers);
}

/** The primary's first write into fresh (zeroed) memory: the geometry and the hash seed. */
export function formatSharedLimits(mem: Uint8Array, workers: number): void {
  formatTableHeader(mem, sharedLimitsBytes(workers), MAGIC, "the limits table", (i32) => void (i32[1] = workers));
}

/** The number of workers a formatted table was made for. */
export function workersOf(mem: Uint8Array): number {
  return viewsOf(mem).workers;
}

interface Views {
  readonly i32: Int32Array;
  readonly f64: Float64Array;
  readonly u16: Uint16Array;
  readonly workers: number;
  readonly slotBytes: number;
  readonly bucketBytes: number;
}

function viewsOf(mem: Uint8Array): Views {
  if (mem.byteOffset % 8 !== 0) throw new Error("shared memory is not 8-byte aligned");
  const head = new Int32Array(mem.buffer, mem.byteOffset, HEADER / 4);
  if (Atomics.load(head, 0) !== MAGIC) throw new Error("shared memory does not hold a limits table");
  const workers = head[1]!;
  if (!(workers >= 1 && workers <= 256) || mem.byteLength < HEADER + BUCKETS * bucketBytes(workers)) throw new Error("the limits table in shared memory has a bad size");
  const n = sharedLimitsBytes(workers);
  return {
    i32: new Int32Array(mem.buffer, mem.byteOffset, n / 4),
    f64: new Float64Array(mem.buffer, mem.byteOffset, n / 8),
    u16: new Uint16Array(mem.buffer, mem.byteOffset, n / 2),
    workers,
    slotBytes: slotBytes(workers),
    bucketBytes: bucketBytes(workers),
  };
}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists (another user's process reusing the pid): keep waiting for the primary.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
};

/**
 * The header's Int32 set once any process has used the table (each table's header has it).
 * Until then a gone worker left nothing to release there, and the primary does not scan it:
 * reading a page of the file allocates it, and a pod that never uses a table keeps it empty.
 */
export const USED = 4;

/** Mark the table used, once per process (`state.used` is that process's memory of it). */
export function markUsed(i32: Int32Array, state: { used: boolean }): void {
  if (state.used) return;
  state.used = true;
  Atomics.store(i32, USED, 1);
}

/** Take a bucket's lock (its Int32 index) for `pid` (shared-ewma.ts's buckets use it too). */
export function lock(i32: Int32Array, at: number, pid: number): void {
  for (;;) {
    for (let n = 0; n < SPINS; n++) {
      if (Atomics.load(i32, at) === 0 && Atomics.compareExchange(i32, at, 0, pid) === 0) return;
    }
    // Long: a holder that died before the primary noticed is unlocked here.
    const holder = Atomics.load(i32, at);
    if (holder !== 0 && !isAlive(holder)) Atomics.compareExchange(i32, at, holder, 0);
  }
}

export interface SharedLimiterOptions {
  /** This process's column for connection counts: the worker id (0 ≤ worker < workers). */
  readonly worker: number;
  /** Milliseconds, the same clock in every process; default timeOrigin + now(). Tests inject their own. */
  readonly now?: () => number;
  /** The lock owner's id; default process.pid (tests with several limiters in one process pass their own). */
  readonly pid?: number;
}

/** A Limiter over the shared table (same contract as limits.ts's createLimiter). */
export function createSharedLimiter(mem: Uint8Array, opts: SharedLimiterOptions): Limiter {
  const { i32, f64, u16, workers, slotBytes: sb, bucketBytes: bb } = viewsOf(mem);
  const me = opts.worker;
  if (!(Number.isInteger(me) && me >= 0 && me < workers)) throw new Error(`worker ${me} has no column in the shared limits table (${workers} workers)`);
  const pid = opts.pid ?? process.pid;
  const origin = performance.timeOrigin;
  const now = opts.now ?? (() => origin + performance.now());
  const seed = tableSeed(i32, MAGIC, "a limits table");
  const mark = { used: false };

  // Byte offsets → view indexes: a bucket's lock is at i32[base / 4]; a slot at `s` has its
  // hash at i32[s/4], i32[s/4 + 1], seen/e0/t0/e1/t1 at f64[s/8 + 1 … 5], counts at u16[s/2 + 24 + w].
  const kh = new KeyHash(seed, BUCKETS, bb);

  function connsOf(s: number): number {
    let n = 0;
    const at = s / 2 + 24;
    for (let w = 0; w < workers; w++) n += u16[at + w]!;
    return n;
  }

  /** The key's slot offset in the locked bucket, claiming one if it has none; -1: no room. */
  function slotFor(base: number, t: number): { s: number; fresh: boolean } | null {
    let free = -1;
    let oldest = -1;
    let oldestSeen = Infinity;
    for (let k = 0; k < SLOTS; k++) {
      const s = base + 8 + k * sb;
      const a = i32[s / 4]!;
      const b = i32[s / 4 + 1]!;
      if (a === kh.h1 && b === kh.h2) return { s, fresh: false };
      if (b === 0) {
        if (free < 0) free = s;
        continue;
      }
      const seen = f64[s / 8 + 1]!;
      if (seen < oldestSeen && connsOf(s) === 0) {
        oldestSeen = seen;
        oldest = s;
      }
    }
    const s = free >= 0 ? free : oldest;
    if (s < 0) return null;
    i32[s / 4] = kh.h1;
    i32[s / 4 + 1] = kh.h2;
    f64[s / 8 + 1] = t;
    f64[s / 8 + 2] = 0;
    f64[s / 8 + 3] = -1;
    f64[s / 8 + 4] = 0;
    f64[s / 8 + 5] = -1;
    // A reused slot's connection counts are all 0 (only such a slot is evicted).
    return { s, fresh: true };
  }

  return {
    admit(key, first, second) {
      const t = Math.floor(now());
      const base = kh.bucket(key);
      const at = base / 4;
      markUsed(i32, mark);
      lock(i32, at, pid);
      try {
        const found = slotFor(base, t);
        if (found === null) return false;
        const { s, fresh } = found;
        const f = s / 8;
        f64[f + 1] = t;
        if (fresh) {
          if (first) f64[f + 3] = t;
          if (second) f64[f + 5] = t;
          return true;
        }
        const e0 = first ? excessAfter(f64[f + 2]!, f64[f + 3]!, first, t) : 0;
        if (first && e0 > first.burst) return false;
        const e1 = second ? excessAfter(f64[f + 4]!, f64[f + 5]!, second, t) : 0;
        if (second && e1 > second.burst) return false;
        if (first) {
          f64[f + 2] = e0;
          f64[f + 3] = t;
        }
        if (second) {
          f64[f + 4] = e1;
          f64[f + 5] = t;
        }
        return true;
      } finally {
        Atomics.store(i32, at, 0);
      }
    },
    acquire(key, max) {
      const t = Math.floor(now());
      const base = kh.bucket(key);
      const at = base / 4;
      const mine = { h1: kh.h1, h2: kh.h2 };
      let s = -1;
      let col = -1;
      markUsed(i32, mark);
      lock(i32, at, pid);
      try {
        const found = slotFor(base, t);
        if (found === null) return null;
        s = found.s;
        f64[s / 8 + 1] = t;
        col = s / 2 + 24 + me;
        if (connsOf(s) >= max || u16[col]! >= MAX_PER_WORKER) return null;
        u16[col] = u16[col]! + 1;
      } finally {
        Atomics.store(i32, at, 0);
      }
      let held = true;
      return () => {
        if (!held) return;
        held = false;
        lock(i32, at, pid);
        try {
          // The slot is still ours: a key with connections in flight is never evicted.
          if (i32[s / 4] === mine.h1 && i32[s / 4 + 1] === mine.h2 && u16[col]! > 0) u16[col] = u16[col]! - 1;
        } finally {
          Atomics.store(i32, at, 0);
        }
      };
    },
    get sizes() {
      let rates = 0;
      let connections = 0;
      for (let b = 0; b < BUCKETS; b++) {
        for (let k = 0; k < SLOTS; k++) {
          const s = HEADER + b * bb + 8 + k * sb;
          if (i32[s / 4 + 1] === 0) continue;
          rates++;
          if (connsOf(s) > 0) connections++;
        }
      }
      return { rates, connections };
    },
  };
}

/**
 * A worker process is gone (the primary calls this before starting its successor): give back
 * the connections it counted, which died with it, and free any bucket lock it held.
 */
export function releaseWorker(mem: Uint8Array, worker: number, pid: number): void {
  const { i32, u16, workers, slotBytes: sb, bucketBytes: bb } = viewsOf(mem);
  if (worker < 0 || worker >= workers || Atomics.load(i32, USED) === 0) return;
  for (let b = 0; b < BUCKETS; b++) {
    const base = HEADER + b * bb;
    Atomics.compareExchange(i32, base / 4, pid, 0);
    for (let k = 0; k < SLOTS; k++) {
      const col = (base + 8 + k * sb) / 2 + 24 + worker;
      // Only the dead worker wrote this column; readers read it under the bucket lock.
      if (u16[col] !== 0) Atomics.store(u16, col, 0);
    }
  }
}
