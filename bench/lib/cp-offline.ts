// In-process control-plane figures: validate + store + compile time, lookup ns/request, memory.
import { compile } from "../../src/compile/compile.ts";
import { DEFAULT_COMPILE_CONFIG } from "../../src/compile/config.ts";
import { isKind, parseObject } from "../../src/model/kinds.ts";
import { Store } from "../../src/store/store.ts";
import { lookup } from "../../src/table/lookup.ts";
import type { CompileResult } from "../../src/compile/types.ts";
import { requestMix, type Cluster } from "./cp-gen.ts";
import { median } from "./report.ts";

export interface OfflineResult {
  readonly objects: number;
  readonly loadMs: number;
  readonly compileColdMs: number;
  readonly compileMedianMs: number;
  readonly compileRuns: number;
  readonly routes: number;
  readonly certificates: number;
  readonly diagnostics: number;
  readonly lookupHitNs: number;
  readonly lookupMixNs: number;
  readonly hitRate: number;
  /** Heap growth from loading the objects and keeping one compiled result (MiB). */
  readonly heapMiB: number;
}

function heapUsed(): number {
  Bun.gc(true);
  return process.memoryUsage().heapUsed;
}

/** ns per lookup over the given mix, best of `rounds` passes (the JIT warms on the first). */
function timeLookups(r: CompileResult, hosts: readonly string[], paths: readonly string[], rounds: number): { ns: number; hits: number } {
  let best = Number.POSITIVE_INFINITY;
  let hits = 0;
  for (let round = 0; round < rounds; round++) {
    let h = 0;
    const t0 = Bun.nanoseconds();
    for (let k = 0; k < hosts.length; k++) {
      if (lookup(r.table, hosts[k] as string, paths[k] as string) !== null) h++;
    }
    const ns = (Bun.nanoseconds() - t0) / hosts.length;
    if (ns < best) best = ns;
    hits = h;
  }
  return { ns: best, hits };
}

export function runOffline(c: Cluster, compileRuns: number): OfflineResult {
  const heap0 = heapUsed();
  const t0 = performance.now();
  const store = new Store();
  for (const { kind, object } of c.objects) {
    if (!isKind(kind)) throw new Error(`generator made unknown kind ${kind}`);
    const parsed = parseObject(kind, object);
    if (!parsed.ok) throw new Error(`generated object rejected: ${parsed.diagnostic.message}`);
    store.apply({ type: "ADDED", kind, object: parsed.object } as Parameters<Store["apply"]>[0]);
  }
  const loadMs = performance.now() - t0;
  const snap = store.snapshot();
  const c0 = performance.now();
  let result = compile(snap, DEFAULT_COMPILE_CONFIG);
  const compileColdMs = performance.now() - c0;
  const times: number[] = [];
  for (let i = 0; i < compileRuns; i++) {
    const s = performance.now();
    result = compile(snap, DEFAULT_COMPILE_CONFIG);
    times.push(performance.now() - s);
  }
  const heapMiB = (heapUsed() - heap0) / 1024 / 1024;

  const mix = requestMix(c, 200_000);
  const mixT = timeLookups(result, mix.hosts, mix.paths, 5);
  const hitHosts: string[] = [];
  const hitPaths: string[] = [];
  for (let k = 0; k < mix.hosts.length; k++) {
    if (lookup(result.table, mix.hosts[k] as string, mix.paths[k] as string) !== null) {
      hitHosts.push(mix.hosts[k] as string);
      hitPaths.push(mix.paths[k] as string);
    }
  }
  const hitT = timeLookups(result, hitHosts, hitPaths, 5);
  return {
    objects: c.objects.length,
    loadMs,
    compileColdMs,
    compileMedianMs: median(times),
    compileRuns,
    routes: result.table.routeCount,
    certificates: result.certificates.length,
    diagnostics: result.diagnostics.length,
    lookupHitNs: hitT.ns,
    lookupMixNs: mixT.ns,
    hitRate: mixT.hits / mix.hosts.length,
    heapMiB,
  };
}
