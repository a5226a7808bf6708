// The limits' table in shared memory (src/proxy/shared/limits.ts), which the workers of one
// Portico count in, as nginx's workers count in one limit_req / limit_conn zone in shared
// memory (ngx_http_limit_req_module.c and ngx_http_limit_conn_module.c keep their nodes in the
// zone's ngx_slab_pool_t under its shmtx). The same nginx arithmetic as the in-process limiter
// (request-limits.test.ts), then what only sharing brings: two workers' limiters on one table
// count together, in real separate processes too, and a dead worker's connections and lock are
// given back by the primary.
import { afterEach, describe, expect, test } from "bun:test";
import { closeSync, fstatSync } from "node:fs";
import { join } from "node:path";
import { rateOf } from "../../src/kinds/limits.ts";
import type { Limiter } from "../../src/kinds/types.ts";
import { createLimiter } from "../../src/proxy/policies/limiter.ts";
import { BUCKETS, createSharedLimiter, formatSharedLimits, releaseWorker, sharedLimitsBytes, SLOTS } from "../../src/proxy/shared/limits.ts";
import { formatSharedState, openSharedState, releaseSharedState, sharedStateBytes } from "../../src/proxy/shared/state.ts";
import { createSharedMemory } from "../../src/workers/shared-memory.ts";

const ROOT = join(import.meta.dir, "..", "..");
const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const f of cleanup.splice(0).reverse()) f();
});

/** A formatted table in ordinary memory (the arithmetic does not care where it lives). */
function table(workers = 2): Uint8Array {
  const mem = new Uint8Array(sharedLimitsBytes(workers));
  formatSharedLimits(mem, workers);
  return mem;
}

const makers: [string, (now: () => number) => Limiter][] = [
  ["in-process", (now) => createLimiter({ now })],
  ["shared", (now) => createSharedLimiter(table(), { worker: 0, now })],
];

describe.each(makers)("nginx's arithmetic (%s limiter, injected clock)", (_name, make) => {
  test("limit-rps 1 with the default multiplier 5: 6 at once, then one per second", () => {
    let t = 0;
    const l = make(() => t);
    const rps = rateOf(1, 1, 5);
    const admit = () => l.admit("z 10.0.0.1", rps, null);
    expect(Array.from({ length: 7 }, admit)).toEqual([true, true, true, true, true, true, false]);
    t = 999;
    expect(admit()).toBe(false);
    t = 1000;
    expect(admit()).toBe(true);
    expect(admit()).toBe(false);
    t = 60_000;
    expect(Array.from({ length: 7 }, admit)).toEqual([true, true, true, true, true, true, false]);
  });

  test("limit-rpm 1 lets one through every 62.5 s; a request one rate refuses counts in neither", () => {
    let t = 0;
    const l = make(() => t);
    const rpm = rateOf(1, 60, 0);
    expect(l.admit("k", null, rpm)).toBe(true);
    t = 62_499;
    expect(l.admit("k", null, rpm)).toBe(false);
    t = 62_500;
    expect(l.admit("k", null, rpm)).toBe(true);
    const rps = rateOf(1, 1, 1);
    expect(l.admit("j", rps, rpm)).toBe(true);
    expect(l.admit("j", rps, rpm)).toBe(false);
    expect(l.admit("j", rps, null)).toBe(true);
    expect(l.admit("j", rps, null)).toBe(false);
  });

  test("connections: N slots per key, given back once each", () => {
    const l = make(() => 0);
    const a = l.acquire("k", 2)!;
    const b = l.acquire("k", 2)!;
    expect(l.acquire("k", 2)).toBeNull();
    expect(l.acquire("other", 2)).not.toBeNull();
    a();
    a();
    expect(l.acquire("k", 2)).not.toBeNull();
    expect(l.acquire("k", 2)).toBeNull();
    b();
    expect(l.acquire("k", 2)).not.toBeNull();
  });
});

describe("one table, several workers", () => {
  test("two workers' limiters count one client together: the single-process number, not twice it", () => {
    const mem = table(2);
    const w0 = createSharedLimiter(mem, { worker: 0, now: () => 0, pid: 1_000_001 });
    const w1 = createSharedLimiter(mem, { worker: 1, now: () => 0, pid: 1_000_002 });
    const rps = rateOf(1, 1, 5); // 6 at once, as one process
    const admitted = Array.from({ length: 20 }, (_, i) => (i % 2 ? w1 : w0).admit("shop/main 10.1.2.3", rps, null)).filter(Boolean).length;
    expect(admitted).toBe(6);
    const held = [w0.acquire("shop/main 10.1.2.3", 3), w1.acquire("shop/main 10.1.2.3", 3), w0.acquire("shop/main 10.1.2.3", 3)];
    expect(held.every((r) => r !== null)).toBe(true);
    expect(w1.acquire("shop/main 10.1.2.3", 3)).toBeNull();
    held[0]!();
    expect(w1.acquire("shop/main 10.1.2.3", 3)).not.toBeNull();
  });

  test("a dead worker's connections and a lock it held are given back by releaseWorker", () => {
    const mem = table(2);
    const dead = createSharedLimiter(mem, { worker: 1, now: () => 0, pid: 1_000_002 });
    const live = createSharedLimiter(mem, { worker: 0, now: () => 0, pid: 1_000_001 });
    expect(dead.acquire("k", 2)).not.toBeNull();
    expect(dead.acquire("k", 2)).not.toBeNull();
    expect(live.acquire("k", 2)).toBeNull();
    // It died inside a critical section: every bucket lock names it.
    const i32 = new Int32Array(mem.buffer);
    const bucketLocks: number[] = [];
    for (let b = 0; b < BUCKETS; b++) {
      const at = (64 + b * (sharedLimitsBytes(2) - 64) / BUCKETS) / 4;
      bucketLocks.push(at);
      i32[at] = 1_000_002;
    }
    releaseWorker(mem, 1, 1_000_002);
    expect(bucketLocks.every((at) => i32[at] === 0)).toBe(true);
    const r = live.acquire("k", 2);
    expect(r).not.toBeNull();
    expect(live.acquire("k", 2)).not.toBeNull();
    expect(live.acquire("k", 2)).toBeNull();
  });

  test("bounded: at most BUCKETS × SLOTS keys; a forgotten key starts afresh; a key with connections in flight is kept", () => {
    const mem = table(2);
    let t = 0;
    const l = createSharedLimiter(mem, { worker: 0, now: () => t });
    const once = rateOf(1, 60, 0); // one request, then refused for 62.5 s
    const held = l.acquire("held", 1)!;
    expect(held).not.toBeNull();
    expect(l.admit("first", once, null)).toBe(true);
    expect(l.admit("first", once, null)).toBe(false);
    // 64 new keys per bucket on average: every bucket overflows (a bucket with fewer than 9
    // of them, under a random seed, has a probability below 1e-18).
    const n = BUCKETS * SLOTS * 8;
    for (let i = 0; i < n; i++) {
      t += 0.0002; // 210 ms in all: nothing drains, and "first" is the least recently seen
      l.admit(`k${i}`, once, null);
    }
    const { rates } = l.sizes;
    expect(rates).toBeLessThanOrEqual(BUCKETS * SLOTS);
    expect(rates).toBeGreaterThan(BUCKETS * SLOTS * 0.99);
    expect(l.admit("first", once, null)).toBe(true); // forgotten: an empty bucket again
    expect(l.acquire("held", 1)).toBeNull(); // still counted
    held();
    expect(l.acquire("held", 1)).not.toBeNull();
  });
});

test("separate processes over one shared file admit exactly the burst + 1 between them", async () => {
  const shared = createSharedMemory(sharedLimitsBytes(2));
  if (shared instanceof Error) throw shared;
  cleanup.push(() => closeSync(shared.fd));
  formatSharedLimits(shared.mem, 2);
  // Each child races to admit 30,000 requests of one client against a clock that stands still.
  const child = (worker: number) => `
    import { createSharedLimiter } from ${JSON.stringify(join(ROOT, "src/proxy/shared/limits.ts"))};
    import { rateOf } from ${JSON.stringify(join(ROOT, "src/kinds/limits.ts"))};
    const mem = Bun.mmap("/dev/fd/3");
    const l = createSharedLimiter(mem, { worker: ${worker}, now: () => 0 });
    const rate = rateOf(8000, 1, 5);
    // Start together: the header's unused word 8 counts the children ready.
    const head = new Int32Array(mem.buffer, 0, 16);
    Atomics.add(head, 8, 1);
    while (Atomics.load(head, 8) < 2);
    let n = 0;
    for (let i = 0; i < 30000; i++) if (l.admit("ns/ing 192.0.2.1", rate, null)) n++;
    console.log(n);`;
  const procs = [0, 1].map((w) =>
    Bun.spawn([process.execPath, "-e", child(w)], { stdio: ["ignore", "pipe", "inherit", shared.fd], cwd: ROOT }),
  );
  const counts = await Promise.all(procs.map(async (p) => Number((await new Response(p.stdout).text()).trim())));
  expect(await Promise.all(procs.map((p) => p.exited))).toEqual([0, 0]);
  // burst 8,000 × 5 = 40,000 at once, plus one: nginx admits a request while excess ≤ burst.
  expect(counts[0]! + counts[1]!).toBe(40_001);
});

test("unused, the shared file stays empty: formatting and releasing a gone worker touch only the headers", () => {
  const shared = createSharedMemory(sharedStateBytes(2));
  if (shared instanceof Error) throw shared;
  cleanup.push(() => closeSync(shared.fd));
  const allocated = () => fstatSync(shared.fd).blocks * 512;
  formatSharedState(shared.mem, 2);
  releaseSharedState(shared.mem, 1, 1_000_002); // a worker died; nothing was ever counted
  expect(shared.mem.byteLength).toBeGreaterThan(20 * 1024 * 1024);
  expect(allocated()).toBeLessThanOrEqual(3 * 4096); // the three headers' pages
  // Used: a check touches its bucket's page, not the table.
  const { limiter } = openSharedState(shared.mem, 0);
  expect(limiter.admit("shop/main 10.0.0.1", rateOf(5, 1, 1), null)).toBe(true);
  expect(allocated()).toBeLessThanOrEqual(5 * 4096);
});
