// The lists the compiler keeps per Ingress plan and per host entry share one frozen empty list
// when they are empty (src/compile/empty.ts; docs/design.md "Sources at start-up"): a fresh
// empty array costs 64 bytes of JS heap in JSC, and at 10k Ingresses ~70,000 of them were kept.
// What is compiled is unchanged (the goldens and the incremental tests say so); this checks
// the sharing itself, and that nothing can push into the shared list. Likewise the statuses
// list holds each plan's own frozen `{ namespace, name }`, a plan of one host holds it in a
// OneKeyMap (compile/one-key-map.ts), and hosts whose Prefix keys have the
// same element counts share one `prefixDepths` array (table/build.ts).
import { describe, expect, test } from "bun:test";
import { Compiler } from "../../src/compile/compile.ts";
import { buildHostEntry, type Resolve } from "../../src/compile/host-entry.ts";
import { BackendCache } from "../../src/compile/backend-cache.ts";
import { OneKeyMap } from "../../src/compile/one-key-map.ts";
import { DEFAULT_COMPILE_CONFIG } from "./config.ts";
import { syntheticSnapshot } from "./scale.ts";

const snapshot = syntheticSnapshot(40);

describe("kept empty lists", () => {
  test("plans without diagnostics or spec.tls share one frozen empty list", () => {
    const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
    const { served } = compiler.inspect(snapshot, []);
    expect(served.length).toBe(40);
    // syntheticSnapshot: every fourth Ingress has spec.tls, none has a diagnostic.
    const noTls = served.filter((p) => p.ingress.spec.tls === undefined);
    expect(noTls.length).toBe(30);
    expect(new Set(noTls.map((p) => p.tls)).size).toBe(1);
    expect(new Set(served.map((p) => p.diagnostics)).size).toBe(1);
    const empty: unknown = served[0]!.diagnostics;
    expect(served[0]!.diagnostics.length).toBe(0);
    expect(Object.isFrozen(empty)).toBe(true);
    expect<unknown>(noTls[0]!.tls).toBe(empty);
    expect(() => (empty as unknown[]).push(1)).toThrow(TypeError);
  });

  test("host entries without canaries, error pages, aliases or diagnostics share it too", () => {
    const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
    const { served } = compiler.inspect(snapshot, []);
    const cache = new BackendCache(DEFAULT_COMPILE_CONFIG);
    cache.begin(snapshot);
    const resolve: Resolve = (ref) => cache.resolve(ref);
    const [a, b] = served.slice(1, 3).map((plan) => {
      const hostKey = [...plan.hosts.keys()][0]!;
      return buildHostEntry(hostKey, [plan], [], false, resolve, DEFAULT_COMPILE_CONFIG.hostPolicyScope);
    });
    cache.end();
    expect(a!.entry.routes.length).toBe(2);
    const empty: unknown = served[0]!.diagnostics;
    for (const e of [a!, b!]) {
      expect<unknown>(e.canaries).toBe(empty);
      expect<unknown>(e.canaryRefs).toBe(empty);
      expect<unknown>(e.errorRefs).toBe(empty);
      expect<unknown>(e.aliases).toBe(empty);
      expect<unknown>(e.diagnostics).toBe(empty);
    }
  });

  test("a plan of one host keeps its paths in a OneKeyMap, not a Map", () => {
    const { served } = new Compiler(DEFAULT_COMPILE_CONFIG).inspect(snapshot, []);
    for (const p of served) {
      expect(p.hosts).toBeInstanceOf(OneKeyMap);
      expect(p.hosts.size).toBe(1);
      expect(p.hosts.get([...p.hosts.keys()][0]!)!.length).toBe(2);
    }
  });

  test("statuses are the plans' own refs", () => {
    const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
    const { served, result } = compiler.inspect(snapshot, []);
    expect(result.statuses.length).toBe(40);
    const refs = new Set<unknown>(served.map((p) => p.ref));
    for (const s of result.statuses) expect(refs.has(s)).toBe(true);
    expect(result.statuses.map((s) => `${s.namespace}/${s.name}`)).toEqual(served.map((p) => p.key).sort());
  });

  test("hosts with the same Prefix depths share one prefixDepths array", () => {
    const { table } = new Compiler(DEFAULT_COMPILE_CONFIG).compile(snapshot);
    // syntheticSnapshot: Prefix "/" on every host (0 elements), and Prefix /api/v<n>/items
    // (3 elements) on the even ones, Exact on the odd ones.
    const even = table.exact.get("app-2.example.com")!;
    const odd = table.exact.get("app-1.example.com")!;
    expect([...even.prefixDepths]).toEqual([1, 0, 0, 1]);
    expect([...odd.prefixDepths]).toEqual([1]);
    expect(table.exact.get("app-4.example.com")!.prefixDepths).toBe(even.prefixDepths);
    expect(table.exact.get("app-3.example.com")!.prefixDepths).toBe(odd.prefixDepths);
    expect(new Set([...table.exact.values()].map((h) => h.prefixDepths)).size).toBe(2);
  });
});
