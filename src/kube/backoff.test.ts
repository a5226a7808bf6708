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
  const s = sleep(10_000, ac.signal);
  expect(Bun.peek.status(s)).toBe("pending");
  ac.abort();
  // Settled by the abort itself, not by its 10 s timer: one turn of the loop later it is done.
  await new Promise((r) => setImmediate(r));
  expect(Bun.peek.status(s)).toBe("fulfilled");
  // An already aborted signal settles at once too.
  expect(Bun.peek.status(sleep(10_000, ac.signal))).toBe("fulfilled");
});
