// A long-lived Compiler (src/compile/compile.ts) must give exactly what the same rules give
// from empty caches. Random edit sequences go through the real Store (so snapshots share
// unchanged objects the way they do in production); after each burst of edits the long-lived
// Compiler is compared with a fresh one (compile()): routes, precedence, backends,
// certificates, statuses, diagnostics, and what explain says from each. What the rules
// themselves say is held by the goldens.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Compiler, compile } from "../../src/compile/compile.ts";
import type { CompileConfig } from "../../src/compile/config.ts";
import { DEFAULT_COMPILE_CONFIG } from "./config.ts";
import { explain, type ExplainRequest } from "../../src/compile/explain.ts";
import type { CompileResult } from "../../src/compile/types.ts";
import { parseObject } from "../../src/model/kinds.ts";
import { Store } from "../../src/store/store.ts";
import { allRoutes } from "../../src/table/routes.ts";
import { serializeTable } from "../../src/table/serialize.ts";
import type { Backend } from "../../src/table/types.ts";
import { generator } from "./generator.ts";
import { loadFixture } from "./snapshot.ts";

/** Everything a compile result says, as one string (key order as produced). */
function view(r: CompileResult): string {
  // serializeTable redacts basic-auth users: the stages are compared as they are too.
  const stages = allRoutes(r.table).map((route) => route.options.stages);
  return JSON.stringify({ table: serializeTable(r.table), stages, certificates: r.certificates, statuses: r.statuses, diagnostics: r.diagnostics });
}

/** Within one table, one Backend object per id (the proxy keys per-backend state on it). */
function backendsShared(r: CompileResult): boolean {
  const seen = new Map<string, Backend>();
  const routes = allRoutes(r.table);
  if (r.table.defaultRoute) routes.push(r.table.defaultRoute);
  for (const route of routes) {
    const prev = seen.get(route.backend.id);
    if (prev !== undefined && prev !== route.backend) return false;
    seen.set(route.backend.id, route.backend);
  }
  return true;
}

const EXPLAINED: readonly ExplainRequest[] = [
  { host: "x.test", path: "/api/v1", scheme: "https" },
  { host: "q.w.test", path: "/static", scheme: "http" },
  { host: "nomatch.test", path: "/", scheme: "http" },
];

const CONFIGS: readonly CompileConfig[] = [
  DEFAULT_COMPILE_CONFIG,
  {
    ...DEFAULT_COMPILE_CONFIG,
    watchIngressWithoutClass: true,
    allowExternalNameServices: true,
    defaultBackendService: { namespace: "a", name: "s2", port: 80 },
    defaultSslCertificate: { namespace: "b", name: "t1" },
    allowlistSourceRange: ["10.0.0.0/8"],
    // Host ownership (host-scope.ts) follows every Ingress edit, spec.tls coverage with it.
    hostPolicyScope: "namespace",
  },
];

describe("a long-lived Compiler equals one with empty caches", () => {
  // Per change (the usual path) and bulk (one sort, as after a relist or an IngressClass change).
  const modes = [["per change", undefined], ["bulk", 0]] as const;
  for (const [ci, config] of CONFIGS.entries()) {
    for (const seed of [1, 2, 3, 4]) {
      const [mode, bulkAbove] = modes[seed % 2] as (typeof modes)[number];
      test(`config ${ci}, seed ${seed}, ${mode}: 250 bursts of random edits`, () => {
        const next = generator(seed * 7919 + ci);
        const store = new Store();
        const incremental = new Compiler(config, bulkAbove === undefined ? {} : { bulkAbove });
        let compared = 0;
        let reusedHosts = 0;
        let prev: CompileResult | null = null;
        for (let step = 0; step < 250; step++) {
          // Bursts of 1..4 events per compile, as the coalescer would batch them.
          const burst = 1 + (step % 4);
          for (let k = 0; k < burst; k++) store.apply(next(store));
          const snap = store.snapshot();
          const got = incremental.compile(snap);
          const want = view(compile(snap, config));
          const actual = view(got);
          // On a mismatch, toEqual shows the difference as objects.
          if (actual !== want) expect({ step, result: JSON.parse(actual) }).toEqual({ step, result: JSON.parse(want) });
          expect(backendsShared(got)).toBe(true);
          // Explain reads the long-lived Compiler's plans and host entries: the same answer.
          if (step % 10 === 0) {
            for (const q of EXPLAINED) expect({ step, q, r: explain(snap, config, q, incremental) }).toEqual({ step, q, r: explain(snap, config, q) });
          }
          if (prev) for (const [h, e] of got.table.exact) if (prev.table.exact.get(h) === e) reusedHosts++;
          prev = got;
          compared++;
        }
        expect(compared).toBe(250);
        // The caches are actually used (otherwise this test would prove nothing about them).
        expect(reusedHosts).toBeGreaterThan(0);
      });
    }
  }

  test("every golden fixture, compiled after another one by the same Compiler, gives its own full result", () => {
    const dir = join(import.meta.dir, "..", "fixtures");
    const files = readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort();
    const compilers = new Map<string, Compiler>();
    // Twice through, so every fixture is also compiled with caches filled by all the others.
    for (const file of [...files, ...files]) {
      const fx = loadFixture(readFileSync(join(dir, file), "utf8"));
      const config = { ...DEFAULT_COMPILE_CONFIG, ...fx.config } as CompileConfig;
      const key = JSON.stringify(config);
      let c = compilers.get(key);
      if (!c) compilers.set(key, (c = new Compiler(config)));
      expect({ file, r: view(c.compile(fx.snapshot)) }).toEqual({ file, r: view(compile(fx.snapshot, config)) });
    }
  });

  test("a host with many paths and conflicts (past the claim list's switch to a map), edited path by path", () => {
    const paths = (n: number, svc: string) =>
      Array.from({ length: n }, (_, i) => ({ path: `/p${i % 13}`, pathType: i % 3 === 0 ? "Exact" : "Prefix", backend: { service: { name: svc, port: { number: 80 } } } }));
    const ing = (name: string, created: string, n: number, svc: string) => {
      const p = parseObject("Ingress", {
        metadata: { name, namespace: "a", creationTimestamp: created },
        spec: { ingressClassName: "portico", rules: [{ host: "big.test", http: { paths: paths(n, svc) } }, { http: { paths: paths(n, svc) } }] },
      });
      if (!p.ok) throw new Error(p.diagnostic.message);
      return p.object;
    };
    const store = new Store();
    const c = new Compiler(DEFAULT_COMPILE_CONFIG);
    for (let n = 1; n <= 30; n++) {
      store.apply({ type: "MODIFIED", kind: "Ingress", object: ing("old", "2024-01-01T00:00:00Z", n, "s1") });
      store.apply({ type: "MODIFIED", kind: "Ingress", object: ing("new", "2024-01-02T00:00:00Z", 31 - n, "s2") });
      const snap = store.snapshot();
      const got = c.compile(snap);
      expect(view(got)).toBe(view(compile(snap, DEFAULT_COMPILE_CONFIG)));
      expect(got.diagnostics.some((d) => d.reason === "PathConflict")).toBe(true);
    }
  });

  test("an unchanged snapshot gives back the same host entries and Backend objects", () => {
    const next = generator(99);
    const store = new Store();
    for (let k = 0; k < 60; k++) store.apply(next(store));
    const c = new Compiler({ ...DEFAULT_COMPILE_CONFIG, watchIngressWithoutClass: true });
    const a = c.compile(store.snapshot());
    const b = c.compile(store.snapshot());
    expect(view(b)).toBe(view(a));
    expect(a.table.exact.size).toBeGreaterThan(0);
    for (const [h, e] of a.table.exact) expect(b.table.exact.get(h)).toBe(e);
    expect(b.statuses).toBe(a.statuses);
  });
});
