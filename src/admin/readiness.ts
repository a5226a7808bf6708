// Readiness: ready only after the first full list of every watched kind has been
// applied and the first route table is live; not ready again once draining starts, so load
// balancers stop sending before the listeners close.

export type Readiness = { readonly ready: true } | { readonly ready: false; readonly reason: string };

export interface ReadinessState {
  /** A source finished its first full list of `kind`. */
  synced(kind: string): void;
  /** The first route table was swapped in. */
  tableLive(): void;
  /** Shutdown began: /readyz answers 503 from now on. */
  draining(): void;
  check(): Readiness;
}

export function createReadiness(kinds: readonly string[]): ReadinessState {
  const pending = new Set(kinds);
  let live = false;
  let drain = false;
  return {
    synced: (kind) => void pending.delete(kind),
    tableLive: () => void (live = true),
    draining: () => void (drain = true),
    check() {
      if (drain) return { ready: false, reason: "draining" };
      if (pending.size > 0) return { ready: false, reason: `not synced: ${[...pending].sort().join(", ")}` };
      if (!live) return { ready: false, reason: "no route table yet" };
      return { ready: true };
    },
  };
}
