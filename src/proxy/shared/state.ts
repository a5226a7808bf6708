// What the workers of one Portico share in memory (--workers N ≥ 2): the limits' counters
// (shared-limits.ts), the EWMA scores (shared-ewma.ts) and the auth answer cache
// (shared-auth-cache.ts), one after the other in the one file the primary maps and passes to
// every worker (workers/shared-memory.ts).
import type { EwmaScores } from "../upstream/balancer.ts";
import type { AuthCacheStore, Limiter } from "../../kinds/types.ts";
import { createSharedAuthCache, formatSharedAuthCache, releaseAuthCacheLocks, SHARED_AUTH_CACHE_BYTES } from "./auth-cache.ts";
import { createSharedEwma, formatSharedEwma, releaseEwmaLocks, SHARED_EWMA_BYTES } from "./ewma.ts";
import { createSharedLimiter, formatSharedLimits, releaseWorker, sharedLimitsBytes, workersOf } from "./limits.ts";

/** The three regions' offsets for a table made for `workers` workers. */
function regions(workers: number): { readonly ewma: number; readonly auth: number; readonly end: number } {
  const ewma = sharedLimitsBytes(workers);
  const auth = ewma + SHARED_EWMA_BYTES;
  return { ewma, auth, end: auth + SHARED_AUTH_CACHE_BYTES };
}

/** Bytes for `workers` workers. */
export function sharedStateBytes(workers: number): number {
  return regions(workers).end;
}

/** The primary's first write into fresh (zeroed) memory of sharedStateBytes(workers). */
export function formatSharedState(mem: Uint8Array, workers: number): void {
  const r = regions(workers);
  formatSharedLimits(mem.subarray(0, r.ewma), workers);
  formatSharedEwma(mem.subarray(r.ewma, r.auth));
  formatSharedAuthCache(mem.subarray(r.auth, r.end));
}

export interface SharedState {
  readonly limiter: Limiter;
  readonly ewma: EwmaScores;
  readonly authCache: AuthCacheStore;
}

/** A worker's views of the shared state (it throws when the memory does not hold it). */
export function openSharedState(mem: Uint8Array, worker: number): SharedState {
  const r = regions(workersOf(mem));
  if (mem.byteLength < r.end) throw new Error("the shared memory is smaller than its tables");
  return {
    limiter: createSharedLimiter(mem.subarray(0, r.ewma), { worker }),
    ewma: createSharedEwma(mem.subarray(r.ewma, r.auth)),
    authCache: createSharedAuthCache(mem.subarray(r.auth, r.end)),
  };
}

/** A worker is gone (the primary, before restarting it): see shared-limits.ts's releaseWorker. */
export function releaseSharedState(mem: Uint8Array, worker: number, pid: number): void {
  const r = regions(workersOf(mem));
  releaseWorker(mem.subarray(0, r.ewma), worker, pid);
  releaseEwmaLocks(mem.subarray(r.ewma, r.auth), pid);
  releaseAuthCacheLocks(mem.subarray(r.auth, r.end), pid);
}
