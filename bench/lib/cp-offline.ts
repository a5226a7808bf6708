// In-process control-plane figures: validate + store + compile time (full, and incremental
// after one Ingress edit), the table's IPC cost for --workers (whole table and one edit's
// delta), lookup ns/request, memory.
import { Compiler, compile } from "../../src/compile/compile.ts";
import { DEFAULT_COMPILE_CONFIG } from "../../test/compile/config.ts";
import { isKind, parseObject } from "../../src/model/kinds.ts";
import { Store } from "../../src/store/store.ts";
import { lookup } from "../../src/table/lookup.ts";
import { applyDelta, decodeTable, encodeDelta, encodeTable, type BackendRegistry, type WireDelta, type WireTable } from "../../src/table/wire.ts";
import type { CompileResult } from "../../src/compile/types.ts";
import { httpRouteOf, ingressOf, requestMix, type Cluster } from "./cp-gen.ts";
import { median } from "./report.ts";

export interface OfflineResult {
  readonly objects: number;
  readonly loadMs: number;
  readonly compileColdMs: number;
  readonly compileMedianMs: number;
  readonly compileRuns: number;
  /** One long-lived Compiler: one Ingress replaced, then compile (median and max of the edits). */
  readonly editMedianMs: number;
  readonly editMaxMs: number;
  /** The same for one HTTPRoute replaced (NaN without HTTPRoutes). */
  readonly routeEditMedianMs: number;
  readonly routeEditMaxMs: number;
  /** --workers: the whole table (JSON.stringify(encodeTable), JSON.parse + decodeTable) and its size. */
  readonly wireFullEncodeMs: number;
  readonly wireFullDecodeMs: number;
  readonly wireFullBytes: number;
  /** The same for one edit's delta (medians over the edits). */
  readonly wireDeltaEncodeMs: number;
  readonly wireDeltaDecodeMs: number;
  readonly wireDeltaBytes: number;
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

/** Incremental compiles and worker deltas after `edits` single-Ingress edits (plain Ingresses from `first`). */
function runEdits(store: Store, edits: number, first: number, count: number) {
  const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
  let prev = compiler.compile(store.snapshot()).table;
  const primary: BackendRegistry = new Map();
  let t = performance.now();
  const fullJson = JSON.stringify(encodeTable(prev, primary));
  const wireFullEncodeMs = performance.now() - t;
  const worker: BackendRegistry = new Map();
  t = performance.now();
  let held = decodeTable(JSON.parse(fullJson) as WireTable, worker);
  const wireFullDecodeMs = performance.now() - t;
  const compileMs: number[] = [];
  const enc: number[] = [];
  const dec: number[] = [];
  const bytes: number[] = [];
  for (let k = 1; k <= edits; k++) {
    const i = first + ((k * 7919) % count);
    const parsed = parseObject("Ingress", ingressOf(i, false, `/edit-${k}`, String(k + 1)));
    if (!parsed.ok) throw new Error(parsed.diagnostic.message);
    store.apply({ type: "MODIFIED", kind: "Ingress", object: parsed.object });
    t = performance.now();
    const next = compiler.compile(store.snapshot()).table;
    compileMs.push(performance.now() - t);
    t = performance.now();
    const json = JSON.stringify(encodeDelta(prev, next, primary));
    enc.push(performance.now() - t);
    bytes.push(json.length);
    t = performance.now();
    held = applyDelta(held, JSON.parse(json) as WireDelta, worker);
    dec.push(performance.now() - t);
    prev = next;
  }
  if (held.routeCount !== prev.routeCount) throw new Error("the delta-fed table lost routes");
  // HTTPRoute edits on the same Compiler (the Gateway API part: compile/gateway/table.ts).
  const routeMs: number[] = [];
  const routes = store.snapshot().httpRoutes.size;
  for (let k = 1; k <= (routes > 0 ? edits : 0); k++) {
    const i = (k * 7919) % routes;
    const parsed = parseObject("HTTPRoute", httpRouteOf(i, `/edit-${k}`, String(k + 1)));
    if (!parsed.ok) throw new Error(parsed.diagnostic.message);
    store.apply({ type: "MODIFIED", kind: "HTTPRoute", object: parsed.object });
    t = performance.now();
    const next = compiler.compile(store.snapshot()).table;
    routeMs.push(performance.now() - t);
    if (next.gateway == null) throw new Error("the HTTPRoutes compiled to no Gateway table");
  }
  return {
    routeEditMedianMs: routeMs.length > 0 ? median(routeMs) : Number.NaN,
    routeEditMaxMs: routeMs.length > 0 ? Math.max(...routeMs) : Number.NaN,
    editMedianMs: median(compileMs),
    editMaxMs: Math.max(...compileMs),
    wireFullEncodeMs,
    wireFullDecodeMs,
    wireFullBytes: fullJson.length,
    wireDeltaEncodeMs: median(enc),
    wireDeltaDecodeMs: median(dec),
    wireDeltaBytes: median(bytes),
  };
}

export function runOffline(c: Cluster, compileRuns: number, tlsCount = 0, edits = 30): OfflineResult {
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
  const incremental = runEdits(store, edits, Math.min(tlsCount, c.hosts.length - 1), Math.max(1, c.hosts.length - tlsCount));

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
    ...incremental,
    routes: result.table.routeCount,
    certificates: result.certificates.length,
    diagnostics: result.diagnostics.length,
    lookupHitNs: hitT.ns,
    lookupMixNs: mixT.ns,
    hitRate: mixT.hits / mix.hosts.length,
    heapMiB,
  };
}
