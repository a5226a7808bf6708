// Exponential back-off with jitter for list/watch and other retried API calls.

export interface BackoffParams {
  readonly backoffInitialMs: number;
  readonly backoffMaxMs: number;
  random(): number;
}

/** attempt 0 → initial, doubling to the cap; ×[0.8, 1.2) jitter so replicas do not retry in step. */
export function backoffDelay(attempt: number, p: BackoffParams): number {
  const base = Math.min(p.backoffMaxMs, p.backoffInitialMs * 2 ** Math.min(attempt, 30));
  return Math.min(p.backoffMaxMs, base * (0.8 + 0.4 * p.random()));
}

/** Resolves after ms, or at once when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
