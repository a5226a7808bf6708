import { expect, test } from "bun:test";
import type { Backend, Upstream } from "../../table/types.ts";
import { createBalancer } from "./balancer.ts";
import { MAX_SUBSET, ORIGIN_BUDGET, STEP_MS, windowSize } from "./subset.ts";

function ep(port: number): Upstream {
  return { address: "10.0.0.1", port, authority: `10.0.0.1:${port}`, ready: true, serving: true, terminating: false };
}
function backend(eps: Upstream[]): Backend {
  return {
    id: "ns/svc:80", namespace: "ns", service: "svc", port: "80", status: "ok", endpoints: eps,
    allEndpoints: eps, scheme: "http", serverName: "svc.ns.svc", externalName: false,
  };
}

test("round robin visits every endpoint evenly", () => {
  const b = backend([ep(1), ep(2), ep(3)]);
  const bal = createBalancer();
  const seen = new Map<number, number>();
  for (let i = 0; i < 30; i++) {
    const u = bal.pick(b)!;
    seen.set(u.port, (seen.get(u.port) ?? 0) + 1);
  }
  expect([...seen.values()]).toEqual([10, 10, 10]);
});

test("failed endpoint is skipped during back-off and used again after", () => {
  let t = 0;
  const b = backend([ep(1), ep(2)]);
  const bal = createBalancer(() => t);
  bal.failed(ep(1));
  for (let i = 0; i < 6; i++) expect(bal.pick(b)!.port).toBe(2);
  t = 2_001;
  const ports = new Set([bal.pick(b)!.port, bal.pick(b)!.port]);
  expect(ports).toEqual(new Set([1, 2]));
  // growing back-off
  bal.failed(ep(1));
  bal.failed(ep(1));
  t += 7_000;
  expect(bal.isBackedOff("10.0.0.1:1")).toBe(true);
  bal.succeeded(ep(1));
  expect(bal.isBackedOff("10.0.0.1:1")).toBe(false);
});

test("exclude and all-backed-off fallback", () => {
  const b = backend([ep(1), ep(2)]);
  const bal = createBalancer(() => 0);
  expect(bal.pick(b, new Set(["10.0.0.1:1"]))!.port).toBe(2);
  bal.failed(ep(1));
  bal.failed(ep(2));
  expect(bal.pick(b)).not.toBeNull();
  expect(bal.pick(backend([]))).toBeNull();
});

// Subsetting (subset.ts): large backends are balanced over a sliding window of endpoints.
function many(n: number, base = 1000): Backend {
  const eps: Upstream[] = [];
  for (let i = 0; i < n; i++) eps.push(ep(base + i));
  return backend(eps);
}

test("a large backend is sent to a window of at most MAX_SUBSET endpoints at a time", () => {
  const b = many(200);
  const bal = createBalancer(() => 0, { seed: 0.25 });
  const seen = new Map<number, number>();
  for (let i = 0; i < MAX_SUBSET * 10; i++) {
    const u = bal.pick(b)!;
    seen.set(u.port, (seen.get(u.port) ?? 0) + 1);
  }
  expect(seen.size).toBe(MAX_SUBSET);
  // round robin inside the window
  expect(new Set(seen.values())).toEqual(new Set([10]));
});

test("the window slides: over a full rotation every endpoint gets a near-equal share", () => {
  let t = 0;
  const n = 50;
  const b = many(n);
  const bal = createBalancer(() => t, { seed: 0.7 });
  const seen = new Map<number, number>();
  for (let step = 0; step < n; step++) {
    t = step * STEP_MS;
    for (let i = 0; i < MAX_SUBSET * 4; i++) {
      const u = bal.pick(b)!;
      seen.set(u.port, (seen.get(u.port) ?? 0) + 1);
    }
  }
  expect(seen.size).toBe(n);
  const counts = [...seen.values()];
  const mean = counts.reduce((a, c) => a + c, 0) / n;
  expect(Math.min(...counts)).toBeGreaterThan(mean * 0.75);
  expect(Math.max(...counts)).toBeLessThan(mean * 1.25);
});

test("a failed endpoint in the window is skipped; a failing window spills over to the next endpoints", () => {
  const t = 0;
  const b = many(100);
  const bal = createBalancer(() => t, { seed: 0 });
  const window = new Set<string>();
  for (let i = 0; i < MAX_SUBSET; i++) window.add(bal.pick(b)!.authority);
  expect(window.size).toBe(MAX_SUBSET);
  const [bad] = window;
  bal.failed(b.endpoints.find((u) => u.authority === bad)!);
  for (let i = 0; i < MAX_SUBSET * 3; i++) {
    const u = bal.pick(b)!;
    expect(u.authority).not.toBe(bad);
    expect(window.has(u.authority)).toBe(true);
  }
  // every window endpoint failing: the others take over rather than a back-off being tried
  for (const a of window) bal.failed(b.endpoints.find((u) => u.authority === a)!);
  for (let i = 0; i < 20; i++) expect(window.has(bal.pick(b)!.authority)).toBe(false);
  // a retry's exclusions are honoured too
  const first = bal.pick(b)!;
  expect(bal.pick(b, new Set([first.authority]))!.authority).not.toBe(first.authority);
});

test("processes with different seeds cover different endpoints", () => {
  const b = many(64);
  const windowOf = (seed: number) => {
    const bal = createBalancer(() => 0, { seed });
    const s = new Set<string>();
    for (let i = 0; i < MAX_SUBSET; i++) s.add(bal.pick(b)!.authority);
    return s;
  };
  const a = windowOf(0);
  const c = windowOf(0.5);
  expect([...a].filter((x) => c.has(x))).toEqual([]);
});

test("several large backends in use share the origin budget", () => {
  let t = 0;
  const backends = [many(100, 1000), many(100, 2000), many(100, 3000), many(100, 4000)];
  const bal = createBalancer(() => t, { seed: 0.1 });
  for (const b of backends) bal.pick(b);
  t = 2_500; // next period: the window size now counts all four
  for (const b of backends) {
    const s = new Set<string>();
    for (let i = 0; i < 64; i++) s.add(bal.pick(b)!.authority);
    expect(s.size).toBe(windowSize(backends));
  }
  expect(windowSize(backends) * backends.length).toBeLessThanOrEqual(ORIGIN_BUDGET);
  // small backends keep plain round robin over every endpoint
  const small = backend([ep(1), ep(2), ep(3)]);
  expect(new Set([bal.pick(small)!.port, bal.pick(small)!.port, bal.pick(small)!.port])).toEqual(new Set([1, 2, 3]));
});
