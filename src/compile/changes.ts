// Small helpers for the compiler (compile.ts): what changed between two snapshot maps, and
// sorted arrays kept sorted by binary search.
import type { Kind, KindObjects } from "../model/kinds.ts";
import type { EndpointSlice } from "../model/schemas.ts";
import { relevantEqual } from "../store/relevance.ts";

/**
 * Calls `out(key)` once for every key added, removed or bound to another value (by identity)
 * between `prev` and `next`. Snapshot maps are copies of each other that keep insertion
 * order (store/cow-map.ts), so both are walked side by side without hashing while their keys
 * line up; from the first difference on, the rest is checked by lookup. Correct for any two
 * maps, fast for the usual ones.
 */
export function changedKeys<V>(prev: ReadonlyMap<string, V> | null, next: ReadonlyMap<string, V>, out: (key: string) => void): void {
  if (prev === next) return;
  if (prev === null) {
    for (const k of next.keys()) out(k);
    return;
  }
  const a = prev.entries();
  const b = next.entries();
  for (;;) {
    const x = a.next();
    const y = b.next();
    if (x.done || y.done) {
      // One side ended: what is left of the other is all added or all removed.
      for (let r: IteratorResult<[string, V]> = y; !r.done; r = b.next()) if (!prev.has(r.value[0])) out(r.value[0]);
      for (let r: IteratorResult<[string, V]> = x; !r.done; r = a.next()) if (!next.has(r.value[0])) out(r.value[0]);
      return;
    }
    const [ka, va] = x.value;
    const [kb, vb] = y.value;
    if (ka === kb) {
      if (va !== vb) out(ka);
      continue;
    }
    // Out of step: compare the rest by key. Keys before this point were equal on both sides.
    for (let r: IteratorResult<[string, V]> = y; !r.done; r = b.next()) {
      const k = r.value[0];
      if (!prev.has(k) || prev.get(k) !== r.value[1]) out(k);
    }
    for (let r: IteratorResult<[string, V]> = x; !r.done; r = a.next()) if (!next.has(r.value[0])) out(r.value[0]);
    return;
  }
}

/**
 * changedKeys, less the keys whose object was replaced by one equal in what the compiler reads
 * of `kind` (store/relevance.ts): the store keeps every newest version, status writes and
 * metadata-only updates included, so a replaced object is not a changed one. A null `prev`
 * (nothing compiled yet) has every key of `next` changed.
 */
export function relevantChangedKeys<K extends Kind>(kind: K, prev: ReadonlyMap<string, KindObjects[K]> | null, next: ReadonlyMap<string, KindObjects[K]>, out: (key: string) => void): void {
  changedKeys(prev, next, (k) => {
    const a = prev?.get(k);
    const b = next.get(k);
    if (a === undefined || b === undefined || !relevantEqual(kind, a, b)) out(k);
  });
}

/**
 * Two EndpointSlice groups of one Service equal in what the compiler reads: the same slices
 * (by name, in the same order) each equal in its relevant part (store/relevance.ts). A relist
 * replaces every slice with a new, equal object, and the EndpointSlice controller rewrites a
 * slice's resourceVersion and trigger-time annotation with no endpoint changed.
 */
export function sameSliceGroup(a: readonly EndpointSlice[] | undefined, b: readonly EndpointSlice[] | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as EndpointSlice;
    const y = b[i] as EndpointSlice;
    if (x !== y && (x.metadata.name !== y.metadata.name || !relevantEqual("EndpointSlice", x, y))) return false;
  }
  return true;
}

/** changedKeys over the EndpointSlice groups (Service key → its slices), less the groups equal in what is read (sameSliceGroup). */
export function relevantChangedGroups(prev: ReadonlyMap<string, readonly EndpointSlice[]> | null, next: ReadonlyMap<string, readonly EndpointSlice[]>, out: (key: string) => void): void {
  changedKeys(prev, next, (k) => {
    if (!sameSliceGroup(prev?.get(k), next.get(k))) out(k);
  });
}

/** Index of the first element not less than `x` (insertion point) in a sorted array. */
export function lowerBound<T>(xs: readonly T[], x: T, cmp: (a: T, b: T) => number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (cmp(xs[mid] as T, x) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Insert `x` into sorted `xs` in place (after equal elements' insertion point). */
export function insertSorted<T>(xs: T[], x: T, cmp: (a: T, b: T) => number): number {
  const i = lowerBound(xs, x, cmp);
  xs.splice(i, 0, x);
  return i;
}

/** Remove the element `x` (same identity, or equal by `cmp` and ===) from sorted `xs` in place. */
export function removeSorted<T>(xs: T[], x: T, cmp: (a: T, b: T) => number): boolean {
  for (let i = lowerBound(xs, x, cmp); i < xs.length && cmp(xs[i] as T, x) === 0; i++) {
    if (xs[i] === x) {
      xs.splice(i, 1);
      return true;
    }
  }
  return false;
}

export const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
