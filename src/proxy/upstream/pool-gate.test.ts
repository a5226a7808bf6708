import { expect, test } from "bun:test";
import { eventually } from "../../../test/wait.ts";
import { PoolGate, processBusy, type SlotHolder } from "./pool-gate.ts";

const holder = (): SlotHolder => ({ slot: -1 });

test("under the cap a slot is taken synchronously; past it the oldest waiter gets the next freed one", async () => {
  const g = new PoolGate(2, 60_000, () => true);
  const a = holder();
  const b = holder();
  expect(g.acquire(a)).toBeNull();
  expect(g.acquire(b)).toBeNull();
  const order: string[] = [];
  const c = holder();
  const d = holder();
  const pc = g.acquire(c)!.then(() => order.push("c"));
  const pd = g.acquire(d)!.then(() => order.push("d"));
  expect(g.waiting).toBe(2);
  g.release(a);
  g.release(a); // a second release of the same holder frees nothing
  await pc;
  expect(order).toEqual(["c"]);
  expect(g.waiting).toBe(1);
  g.release(b);
  await pd;
  expect(order).toEqual(["c", "d"]);
  g.release(c);
  g.release(d);
  expect(g.held).toBe(0);
  expect(g.waiting).toBe(0);
});

test("slots held past the longest wait are forgotten: the waiters go, and those slots' ends free nothing", async () => {
  const g = new PoolGate(2, 5, () => true);
  const slowA = holder();
  const slowB = holder();
  g.acquire(slowA);
  g.acquire(slowB);
  const waiters = [holder(), holder(), holder()];
  let went = 0;
  for (const w of waiters) void g.acquire(w)!.then(() => went++);
  // Two go up to the cap of the new count; the third waits its bound again.
  await eventually(() => went === 3, 5_000, "every waiter let go");
  g.release(slowA);
  g.release(slowB);
  // The forgotten slots gave nothing back: the new epoch's count is untouched by them.
  expect(g.held).toBe(1);
  for (const w of waiters) g.release(w);
  expect(g.held).toBe(0);
});

test("past the cap on a thread with idle time nothing waits, and whoever waited goes too", async () => {
  let busy = true;
  const g = new PoolGate(1, 60_000, () => busy);
  g.acquire(holder());
  const waiting = holder();
  const p = g.acquire(waiting);
  expect(p).not.toBeNull();
  busy = false;
  const late = holder();
  expect(g.acquire(late)).toBeNull();
  await p;
  expect(waiting.slot).toBeGreaterThanOrEqual(0);
  expect(g.waiting).toBe(0);
  expect(g.held).toBe(3);
});

test("the process reads as busy while it computes and not while it sleeps (CPU time and Linux schedstat)", async () => {
  const busy = processBusy();
  busy();
  await Bun.sleep(100);
  expect(busy()).toBe(false);
  // Runnable the whole time: on the CPU or in its run queue, however loaded the machine. 100 ms,
  // so that CPU time accounted a scheduler tick late (4 ms at HZ=250) cannot bring it under 90%.
  const t0 = performance.now();
  while (performance.now() - t0 < 100) {}
  expect(busy()).toBe(true);
});

test("waiters go once the thread has idle time, without waiting for a slot or the bound", async () => {
  let busy = true;
  const g = new PoolGate(1, 60_000, () => busy, 5);
  g.acquire(holder());
  const w = holder();
  let went = false;
  void g.acquire(w)!.then(() => (went = true));
  busy = false;
  await eventually(() => went, 5_000, "the waiter let go");
  expect(g.held).toBe(2);
});
