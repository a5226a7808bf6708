import { describe, expect, test } from "bun:test";
import { Coalescer, type CoalescerClock } from "./coalescer.ts";

/** A manual clock: timers fire only inside advance(), in due order. */
class FakeClock implements CoalescerClock {
  t = 0;
  private seq = 0;
  private timers = new Map<number, { at: number; fn: () => void }>();
  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.timers.set(id, { at: this.t + ms, fn });
    return id;
  }
  clearTimeout(h: unknown): void {
    this.timers.delete(h as number);
  }
  get armed(): number {
    return this.timers.size;
  }
  advance(ms: number): void {
    const end = this.t + ms;
    for (let guard = 0; guard < 10_000; guard++) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.timers) if (e[1].at <= end && (!next || e[1].at < next[1].at)) next = e;
      if (!next) break;
      this.timers.delete(next[0]);
      this.t = next[1].at;
      next[1].fn();
    }
    this.t = end;
  }
}

function setup(holdoffMs = 100, maxDelayMs = 1000) {
  const clock = new FakeClock();
  const runs: number[] = [];
  const c = new Coalescer({ holdoffMs, maxDelayMs, clock, run: () => runs.push(clock.t) });
  return { clock, runs, c };
}

describe("Coalescer", () => {
  test("a single trigger runs once after the holdoff", () => {
    const { clock, runs, c } = setup();
    c.trigger();
    expect(c.pending).toBe(true);
    clock.advance(99);
    expect(runs).toEqual([]);
    clock.advance(1);
    expect(runs).toEqual([100]);
    expect(c.pending).toBe(false);
    clock.advance(5000);
    expect(runs).toEqual([100]);
  });

  test("a burst runs once, holdoff after its last trigger", () => {
    const { clock, runs, c } = setup();
    for (let i = 0; i < 5; i++) {
      c.trigger();
      clock.advance(50);
    }
    // last trigger at t=200 → run at 300
    clock.advance(1000);
    expect(runs).toEqual([300]);
  });

  test("a steady stream still runs at maxDelay after the burst's first trigger", () => {
    const { clock, runs, c } = setup(100, 1000);
    for (let i = 0; i < 60; i++) {
      c.trigger();
      clock.advance(50);
    }
    // Triggers every 50 ms from 0 to 2950: each burst is cut at its maxDelay (bursts start at 0, 1000, 2000).
    clock.advance(1000);
    expect(runs).toEqual([1000, 2000, 3000]);
  });

  test("only one timer is armed at a time, even for thousands of triggers", () => {
    const { clock, runs, c } = setup();
    for (let i = 0; i < 5000; i++) c.trigger();
    expect(clock.armed).toBe(1);
    clock.advance(100);
    expect(runs).toEqual([100]);
  });

  test("a trigger during run starts a new burst", () => {
    const clock = new FakeClock();
    const runs: number[] = [];
    const c: Coalescer = new Coalescer({
      holdoffMs: 10,
      maxDelayMs: 100,
      clock,
      run: () => {
        runs.push(clock.t);
        if (runs.length === 1) c.trigger();
      },
    });
    c.trigger();
    clock.advance(100);
    expect(runs).toEqual([10, 20]);
  });

  test("a throwing run does not wedge it", () => {
    const clock = new FakeClock();
    let n = 0;
    const c = new Coalescer({ holdoffMs: 10, maxDelayMs: 100, clock, run: () => { n++; throw new Error("boom"); } });
    c.trigger();
    expect(() => clock.advance(10)).toThrow("boom");
    c.trigger();
    expect(() => clock.advance(10)).toThrow("boom");
    expect(n).toBe(2);
  });

  test("flush runs a pending burst now; dispose cancels and ignores later triggers", () => {
    const { clock, runs, c } = setup();
    c.flush();
    expect(runs).toEqual([]);
    c.trigger();
    clock.advance(30);
    c.flush();
    expect(runs).toEqual([30]);
    expect(clock.armed).toBe(0);
    c.trigger();
    c.dispose();
    expect(clock.armed).toBe(0);
    c.trigger();
    clock.advance(5000);
    expect(runs).toEqual([30]);
  });

  test("holdoff 0 runs on the next tick; maxDelay below holdoff caps it", () => {
    const a = setup(0, 0);
    a.c.trigger();
    a.clock.advance(0);
    expect(a.runs).toEqual([0]);
    const b = setup(500, 200);
    b.c.trigger();
    b.clock.advance(1000);
    expect(b.runs).toEqual([200]);
  });
});

describe("Coalescer with leading", () => {
  function lead(holdoffMs = 100, maxDelayMs = 1000) {
    const clock = new FakeClock();
    const runs: number[] = [];
    const c = new Coalescer({ holdoffMs, maxDelayMs, clock, leading: true, run: () => runs.push(clock.t) });
    return { clock, runs, c };
  }

  test("an isolated trigger runs on the next tick; triggers of the same tick join it", () => {
    const { clock, runs, c } = lead();
    clock.advance(5000);
    c.trigger();
    c.trigger();
    c.trigger();
    expect(runs).toEqual([]); // never inside trigger() itself
    clock.advance(0);
    expect(runs).toEqual([5000]);
    expect(c.pending).toBe(false);
  });

  test("a trigger soon after a run waits the holdoff; after a quiet holdoff it runs at once again", () => {
    const { clock, runs, c } = lead();
    c.trigger();
    clock.advance(30);
    c.trigger(); // 30 ms after the run: a burst, due at 130
    clock.advance(99);
    expect(runs).toEqual([0]);
    clock.advance(1);
    expect(runs).toEqual([0, 130]);
    clock.advance(100); // t = 230, 100 ms after the last run: quiet again
    c.trigger();
    clock.advance(0);
    expect(runs).toEqual([0, 130, 230]);
  });

  test("a steady stream still gives one run per burst, cut at maxDelay", () => {
    const { clock, runs, c } = lead(100, 1000);
    for (let i = 0; i < 60; i++) {
      c.trigger();
      clock.advance(50);
    }
    clock.advance(1000);
    // t=0 leading; then bursts from 50 (cut at 1050), from 1050 (the trigger right after that
    // run; cut at 2050) and from 2050 (cut at 3050). Never two runs within the holdoff.
    expect(runs).toEqual([0, 1050, 2050, 3050]);
  });

  test("a trigger from inside run() does not run again at once", () => {
    const clock = new FakeClock();
    const runs: number[] = [];
    const c: Coalescer = new Coalescer({
      holdoffMs: 10,
      maxDelayMs: 100,
      clock,
      leading: true,
      run: () => {
        runs.push(clock.t);
        if (runs.length === 1) c.trigger();
      },
    });
    c.trigger();
    clock.advance(100);
    expect(runs).toEqual([0, 10]);
  });

  test("random triggers: runs at least holdoff apart, every trigger served within maxDelay, a quiet trigger at once", () => {
    let seed = 12345;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let round = 0; round < 50; round++) {
      const holdoff = 20 + Math.floor(rand() * 80);
      const maxDelay = holdoff + Math.floor(rand() * 400);
      const { clock, runs, c } = lead(holdoff, maxDelay);
      // Each trigger with the number of runs before it: the run that serves it is the next one
      // (a run at the same fake time but before the trigger does not count).
      const triggers: { t: number; before: number }[] = [];
      const quiet: number[] = [];
      for (let i = 0; i < 200; i++) {
        clock.advance(Math.floor(rand() ** 3 * 3 * holdoff));
        const last = runs[runs.length - 1];
        if (!c.pending && (last === undefined || clock.t - last >= holdoff)) quiet.push(clock.t);
        triggers.push({ t: clock.t, before: runs.length });
        c.trigger();
      }
      clock.advance(maxDelay + 1);
      for (let i = 1; i < runs.length; i++) expect((runs[i] as number) - (runs[i - 1] as number)).toBeGreaterThanOrEqual(holdoff);
      for (const { t, before } of triggers) {
        const served = runs[before];
        expect(served).toBeDefined();
        expect((served as number) - t).toBeLessThanOrEqual(maxDelay);
      }
      for (const t of quiet) expect(runs).toContain(t);
      expect(runs.length).toBeLessThan(triggers.length + 1);
    }
  });
});
