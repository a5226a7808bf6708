// The JS heap a long-lived Compiler and its table hold for the control-plane benchmark's
// cluster (10k Ingresses, Services, EndpointSlices, 500 TLS Secrets, 10k HTTPRoutes;
// `--api-metadata` objects), over the Store's, and what the first full compile allocates.
// With --shapes, the objects it adds grouped by JSC class and property names (two heap
// snapshots, store alone and store + compile, counted by shape; the difference is the
// Compiler's), largest first. usage: bun bench/compile-heap.ts [--shapes] [checkout root]
import { fullGC, heapStats } from "bun:jsc";
import { join } from "node:path";
const args = process.argv.slice(2);
const shapes = args.includes("--shapes");
const root = args.find((a) => !a.startsWith("--")) ?? join(import.meta.dir, "..");
const { generate } = await import(`${root}/bench/lib/cp-gen.ts`);
const { parseObject } = await import(`${root}/src/model/kinds.ts`);
const { Store } = await import(`${root}/src/store/store.ts`);
const { Compiler } = await import(`${root}/src/compile/compile.ts`);
const { DEFAULT_COMPILE_CONFIG } = await import(`${root}/test/compile/config.ts`);
const mib = (b: number) => (b / 1048576).toFixed(1);
const store = new Store();
{
  const c = generate({ ingresses: 10000, httpRoutes: 10000, tlsCount: 500, addresses: ["127.0.0.10", "127.0.0.11", "127.0.0.12"], port: 8080, cert: { cert: "-----BEGIN CERTIFICATE-----\n" + "A".repeat(700) + "\n-----END CERTIFICATE-----\n", key: "-----BEGIN PRIVATE KEY-----\n" + "B".repeat(200) + "\n-----END PRIVATE KEY-----\n" }, apiMetadata: true });
  for (const o of c.objects as { kind: string; object: unknown }[]) {
    const p = parseObject(o.kind, JSON.parse(JSON.stringify(o.object)));
    if (p.ok) store.apply({ type: "ADDED", kind: o.kind, object: p.object });
  }
}
const full = store.snapshot();
// --ingress-only: the Gateway API part left out (no GatewayClass: compile.ts does none of it).
const snapshot = args.includes("--ingress-only") ? { ...full, gatewayClasses: new Map() } : full;

type Shape = Map<string, { count: number; bytes: number }>;
/** Every heap cell grouped by class name and, for objects, its sorted property names. */
function byShape(): Shape {
  const s = Bun.generateHeapSnapshot() as unknown as { nodes: number[]; nodeClassNames: string[]; edges: number[]; edgeTypes: string[]; edgeNames: string[] };
  const props = new Map<number, string[]>();
  const prop = s.edgeTypes.indexOf("Property");
  for (let i = 0; i < s.edges.length; i += 4) {
    if (s.edges[i + 2] !== prop) continue;
    const from = s.edges[i] as number;
    let l = props.get(from);
    if (l === undefined) props.set(from, (l = []));
    l.push(s.edgeNames[s.edges[i + 3] as number] as string);
  }
  const out: Shape = new Map();
  for (let i = 0; i < s.nodes.length; i += 4) {
    const cls = s.nodeClassNames[s.nodes[i + 2] as number] as string;
    const p = props.get(s.nodes[i] as number);
    const key = p === undefined ? cls : `${cls} {${p.sort().slice(0, 12).join(",")}${p.length > 12 ? ",…" : ""}}`;
    const e = out.get(key) ?? { count: 0, bytes: 0 };
    e.count++;
    e.bytes += s.nodes[i + 1] as number;
    out.set(key, e);
  }
  return out;
}

fullGC(); fullGC();
const before = heapStats();
const shapesBefore = shapes ? byShape() : null;
if (shapes) { fullGC(); fullGC(); }
const base = heapStats().heapSize;
console.error("=== COMPILE START");
const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
const t0 = performance.now();
const result = compiler.compile(snapshot);
const ms = performance.now() - t0;
console.error("=== COMPILE END");
// Before any collection: what the first compile left (kept and garbage) is its capacity growth.
const grown = heapStats();
fullGC(); fullGC();
const after = heapStats();
console.log(JSON.stringify({
  root, routes: result.table.routeCount, compileMs: Math.round(ms),
  storeHeapMiB: mib(before.heapSize), compileKeptMiB: mib(after.heapSize - base),
  // Cells allocated by the compile, kept or not: JSC counts cells not yet swept (one eden
  // collection starts with the compile and none runs during it at this size, checked with
  // BUN_JSC_logGC=1), so this is close to everything the first compile allocated.
  compileAllocatedMiB: mib(grown.heapSize - base),
  capacityBeforeMiB: mib(before.heapCapacity), capacityAfterCompileMiB: mib(grown.heapCapacity), capacityAfterGcMiB: mib(after.heapCapacity),
  objectsAllocated: Object.fromEntries(["Object", "string", "Array", "Set", "Map", "Function", "Uint8Array"].map((t) => [t, (grown.objectTypeCounts[t] ?? 0) - (before.objectTypeCounts[t] ?? 0)])),
  objectsKept: Object.fromEntries(["Object", "string", "Array", "Set", "Map", "Function", "Uint8Array"].map((t) => [t, (after.objectTypeCounts[t] ?? 0) - (before.objectTypeCounts[t] ?? 0)])),
}));
if (shapesBefore !== null) {
  const now = byShape();
  const rows = [...now].map(([k, v]) => ({ k, count: v.count - (shapesBefore.get(k)?.count ?? 0), bytes: v.bytes - (shapesBefore.get(k)?.bytes ?? 0) })).filter((r) => r.bytes > 100_000).sort((a, b) => b.bytes - a.bytes);
  for (const r of rows.slice(0, 45)) console.log(`${mib(r.bytes).padStart(6)} MiB ${String(r.count).padStart(8)}  ${r.k}`);
}
(globalThis as { keep?: unknown }).keep = [compiler, result, store];
