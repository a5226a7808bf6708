// `load-balance: ewma` (src/proxy/upstream/balancer.ts pickEwma/observe): the lower-scored of two
// random endpoints, scores decaying with a 10 s time constant, as ingress-nginx's
// rootfs/etc/nginx/lua/balancer/ewma.lua. Unit level: an injected clock and a seeded random.
// Every case runs over the process's own scores (--workers 1) and over the table in shared
// memory the workers of --workers N share (src/proxy/shared/ewma.ts), as nginx's workers share
// the balancer_ewma dictionary.
import { describe, expect, test } from "bun:test";
import { createBalancer, EWMA_DECAY_MS, type BalancerOptions } from "../../src/proxy/upstream/balancer.ts";
import { createSharedEwma, formatSharedEwma, SHARED_EWMA_BYTES } from "../../src/proxy/shared/ewma.ts";
import type { Backend, Upstream } from "../../src/table/types.ts";
import { seeded } from "./seeded.ts";

function ep(port: number): Upstream {
  return { address: "10.3.0.1", port, authority: `10.3.0.1:${port}`, ready: true, serving: true, terminating: false };
}
function backend(eps: Upstream[]): Backend {
  return {
    id: "ns/svc:80", namespace: "ns", service: "svc", port: "80", status: "ok", endpoints: eps,
    allEndpoints: eps, scheme: "http", serverName: "svc.ns.svc", externalName: false,
  };
}

function shares(picks: Upstream[], eps: Upstream[]): number[] {
  return eps.map((u) => picks.filter((p) => p === u).length / picks.length);
}

function sharedScores(): Uint8Array {
  const mem = new Uint8Array(SHARED_EWMA_BYTES);
  formatSharedEwma(mem);
  return mem;
}

const stores: [string, () => BalancerOptions][] = [
  ["this process's scores", () => ({})],
  ["scores in shared memory", () => ({ ewma: createSharedEwma(sharedScores(), { origin: 0, pid: 1 }) })],
];

describe.each(stores)("ewma (%s)", (_name, store) => {
  test("two-candidate draw: with scores 1 < 2 < 4 < 8 ms the shares are 1/2, 1/3, 1/6 and 0 (6,000 seeded picks)", () => {
    const t = 1_000;
    const bal = createBalancer(() => t, { random: seeded(1), ...store() });
    const eps = [ep(1), ep(2), ep(3), ep(4)];
    eps.forEach((u, i) => bal.observe(u, 2 ** i));
    const b = backend(eps);
    const picks = Array.from({ length: 6000 }, () => bal.pickEwma(b)!);
    const got = shares(picks, eps);
    // The best wins every pair it is in (3 of 6 pairs), the worst none.
    [1 / 2, 1 / 3, 1 / 6, 0].forEach((want, i) => expect(Math.abs(got[i]! - want)).toBeLessThan(0.025));
    expect(got[3]).toBe(0);
  });

  test("latency-aware in a loop: a pod ten times slower is left alone, tried again once its score has decayed, and back when fast", () => {
    let t = 0;
    const bal = createBalancer(() => t, { random: seeded(2), ...store() });
    const eps = [ep(1), ep(2), ep(3)];
    const b = backend(eps);
    const latency = new Map([[eps[0]!, 5], [eps[1]!, 5], [eps[2]!, 50]]);
    const run = (n: number): Upstream[] => {
      const picks: Upstream[] = [];
      for (let i = 0; i < n; i++) {
        t += 2; // one request every 2 ms, answered at once (simulated)
        const u = bal.pickEwma(b)!;
        bal.observe(u, latency.get(u)!);
        picks.push(u);
      }
      return picks;
    };
    run(500); // every pod answers at least once
    // Round robin would give the slow pod 1/3 of 30 s of traffic; here it gets next to nothing…
    const slow = run(15_000);
    expect(shares(slow, eps)[2]).toBeLessThan(0.002);
    // …but is not forgotten: its score decays toward 0 while unused, and once it is below the
    // others' it gets a request again (ingress-nginx's behaviour too).
    expect(slow.slice(5_000).includes(eps[2]!)).toBe(true);
    latency.set(eps[2]!, 5);
    run(30_000); // 60 s
    expect(Math.abs(bal.ewmaScore(eps[2]!.authority)! - 5)).toBeLessThan(1);
  });

  test("a score decays toward 0 while its pod is not chosen, so a pod slow long ago is tried again", () => {
    let t = 0;
    const bal = createBalancer(() => t, { random: seeded(3), ...store() });
    const [a, b] = [ep(1), ep(2)];
    bal.observe(a, 100);
    expect(bal.ewmaScore(a.authority)).toBe(100);
    t = EWMA_DECAY_MS;
    expect(bal.ewmaScore(a.authority)).toBeCloseTo(100 / Math.E, 6);
    bal.observe(b, 10);
    t = 4 * EWMA_DECAY_MS; // a: 100·e^-4 ≈ 1.8; b: 10·e^-3 ≈ 0.5
    expect(bal.pickEwma(backend([a, b]))).toBe(b);
    t = 40 * EWMA_DECAY_MS;
    bal.observe(b, 10); // b touched now: its score is 10 again, a's ~0
    expect(bal.pickEwma(backend([a, b]))).toBe(a);
  });

  test("an answer moves the score by the time since the last one (ingress-nginx's decay_ewma), not per request", () => {
    let t = 0;
    const bal = createBalancer(() => t, store());
    const u = ep(1);
    bal.observe(u, 10);
    bal.observe(u, 1000); // same instant: weight 1 on the old score
    expect(bal.ewmaScore(u.authority)).toBe(10);
    t = EWMA_DECAY_MS;
    bal.observe(u, 1000);
    expect(bal.ewmaScore(u.authority)).toBeCloseTo(10 / Math.E + 1000 * (1 - 1 / Math.E), 6);
  });

  test("a new endpoint starts at the mean score of the others (slow start), not at 0", () => {
    const t = 0;
    const bal = createBalancer(() => t, { random: seeded(4), ...store() });
    const old = [ep(1), ep(2)];
    bal.observe(old[0]!, 10);
    bal.observe(old[1]!, 30);
    bal.pickEwma(backend(old));
    const fresh = ep(3);
    const grown = backend([...old, fresh]); // a new Backend object: the endpoints changed
    bal.pickEwma(grown);
    expect(bal.ewmaScore(fresh.authority)).toBe(20);
    const picks = Array.from({ length: 3000 }, () => bal.pickEwma(grown)!);
    // Ranked second of three: about 1/3 of the picks, where a 0 score would have taken 2/3.
    expect(Math.abs(shares(picks, [fresh])[0]! - 1 / 3)).toBeLessThan(0.04);
  });

  test("a retry never takes a tried pod; a pod backing off is left out while another is usable", () => {
    let t = 0;
    const bal = createBalancer(() => t, { random: seeded(5), ...store() });
    const eps = [ep(1), ep(2), ep(3)];
    const b = backend(eps);
    eps.forEach((u, i) => bal.observe(u, i + 1));
    for (let i = 0; i < 200; i++) expect(bal.pickEwma(b, new Set([eps[0]!.authority]))).not.toBe(eps[0]);
    bal.failed(eps[0]!);
    for (let i = 0; i < 200; i++) expect(bal.pickEwma(b)).not.toBe(eps[0]);
    expect(bal.pickEwma(b, new Set([eps[1]!.authority, eps[2]!.authority]))).toBe(eps[0]!); // nothing else left
    t = 10_001;
    expect(bal.pickEwma(backend([]))).toBeNull();
  });
});

describe("ewma in shared memory", () => {
  test("two workers' balancers over one table: a pod one worker found slow is avoided by the other", () => {
    let t = 0;
    const mem = sharedScores();
    // Each worker's balancer clock starts at its own process start; origin makes them one.
    const w0 = createBalancer(() => t, { random: seeded(6), ewma: createSharedEwma(mem, { origin: 1_000, pid: 1 }) });
    const w1 = createBalancer(() => t - 400, { random: seeded(7), ewma: createSharedEwma(mem, { origin: 1_400, pid: 2 }) });
    const [fast, slow] = [ep(1), ep(2)];
    w0.observe(fast, 2);
    w0.observe(slow, 500);
    t = 1_000;
    expect(w1.ewmaScore(slow.authority)).toBeCloseTo(500 * Math.exp(-1_000 / EWMA_DECAY_MS), 6);
    const b = backend([fast, slow]);
    for (let i = 0; i < 100; i++) expect(w1.pickEwma(b)).toBe(fast);
    // An answer seen by worker 1 moves the score worker 0 reads.
    w1.observe(slow, 1);
    const w = Math.exp(-1_000 / EWMA_DECAY_MS); // 1 s since worker 0 moved it
    expect(w0.ewmaScore(slow.authority)).toBeCloseTo(500 * w + 1 * (1 - w), 6);
    t = 1_000 + EWMA_DECAY_MS;
    w1.observe(slow, 1);
    expect(w0.ewmaScore(slow.authority)!).toBeLessThan(200);
  });

  test("slow start only for endpoints added to a backend this worker balanced before (ewma.lua sync), not for those another worker has not scored", () => {
    const t = 0;
    const mem = sharedScores();
    const w0 = createBalancer(() => t, { random: seeded(8), ewma: createSharedEwma(mem, { origin: 0, pid: 1 }) });
    const w1 = createBalancer(() => t, { random: seeded(9), ewma: createSharedEwma(mem, { origin: 0, pid: 2 }) });
    const [a, b, c] = [ep(1), ep(2), ep(3)];
    w0.observe(a, 40); // worker 0 has tried only a
    w1.pickEwma(backend([a, b])); // worker 1's first look at the backend: b is not new
    expect(w1.ewmaScore(b.authority)).toBeNull();
    w1.pickEwma(backend([a, b, c])); // c was added: the mean of the scored ones
    expect(w1.ewmaScore(c.authority)).toBe(40);
    expect(w1.ewmaScore(b.authority)).toBeNull();
  });

  test("bounded: more endpoints than the table holds forget the least recently moved", () => {
    let t = 0;
    const scores = createSharedEwma(sharedScores(), { origin: 0, pid: 1 });
    const bal = createBalancer(() => t, { ewma: scores });
    bal.observe(ep(1), 7);
    for (let i = 0; i < 40_000; i++) {
      t++;
      scores.observe(`10.9.${i >> 8}.${i & 255}:80`, 5, t);
    }
    expect(bal.ewmaScore(ep(1).authority)).toBeNull();
    expect(scores.raw("10.9.156.63:80")).toBe(5); // the last one is kept
  });
});
