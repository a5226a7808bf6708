// What the workers of one Portico share in memory (--workers N ≥ 2): the limits' counters
// (shared-limits.ts) and the EWMA scores (shared-ewma.ts), one after the other in the one file
// the primary maps and passes to every worker (workers/shared-memory.ts).
import type { EwmaScores } from "./balancer.ts";
import type { Limiter } from "./limits.ts";
import { createSharedEwma, formatSharedEwma, releaseEwmaLocks, SHARED_EWMA_BYTES } from "./shared-ewma.ts";
import { createSharedLimiter, formatSharedLimits, releaseWorker, sharedLimitsBytes, workersOf } from "./shared-limits.ts";

/** Bytes for `workers` workers. */
export function sharedStateBytes(workers: number): number {
  return sharedLimitsBytes(workers) + SHARED_EWMA_BYTES;
}

/** The primary's first write into fresh (zeroed) memory of sharedStateBytes(workers). */
export function formatSharedState(mem: Uint8Array, workers: number): void {
  const split = sharedLimitsBytes(workers);
  formatSharedLimits(mem.subarray(0, split), workers);
  formatSharedEwma(mem.subarray(split));
}

/** A worker's views of the shared state (it throws when the memory does not hold it). */
export function openSharedState(mem: Uint8Array, worker: number): { readonly limiter: Limiter; readonly ewma: () => EwmaScores } {
  const split = sharedLimitsBytes(workersOf(mem));
  const limiter = createSharedLimiter(mem.subarray(0, split), { worker });
  const ewma = createSharedEwma(mem.subarray(split));
  return { limiter, ewma: () => ewma };
}

/** A worker is gone (the primary, before restarting it): see releaseWorker. */
export function releaseSharedState(mem: Uint8Array, worker: number, pid: number): void {
  const split = sharedLimitsBytes(workersOf(mem));
  releaseWorker(mem.subarray(0, split), worker, pid);
  releaseEwmaLocks(mem.subarray(split), pid);
}
