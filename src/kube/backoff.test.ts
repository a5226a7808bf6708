import { expect, test } from "bun:test";
import { backoffDelay, sleep } from "./backoff.ts";

test("0.8 s doubling to 30 s, jittered within ±20 %", () => {
  const p = (r: number) => ({ backoffInitialMs: 800, backoffMaxMs: 30_000, random: () => r });
  expect([0, 1, 2, 3, 4, 5, 6].map((a) => backoffDelay(a, p(0.5)))).toEqual([800, 1600, 3200, 6400, 12800, 25600, 30000]);
  expect(backoffDelay(0, p(0))).toBeCloseTo(640);
  expect(backoffDelay(0, p(0.999))).toBeCloseTo(959.6, 0);
  expect(backoffDelay(40, p(0.999))).toBe(30_000);
});

test("sleep returns at once when aborted", async () => {
  const ac = new AbortController();
  const t0 = Date.now();
  const s = sleep(10_000, ac.signal);
  ac.abort();
  await s;
  expect(Date.now() - t0).toBeLessThan(1000);
});
