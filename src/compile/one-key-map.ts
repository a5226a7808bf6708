// A read-only map of exactly one entry, for the plan of an Ingress whose rules name one host
// (most do): `IngressPlan.hosts` (plan.ts). JSC gives a Map its hash table on the first set, so
// a one-entry Map costs 256 bytes of JS heap and this 48 (bench/compile-heap.ts; docs/design.md
// "Sources at start-up"): ~2 MiB at 10k Ingresses. Readers see a ReadonlyMap either way:
// the same answers and iteration order as a Map holding the one entry. Keys compare with
// `===`, as a Map compares the string keys it is used with here.
export class OneKeyMap<K, V> implements ReadonlyMap<K, V> {
  readonly #key: K;
  readonly #value: V;

  constructor(key: K, value: V) {
    this.#key = key;
    this.#value = value;
  }

  get size(): number {
    return 1;
  }

  get(key: K): V | undefined {
    return key === this.#key ? this.#value : undefined;
  }

  has(key: K): boolean {
    return key === this.#key;
  }

  forEach(fn: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    fn.call(thisArg, this.#value, this.#key, this);
  }

  *entries(): MapIterator<[K, V]> {
    yield [this.#key, this.#value];
  }

  *keys(): MapIterator<K> {
    yield this.#key;
  }

  *values(): MapIterator<V> {
    yield this.#value;
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }
}
