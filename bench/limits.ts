// CPU cost of one limits check, in-process (--workers 1) against the table in shared memory
// that --workers N ≥ 2 counts in (src/proxy/shared-limits.ts): `bun bench/limits.ts`.
// admit() and acquire()+release per call, one process; then two processes hammering the same
// client key at once (the worst case for the bucket lock) and different keys. CPU only, a few
// seconds; no network. Flags: --calls N (default 1,000,000 per measurement).
import { closeSync } from "node:fs";
import { join } from "node:path";
import { createLimiter, rateOf, type Limiter } from "../src/proxy/limits.ts";
import { createSharedLimiter, formatSharedLimits, sharedLimitsBytes } from "../src/proxy/shared-limits.ts";
import { createSharedMemory } from "../src/workers/shared-memory.ts";

const ROOT = join(import.meta.dir, "..");
const arg = process.argv.indexOf("--calls");
const CALLS = arg > 0 ? Number(process.argv[arg + 1]) : 1_000_000;

// A rate that is reached (so refusals, the usual state under attack, are measured too) over
// 1,000 client keys of realistic length.
const rate = rateOf(1000, 1, 5);
const keys = Array.from({ length: 1000 }, (_, i) => `shop/storefront-main 10.${(i >> 8) & 255}.${i & 255}.7`);

function measure(name: string, l: Limiter): void {
  for (let i = 0; i < 50_000; i++) l.admit(keys[i % 1000]!, rate, null); // warm
  let t0 = performance.now();
  for (let i = 0; i < CALLS; i++) l.admit(keys[i % 1000]!, rate, null);
  const admit = ((performance.now() - t0) * 1e6) / CALLS;
  t0 = performance.now();
  for (let i = 0; i < CALLS; i++) l.acquire(keys[i % 1000]!, 100)?.();
  const conn = ((performance.now() - t0) * 1e6) / CALLS;
  console.log(`| ${name} | ${admit.toFixed(0)} | ${conn.toFixed(0)} |`);
}

console.log(`Bun ${Bun.version}, ${CALLS.toLocaleString("en")} calls per cell, 1,000 client keys`);
console.log("\n| limiter (one process) | admit() ns/call | acquire()+release ns/call |\n|---|---:|---:|");
measure("in-process LRU (`--workers 1`)", createLimiter());
const shared = createSharedMemory(sharedLimitsBytes(2));
if (shared instanceof Error) throw shared;
formatSharedLimits(shared.mem, 2);
measure("shared memory (`--workers N`)", createSharedLimiter(shared.mem, { worker: 0 }));

// Two processes at once over one table: the same key (every call takes the same bucket lock)
// and each its own 1,000 keys.
async function race(sameKey: boolean): Promise<string> {
  const child = (worker: number) => `
    import { createSharedLimiter } from ${JSON.stringify(join(ROOT, "src/proxy/shared-limits.ts"))};
    import { rateOf } from ${JSON.stringify(join(ROOT, "src/proxy/limits.ts"))};
    const mem = Bun.mmap("/dev/fd/3");
    const l = createSharedLimiter(mem, { worker: ${worker} });
    const rate = rateOf(1000, 1, 5);
    const keys = Array.from({ length: 1000 }, (_, i) => ${sameKey ? '"shop/storefront-main 10.0.0.7"' : `\`w${worker} shop/storefront-main 10.\${(i >> 8) & 255}.\${i & 255}.7\``});
    for (let i = 0; i < 50000; i++) l.admit(keys[i % 1000], rate, null);
    const head = new Int32Array(mem.buffer, 0, 16);
    Atomics.add(head, ${sameKey ? 9 : 10}, 1);
    while (Atomics.load(head, ${sameKey ? 9 : 10}) < 2);
    const t0 = performance.now();
    for (let i = 0; i < ${CALLS}; i++) l.admit(keys[i % 1000], rate, null);
    console.log(((performance.now() - t0) * 1e6) / ${CALLS});`;
  const procs = [0, 1].map((w) => Bun.spawn([process.execPath, "-e", child(w)], { stdio: ["ignore", "pipe", "inherit", shared instanceof Error ? 0 : shared.fd], cwd: ROOT }));
  const ns = await Promise.all(procs.map(async (p) => Number((await new Response(p.stdout).text()).trim())));
  await Promise.all(procs.map((p) => p.exited));
  return ns.map((n) => n.toFixed(0)).join(" / ");
}
console.log("\n| two processes at once, shared memory | admit() ns/call (each process) |\n|---|---:|");
console.log(`| the same client key (one bucket lock) | ${await race(true)} |`);
console.log(`| different keys | ${await race(false)} |`);
closeSync(shared.fd);
