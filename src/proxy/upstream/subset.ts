// Deterministic subsetting: keep the number of upstream origins one process
// talks to under what Bun's fetch can keep pooled.
//
// Bun's fetch keeps at most 64 idle upstream connections per process, shared by all origins
// (docs/design.md "Bun facts measured here"; Bun.FetchSession's keepAlive.maxIdleSockets
// does not raise it and several sessions do not add up: measured on 1.4.5, 64 idle
// connections left after a 200-origin run either way). Round robin over 200 pods parks a
// connection per pod, the pool evicts them before their turn comes back, and every request
// pays a TCP handshake (throughput halves).
// Measured with a bare fetch loop, 64 in flight: the pool holds when the active origins times
// the connections each needs (about in-flight / origins, rounded up) stays near 64 — 8, 16,
// 32 or 64 origins run at the 1-origin rate, 48 loses a third, 100 more than half.
//
// So a backend with more endpoints than the process's share of the origin budget is sent, at
// any moment, to a window of `k` consecutive endpoints of a stable shuffled order. The window
// slides by one endpoint every STEP_MS, so every endpoint is used in turn (a full cycle over
// n endpoints takes n × STEP_MS), and only one new origin (a few connections) enters at a
// time. Each process starts its window at its own offset (the seed), so several workers or
// replicas cover different endpoints at once.
//
// The trade-off, stated plainly: within one process, load is spread evenly over time, not at
// every instant. With one process and 200 endpoints, 16 pods take that process's traffic for
// 16 × STEP_MS each cycle while the others get none from it. More workers and replicas narrow
// the gap; a backend that needs every pod loaded at once needs more processes, not this.
//
// Routes with `upstream-hash-by` or cookie affinity do not use the window: a key must find the
// same pod in every process and at every moment, so they choose among every ready endpoint
// (ring.ts), and pay the handshakes this file avoids when a backend has more endpoints than
// the pool holds. EWMA keeps the window (docs/design.md, "Balancing and affinity").
import type { Backend, Upstream } from "../../table/types.ts";

/** Bun's idle-connection pool per process (measured: docs/design.md, "Bun facts measured here"). */
const BUN_POOL = 64;
/**
 * Origins one process aims to use at once: half the pool, so the connections each origin
 * needs (in-flight requests / origins, rounded up) still fit with some room.
 */
export const ORIGIN_BUDGET = BUN_POOL / 2;
/** Largest window: with 64 requests in flight, 16 origins need exactly 4 connections each. */
export const MAX_SUBSET = 16;
/** Smallest window: a retry still has a second endpoint inside it. */
export const MIN_SUBSET = 2;
/** The window moves by one endpoint this often. */
export const STEP_MS = 500;

/** FNV-1a (32 bit): a stable, cheap hash for ordering endpoints the same way in every process. */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The endpoints in their stable shuffled order (by hash of the authority, then authority). */
export function stableOrder(endpoints: readonly Upstream[]): readonly Upstream[] {
  return endpoints
    .map((u) => ({ u, h: hash32(u.authority) }))
    .sort((a, b) => a.h - b.h || (a.u.authority < b.u.authority ? -1 : a.u.authority > b.u.authority ? 1 : 0))
    .map((x) => x.u);
}

/**
 * The largest window size k (within MIN_SUBSET..MAX_SUBSET) such that the active backends
 * together use at most ORIGIN_BUDGET origins: sum over backends of min(endpoints, k).
 * When even MIN_SUBSET overshoots (very many active backends), MIN_SUBSET: more processes
 * are the remedy then.
 */
export function windowSize(active: Iterable<Backend>): number {
  const sizes: number[] = [];
  for (const b of active) sizes.push(b.endpoints.length);
  let best = MIN_SUBSET;
  for (let k = MIN_SUBSET; k <= MAX_SUBSET; k++) {
    let used = 0;
    for (const n of sizes) used += Math.min(n, k);
    if (used > ORIGIN_BUDGET) break;
    best = k;
  }
  return best;
}

/** First position of this process's window over n endpoints at time `t` (ms). */
export function windowStart(n: number, seed: number, t: number): number {
  const offset = Math.floor(seed * n);
  return (offset + Math.floor(t / STEP_MS)) % n;
}
