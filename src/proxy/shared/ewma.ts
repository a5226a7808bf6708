// `load-balance: ewma` scores shared by every worker of one Portico (--workers N ≥ 2), as
// ingress-nginx's nginx workers share the balancer_ewma and balancer_ewma_last_touched_at
// dictionaries (lua_shared_dict in nginx.tmpl; ewma.lua reads and writes them): a pod one
// worker found slow is avoided by every worker, not learnt again by each. The arithmetic is
// balancer.ts's; only where the scores live differs.
//
// The table sits in the same shared file as the limits' (shared-limits.ts explains the file,
// the bucket locks and why a dead holder cannot hang the others). Layout: a header (magic,
// seed), then BUCKETS buckets of SLOTS slots: the endpoint's 64-bit wyhash (0 = empty), its
// score and when it was last moved (Float64). 16,384 endpoints, more than balancer.ts's bound
// of 10,000 per process; a full bucket forgets its least recently moved score (one untouched
// for long has decayed to ~0 anyway). 400 KB.
//
// Times: the balancer's clock is performance.now(), which starts with each process; the
// table stores origin + t (origin: performance.timeOrigin) so every worker reads the same
// instant (wall clock at its start, then monotonic; shared-limits.ts, "Clock").
import { formatTableHeader, KeyHash, TABLE_HEADER, tableSeed } from "./header.ts";
import { decayedEwma, EWMA_DECAY_MS, type EwmaScores } from "../upstream/balancer.ts";
import { lock, markUsed, USED } from "./limits.ts";

const BUCKETS = 1024;
const SLOTS = 16;
const MAGIC = 0x5045_5731; // "PEW1"
const HEADER = TABLE_HEADER;
const SLOT = 24;
const BUCKET = 8 + SLOTS * SLOT;

/** Bytes of shared memory the scores take (a multiple of 8). */
export const SHARED_EWMA_BYTES = HEADER + BUCKETS * BUCKET;

/** The primary's first write into fresh (zeroed) memory. */
export function formatSharedEwma(mem: Uint8Array): void {
  formatTableHeader(mem, SHARED_EWMA_BYTES, MAGIC, "the EWMA scores");
}

export interface SharedEwmaOptions {
  /** Added to the balancer's times to make them the same instant in every process; default performance.timeOrigin. */
  readonly origin?: number;
  /** The lock owner's id; default process.pid (tests with several stores in one process pass their own). */
  readonly pid?: number;
}

export function createSharedEwma(mem: Uint8Array, opts: SharedEwmaOptions = {}): EwmaScores {
  if (mem.byteOffset % 8 !== 0 || mem.byteLength < SHARED_EWMA_BYTES) throw new Error("shared memory is too small or misaligned for the EWMA scores");
  const i32 = new Int32Array(mem.buffer, mem.byteOffset, SHARED_EWMA_BYTES / 4);
  const f64 = new Float64Array(mem.buffer, mem.byteOffset, SHARED_EWMA_BYTES / 8);
  const seed = tableSeed(i32, MAGIC, "the EWMA scores");
  const origin = opts.origin ?? performance.timeOrigin;
  const pid = opts.pid ?? process.pid;
  const mark = { used: false };

  const kh = new KeyHash(seed, BUCKETS, BUCKET);
  /** The key's slot offset in the locked bucket, or -1. */
  function find(base: number): number {
    for (let k = 0; k < SLOTS; k++) {
      const s = base + 8 + k * SLOT;
      if (i32[s / 4] === kh.h1 && i32[s / 4 + 1] === kh.h2) return s;
      if (i32[s / 4 + 1] === 0) return -1; // slots fill in order and are only ever replaced
    }
    return -1;
  }
  /** A slot for a new key: the first empty one, else the least recently moved. */
  function claim(base: number): number {
    let oldest = -1;
    let oldestAt = Infinity;
    for (let k = 0; k < SLOTS; k++) {
      const s = base + 8 + k * SLOT;
      if (i32[s / 4 + 1] === 0) return s;
      const at = f64[s / 8 + 2]!;
      if (at < oldestAt) {
        oldestAt = at;
        oldest = s;
      }
    }
    return oldest;
  }
  function put(s: number, score: number, at: number): void {
    i32[s / 4] = kh.h1;
    i32[s / 4 + 1] = kh.h2;
    f64[s / 8 + 1] = score;
    f64[s / 8 + 2] = at;
  }
  /** Run `f` on the key's slot (-1: none) under its bucket's lock. */
  function locked<T>(key: string, f: (s: number, base: number) => T): T {
    const base = kh.bucket(key);
    markUsed(i32, mark);
    lock(i32, base / 4, pid);
    try {
      return f(find(base), base);
    } finally {
      Atomics.store(i32, base / 4, 0);
    }
  }

  return {
    decayed(authority, t) {
      const now = origin + t;
      return locked(authority, (s) => (s < 0 ? 0 : f64[s / 8 + 1]! * Math.exp(-Math.max(0, now - f64[s / 8 + 2]!) / EWMA_DECAY_MS)));
    },
    raw(authority) {
      return locked(authority, (s) => (s < 0 ? NaN : f64[s / 8 + 1]!));
    },
    seed(authority, score, t) {
      locked(authority, (s, base) => {
        if (s < 0) put(claim(base), score, origin + t);
      });
    },
    observe(authority, ms, t) {
      const now = origin + t;
      locked(authority, (s, base) => {
        if (s < 0) put(claim(base), ms, now);
        else put(s, decayedEwma(f64[s / 8 + 1]!, f64[s / 8 + 2]!, ms, now), now);
      });
    },
  };
}

/** A gone worker's lock on a bucket of the scores (shared-limits.ts's releaseWorker does the same for the limits). */
export function releaseEwmaLocks(mem: Uint8Array, pid: number): void {
  const i32 = new Int32Array(mem.buffer, mem.byteOffset, SHARED_EWMA_BYTES / 4);
  if (Atomics.load(i32, USED) === 0) return;
  for (let b = 0; b < BUCKETS; b++) Atomics.compareExchange(i32, (HEADER + b * BUCKET) / 4, pid, 0);
}
