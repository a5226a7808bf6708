// Scale check: 10,000 Ingresses compile well within budget and lookups stay fast.
// Bounds are generous (shared 2-core machine); the measured figures are printed.
import { expect, test } from "bun:test";
import { compile } from "../../src/compile/compile.ts";
import { DEFAULT_COMPILE_CONFIG } from "../../src/compile/config.ts";
import { lookup } from "../../src/table/lookup.ts";
import { syntheticSnapshot } from "./scale.ts";

test("10k Ingresses compile and look up quickly", () => {
  const snap = syntheticSnapshot(10_000);
  compile(snap, DEFAULT_COMPILE_CONFIG); // warm up the JIT
  const times: number[] = [];
  let result = compile(snap, DEFAULT_COMPILE_CONFIG);
  const cpu: number[] = [];
  for (let i = 0; i < 2; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    result = compile(snap, DEFAULT_COMPILE_CONFIG);
    times.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  expect(result.table.routeCount).toBe(20_000);
  expect(result.diagnostics.filter((d) => d.severity !== "warning")).toEqual([]);
  const best = Math.min(...times);

  const hosts = Array.from({ length: 1000 }, (_, i) => (i % 10 === 0 ? `x.w${i}.example.com` : `app-${i}.example.com`));
  const paths = ["/", "/api/v1/items", "/api/v0/items/42", "/static/app.js", "/api/v2/items"];
  let hits = 0;
  const N = 500_000;
  for (let i = 0; i < 50_000; i++) if (lookup(result.table, hosts[i % 1000] as string, paths[i % 5] as string)) hits++;
  const t0 = performance.now();
  for (let i = 0; i < N; i++) if (lookup(result.table, hosts[i % 1000] as string, paths[i % 5] as string)) hits++;
  const ns = ((performance.now() - t0) * 1e6) / N;
  console.log(
    `compile 10k Ingresses: wall ${times.map((t) => t.toFixed(0)).join("/")} ms, cpu ${cpu.map((t) => t.toFixed(0)).join("/")} ms; lookup ${ns.toFixed(0)} ns`,
  );
  expect(hits).toBe(N + 50_000);
  expect(best).toBeLessThan(3000);
  expect(ns).toBeLessThan(20_000);
}, 30_000);
