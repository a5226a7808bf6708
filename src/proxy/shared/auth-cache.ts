// The `auth-cache-key` answer cache shared by every worker of one Portico (--workers N ≥ 2),
// as ingress-nginx's auth answers are cached in one proxy_cache zone (`proxy_cache_path …
// keys_zone=auth_cache:10m`, nginx.tmpl) that all nginx workers read and fill: a key's answer
// asked by one worker is not asked again by the others within auth-cache-duration.
//
// The table sits in the workers' shared file after the limits' and the EWMA scores'
// (shared-state.ts; shared-limits.ts explains the file and the bucket locks). BUCKETS buckets
// of SLOTS slots of SLOT bytes: the key's 64-bit wyhash (0 = empty), when the answer expires
// and when it was last read (Float64, the shared clock of shared-limits.ts), the payload's
// length, then the payload: the whole key and the answer as JSON. A hit compares the whole key,
// never only its hash: a cached answer lets a request through, so two keys must never share
// one. A full bucket replaces its least recently read entry (an expired one first). An answer
// whose payload does not fit a slot (a key with a long token) is kept by the worker alone
// (external-auth.ts's own LRU), as before. 8,192 entries; 16.8 MB, pages touched as used.
import { formatTableHeader, KeyHash, TABLE_HEADER, tableSeed } from "./header.ts";
import type { AuthAnswer, AuthCacheStore } from "../../kinds/types.ts";
import { lock, markUsed, USED } from "./limits.ts";

const BUCKETS = 2048;
const SLOTS = 4;
const SLOT = 2048;
/** hash (2 × Int32), expires, used (Float64), length (Int32), padding. */
const SLOT_HEAD = 32;
const MAX_PAYLOAD = SLOT - SLOT_HEAD;
const MAGIC = 0x5041_4331; // "PAC1"
const HEADER = TABLE_HEADER;
const BUCKET = 8 + SLOTS * SLOT;

/** Bytes of shared memory the cache takes (a multiple of 8). */
export const SHARED_AUTH_CACHE_BYTES = HEADER + BUCKETS * BUCKET;

export function formatSharedAuthCache(mem: Uint8Array): void {
  formatTableHeader(mem, SHARED_AUTH_CACHE_BYTES, MAGIC, "the auth cache");
}

export interface SharedAuthCacheOptions {
  /** Milliseconds, the same clock in every process; default timeOrigin + now(). */
  readonly now?: () => number;
  /** The lock owner's id; default process.pid. */
  readonly pid?: number;
}

/** The answer as the payload holds it: [key, status, copy, wwwAuthenticate]. */
type Payload = [string, number, Record<string, string | null>, string | null];

function isPayload(x: unknown): x is Payload {
  if (!Array.isArray(x) || x.length !== 4 || typeof x[0] !== "string" || typeof x[1] !== "number") return false;
  if (typeof x[2] !== "object" || x[2] === null || Array.isArray(x[2])) return false;
  for (const val of Object.values(x[2] as Record<string, unknown>)) if (val !== null && typeof val !== "string") return false;
  return x[3] === null || typeof x[3] === "string";
}

export function createSharedAuthCache(mem: Uint8Array, opts: SharedAuthCacheOptions = {}): AuthCacheStore {
  if (mem.byteOffset % 8 !== 0 || mem.byteLength < SHARED_AUTH_CACHE_BYTES) throw new Error("shared memory is too small or misaligned for the auth cache");
  const bytes = mem.subarray(0, SHARED_AUTH_CACHE_BYTES);
  const i32 = new Int32Array(mem.buffer, mem.byteOffset, SHARED_AUTH_CACHE_BYTES / 4);
  const f64 = new Float64Array(mem.buffer, mem.byteOffset, SHARED_AUTH_CACHE_BYTES / 8);
  const seed = tableSeed(i32, MAGIC, "the auth cache");
  const origin = performance.timeOrigin;
  const now = opts.now ?? (() => origin + performance.now());
  const pid = opts.pid ?? process.pid;
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const mark = { used: false };

  const kh = new KeyHash(seed, BUCKETS, BUCKET);
  const slotAt = (base: number, k: number) => base + 8 + k * SLOT;
  const matches = (s: number) => i32[s / 4] === kh.h1 && i32[s / 4 + 1] === kh.h2;

  return {
    get(key) {
      const base = kh.bucket(key);
      const t = now();
      let copy: Uint8Array | null = null;
      markUsed(i32, mark);
      lock(i32, base / 4, pid);
      try {
        for (let k = 0; k < SLOTS; k++) {
          const s = slotAt(base, k);
          if (!matches(s)) continue;
          if (f64[s / 8 + 1]! <= t) return undefined; // expired
          const len = i32[s / 4 + 6]!;
          if (!(len > 0 && len <= MAX_PAYLOAD)) return undefined;
          f64[s / 8 + 2] = t;
          copy = bytes.slice(s + SLOT_HEAD, s + SLOT_HEAD + len);
          break;
        }
      } finally {
        Atomics.store(i32, base / 4, 0);
      }
      if (copy === null) return undefined;
      let p: unknown;
      try {
        p = JSON.parse(decoder.decode(copy));
      } catch {
        return undefined;
      }
      // The whole key, not only its hash: another key's answer must never pass a request.
      if (!isPayload(p) || p[0] !== key) return undefined;
      return { status: p[1], copy: p[2], wwwAuthenticate: p[3], setCookies: [] };
    },
    set(key, answer, ttlMs) {
      // Answers with Set-Cookie are never cached (external-auth.ts, cacheable()).
      if (answer.setCookies.length > 0 || !(ttlMs > 0)) return false;
      const payload = encoder.encode(JSON.stringify([key, answer.status, answer.copy, answer.wwwAuthenticate] satisfies Payload));
      if (payload.length > MAX_PAYLOAD) return false;
      const base = kh.bucket(key);
      const t = now();
      markUsed(i32, mark);
      lock(i32, base / 4, pid);
      try {
        let s = -1;
        let free = -1;
        let oldest = -1;
        let oldestUsed = Infinity;
        for (let k = 0; k < SLOTS; k++) {
          const at = slotAt(base, k);
          if (matches(at)) {
            s = at;
            break;
          }
          if (i32[at / 4 + 1] === 0 || f64[at / 8 + 1]! <= t) {
            if (free < 0) free = at; // empty or expired: taken first
          } else if (f64[at / 8 + 2]! < oldestUsed) {
            oldestUsed = f64[at / 8 + 2]!;
            oldest = at;
          }
        }
        if (s < 0) s = free >= 0 ? free : oldest;
        // The hash last, after the payload: a reader that finds the hash finds its payload
        // (both under the lock anyway; this keeps a writer that died mid-way from leaving a
        // half-written entry under a valid hash).
        i32[s / 4 + 1] = 0;
        bytes.set(payload, s + SLOT_HEAD);
        i32[s / 4 + 6] = payload.length;
        f64[s / 8 + 1] = t + ttlMs;
        f64[s / 8 + 2] = t;
        i32[s / 4] = kh.h1;
        i32[s / 4 + 1] = kh.h2;
        return true;
      } finally {
        Atomics.store(i32, base / 4, 0);
      }
    },
  };
}

/** A gone worker's lock on a bucket of the cache. */
export function releaseAuthCacheLocks(mem: Uint8Array, pid: number): void {
  const i32 = new Int32Array(mem.buffer, mem.byteOffset, SHARED_AUTH_CACHE_BYTES / 4);
  if (Atomics.load(i32, USED) === 0) return;
  for (let b = 0; b < BUCKETS; b++) Atomics.compareExchange(i32, (HEADER + b * BUCKET) / 4, pid, 0);
}
