// A Map that hands out read-only views cheaply: `share()` returns the live map and marks it
// shared; the next write copies it first, so every view handed out stays as it was.
// Cost: one O(n) copy per kind per snapshot that is followed by a write, never per event.
export class CowMap<V> {
  private map = new Map<string, V>();
  private shared = false;

  get size(): number {
    return this.map.size;
  }

  get(key: string): V | undefined {
    return this.map.get(key);
  }

  has(key: string): boolean {
    return this.map.has(key);
  }

  keys(): IterableIterator<string> {
    return this.map.keys();
  }

  entries(): IterableIterator<[string, V]> {
    return this.map.entries();
  }

  set(key: string, value: V): void {
    this.own();
    this.map.set(key, value);
  }

  delete(key: string): boolean {
    if (!this.map.has(key)) return false;
    this.own();
    return this.map.delete(key);
  }

  /** Take ownership of a freshly built map (the caller must not keep writing to it). */
  reset(next: Map<string, V>): void {
    this.map = next;
    this.shared = false;
  }

  share(): ReadonlyMap<string, V> {
    this.shared = true;
    return this.map;
  }

  private own(): void {
    if (this.shared) {
      this.map = new Map(this.map);
      this.shared = false;
    }
  }
}
