// One frozen empty list for the compile's kept state. An empty array literal costs 64 bytes of
// JS heap in JSC (the cell and the butterfly it is given for growth; 80 frozen), and most of
// the lists kept per Ingress and per host are empty (no diagnostics, canaries, error pages,
// aliases, spec.tls): ~70,000 of them at 10k Ingresses (bench/compile-heap.ts,
// docs/design.md "Sources at start-up"). Nothing mutates a list once it is kept, so one
// shared value stands for all of them; a push into it throws instead of leaking into others.
export const NONE: readonly never[] = Object.freeze([]);

/** `list`, or the shared empty list when it has nothing. */
export function compact<T>(list: readonly T[]): readonly T[] {
  return list.length === 0 ? NONE : list;
}
