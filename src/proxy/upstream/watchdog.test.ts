import { expect, test } from "bun:test";
import { createWatchdog, sweep, TICK_MS } from "./watchdog.ts";

test("fires once after its time, not before; touch postpones; stop cancels", async () => {
  const fired: string[] = [];
  const t0 = performance.now();
  let firedAt = 0;
  createWatchdog(300, () => {
    fired.push("plain");
    firedAt = performance.now() - t0;
  });
  const touched = createWatchdog(300, () => fired.push("touched"));
  const stopped = createWatchdog(60, () => fired.push("stopped"));
  stopped.stop();
  await Bun.sleep(200);
  touched.touch(); // its deadline moves from 300 to 500 ms
  await Bun.sleep(220);
  expect(fired).toEqual(["plain"]);
  expect(firedAt).toBeGreaterThanOrEqual(299);
  await Bun.sleep(200 + TICK_MS);
  expect(fired).toEqual(["plain", "touched"]);
});

test("many watchdogs: stopping some in any order leaves the others intact", async () => {
  const fired = new Set<number>();
  const dogs = Array.from({ length: 50 }, (_, i) => createWatchdog(40, () => fired.add(i)));
  // stop every third, from the middle, the ends and repeated stops
  for (let i = 0; i < 50; i += 3) dogs[i]!.stop();
  dogs[0]!.stop();
  dogs[49]!.stop();
  await Bun.sleep(40 + TICK_MS * 3);
  for (let i = 0; i < 50; i++) expect(fired.has(i)).toBe(!(i % 3 === 0 || i === 49));
  // a zero or infinite time never fires
  let n = 0;
  createWatchdog(0, () => n++);
  createWatchdog(Infinity, () => n++);
  await Bun.sleep(TICK_MS * 2);
  expect(n).toBe(0);
});

test("a watchdog stopped by another's callback in the same sweep does not fire, and the rest still do", () => {
  const fired: string[] = [];
  // Created in this order, the list is c → b → a (newest first).
  const a = createWatchdog(1, () => fired.push("a"));
  let b: { stop(): void } | null = null;
  b = createWatchdog(1, () => fired.push("b"));
  createWatchdog(1, () => {
    fired.push("c");
    b?.stop(); // c's callback stops b, which is due in the same sweep
  });
  const until = performance.now() + 5;
  while (performance.now() < until) {} // all three are due now
  sweep();
  expect(fired).toEqual(["c", "a"]);
  a.stop();
});
