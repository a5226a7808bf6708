// CPU cost of what --workers N ≥ 2 keeps in shared memory (src/proxy/shared/state.ts) against
// the single process's in-memory versions: `bun bench/limits.ts`. A limits check (admit(),
// acquire()+release), an EWMA pick and answer, an auth cache hit, in one process; then two
// processes hammering the same client key at once (the worst case for the bucket lock) and
// different keys. CPU only, a few seconds; no network. Flags: --calls N (default 1,000,000).
import { closeSync } from "node:fs";
import { join } from "node:path";
import { createBalancer, type EwmaScores } from "../src/proxy/upstream/balancer.ts";
import { createAuthCache } from "../src/proxy/policies/caps.ts";
import { rateOf } from "../src/kinds/limits.ts";
import type { AuthCacheStore, Limiter } from "../src/kinds/types.ts";
import { createLimiter } from "../src/proxy/policies/limiter.ts";
import { createSharedAuthCache, formatSharedAuthCache, SHARED_AUTH_CACHE_BYTES } from "../src/proxy/shared/auth-cache.ts";
import { createSharedEwma, formatSharedEwma, SHARED_EWMA_BYTES } from "../src/proxy/shared/ewma.ts";
import { createSharedLimiter, formatSharedLimits, sharedLimitsBytes } from "../src/proxy/shared/limits.ts";
import type { Backend, Upstream } from "../src/table/types.ts";
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

// load-balance: ewma over 3 endpoints: one pickEwma and one observe per request.
const eps: Upstream[] = [1, 2, 3].map((i) => ({ address: `10.4.0.${i}`, port: 8080, authority: `10.4.0.${i}:8080`, ready: true, serving: true, terminating: false }));
const be: Backend = { id: "shop/web:80", namespace: "shop", service: "web", port: "80", status: "ok", endpoints: eps, allEndpoints: eps, scheme: "http", serverName: "web.shop.svc", externalName: false };
function measureEwma(name: string, ewma: EwmaScores | undefined): void {
  const bal = createBalancer(undefined, ewma === undefined ? {} : { ewma });
  for (let i = 0; i < 50_000; i++) bal.observe(bal.pickEwma(be)!, 3);
  const t0 = performance.now();
  for (let i = 0; i < CALLS; i++) bal.observe(bal.pickEwma(be)!, 3);
  console.log(`| ${name} | ${(((performance.now() - t0) * 1e6) / CALLS).toFixed(0)} |`);
}
console.log("\n| EWMA scores (one process) | pickEwma()+observe() ns/request |\n|---|---:|");
measureEwma("in-process Map (`--workers 1`)", undefined);
const ewmaMem = new Uint8Array(SHARED_EWMA_BYTES);
formatSharedEwma(ewmaMem);
measureEwma("shared memory (`--workers N`)", createSharedEwma(ewmaMem));

// auth-cache-key hits: a bearer token of 40 bytes in the key, one copied header.
function measureAuth(name: string, c: AuthCacheStore): void {
  const authKeys = keys.map((k) => `7f3a\0app.test\0shop/web\0Prefix\0/\0${k.length + 7}:Bearer ${k}`);
  for (const k of authKeys) c.set(k, { status: 200, copy: { "x-user": k.slice(-12) }, wwwAuthenticate: null, setCookies: [] }, 3_600_000);
  const t0 = performance.now();
  for (let i = 0; i < CALLS; i++) c.get(authKeys[i % 1000]!);
  console.log(`| ${name} | ${(((performance.now() - t0) * 1e6) / CALLS).toFixed(0)} |`);
}
console.log("\n| auth cache (one process) | hit ns/request |\n|---|---:|");
measureAuth("in-process LRU (`--workers 1`)", createAuthCache());
const authMem = new Uint8Array(SHARED_AUTH_CACHE_BYTES);
formatSharedAuthCache(authMem);
measureAuth("shared memory (`--workers N`)", createSharedAuthCache(authMem));

// Two processes at once over one table: the same key (every call takes the same bucket lock)
// and each its own 1,000 keys.
async function race(sameKey: boolean): Promise<string> {
  const child = (worker: number) => `
    import { createSharedLimiter } from ${JSON.stringify(join(ROOT, "src/proxy/shared/limits.ts"))};
    import { rateOf } from ${JSON.stringify(join(ROOT, "src/kinds/limits.ts"))};
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
