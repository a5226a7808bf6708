// A repeatable random sequence, for distribution tests and for generated inputs whose failure
// must be the same value on every run.

/** mulberry32: a fixed sequence in [0, 1) for a given seed (32-bit integer arithmetic throughout). */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}
