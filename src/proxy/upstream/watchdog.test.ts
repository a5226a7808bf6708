// The watchdog's contract, checked by sweeping by hand: a synchronous test runs no timer, so
// the shared ticker cannot sweep in between, and what a sweep fires follows only from the
// times the nodes were created or touched (watchdog.ts: due when `now - last >= ms`). The
// ticker itself is checked by waiting for a later watchdog to fire (a sequence point), never
// by a sleep of some length.
import { expect, test } from "bun:test";
import { eventually } from "../../../test/wait.ts";
import { createWatchdog, sweep } from "./watchdog.ts";

/** Spins until `ms` have passed since `from` (no timer can run meanwhile, by design of the test). */
function spinUntil(from: number, ms: number): void {
  while (performance.now() - from < ms) {}
}

test("not due, nothing fires; due, it fires once; touch postpones; stop cancels", () => {
  // Long enough that a pause of the process between touch() and the sweep's clock read (two
  // adjacent statements) cannot make the touched node due by itself.
  const MS = 150;
  const fired: string[] = [];
  const plain = createWatchdog(MS, () => fired.push("plain"));
  const touched = createWatchdog(MS, () => fired.push("touched"));
  const stopped = createWatchdog(MS, () => fired.push("stopped"));
  const far = createWatchdog(60_000, () => fired.push("far"));
  stopped.stop();
  sweep(); // none is due yet
  expect(fired).toEqual([]);
  spinUntil(performance.now(), MS + 1); // past every deadline set at creation
  touched.touch(); // its deadline is now MS from here
  sweep();
  expect(fired).toEqual(["plain"]);
  sweep(); // fired once: unlinked, never again
  expect(fired).toEqual(["plain"]);
  spinUntil(performance.now(), MS + 1);
  sweep();
  expect(fired).toEqual(["plain", "touched"]);
  far.stop();
});

test("many watchdogs: stopping some in any order leaves the others intact (the ticker fires them)", async () => {
  const fired = new Set<number>();
  const dogs = Array.from({ length: 50 }, (_, i) => createWatchdog(40, () => fired.add(i)));
  // stop every third, from the middle, the ends and repeated stops
  for (let i = 0; i < 50; i += 3) dogs[i]!.stop();
  dogs[0]!.stop();
  dogs[49]!.stop();
  // A zero or infinite time never fires (createWatchdog links nothing for it).
  let never = 0;
  createWatchdog(0, () => never++);
  createWatchdog(Infinity, () => never++);
  // A later watchdog with a later deadline: the sweep that fires it has every earlier deadline
  // behind it, so each of the fifty that can fire has fired by then (the sequence point).
  let marker = false;
  createWatchdog(80, () => (marker = true));
  await eventually(() => marker, 5_000, "the marker watchdog fired by the ticker");
  for (let i = 0; i < 50; i++) expect([i, fired.has(i)]).toEqual([i, !(i % 3 === 0 || i === 49)]);
  expect(never).toBe(0);
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
  spinUntil(performance.now(), 5); // all three are due now
  sweep();
  expect(fired).toEqual(["c", "a"]);
  a.stop();
});
