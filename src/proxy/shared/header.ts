// The header every shared table starts with (docs/design.md, "Limits per pod"): Int32 0 is the
// table's magic, written last so a worker never reads a half-formatted table; Int32 2 and 3 are
// a per-pod random 64-bit hash seed, so a client cannot choose the bucket its key lands in.
// Int32 1 is the table's own (the limits table keeps its worker count there). The header is
// TABLE_HEADER bytes; the buckets follow it.

/** Bytes before the first bucket of every shared table. */
export const TABLE_HEADER = 64;

/** The primary's first write into fresh (zeroed) memory: `setup` writes the table's own fields first. */
export function formatTableHeader(mem: Uint8Array, bytes: number, magic: number, what: string, setup?: (i32: Int32Array) => void): void {
  if (mem.byteLength < bytes || mem.byteOffset % 8 !== 0) throw new Error(`shared memory is too small or misaligned for ${what}`);
  const i32 = new Int32Array(mem.buffer, mem.byteOffset, 16);
  const seed = crypto.getRandomValues(new Int32Array(2));
  setup?.(i32);
  i32[2] = seed[0]!;
  i32[3] = seed[1]!;
  Atomics.store(i32, 0, magic);
}

/** The seed of a formatted table whose header `i32` views; throws when `magic` is not there. */
export function tableSeed(i32: Int32Array, magic: number, what: string): bigint {
  if (Atomics.load(i32, 0) !== magic) throw new Error(`shared memory does not hold ${what}`);
  return (BigInt(i32[3]! >>> 0) << 32n) | BigInt(i32[2]! >>> 0);
}

/**
 * A key's place in a table: its 64-bit wyhash under the table's seed, split into `h1` (its low
 * half, which picks the bucket) and `h2` (its high half, never 0: a slot whose `h2` is 0 is
 * empty). One per table view, reused for every lookup, so a lookup allocates nothing.
 */
export class KeyHash {
  h1 = 0;
  h2 = 0;
  constructor(
    private readonly seed: bigint,
    /** A power of two. */
    private readonly buckets: number,
    private readonly bucketBytes: number,
  ) {}

  /** Sets h1 and h2 for `key` and returns its bucket's byte offset. */
  bucket(key: string): number {
    const h = Bun.hash.wyhash(key, this.seed);
    this.h1 = Number(BigInt.asUintN(32, h)) | 0;
    this.h2 = Number(h >> 32n) | 1;
    return TABLE_HEADER + (this.h1 & (this.buckets - 1)) * this.bucketBytes;
  }
}
