import { expect, test } from "bun:test";
import { baselineNotes, median, renderTable, summarize, type Cell, type Sample } from "./report.ts";

const sample = (rps: number, p99 = 2): Sample => ({
  rps, p50: 1, p99, cpu: 90, backendCpu: 40, wrkCpu: 40, otherCpu: 0, errors: 0, newConnsPerRequest: 0,
});
const cell = (system: string, rpss: number[]): Cell => ({
  scenario: "small", layout: "pinned", system, samples: rpss.map((r) => sample(r)), peakRss: 20, failure: null, discarded: 0,
});

test("median of odd and even counts", () => {
  expect(median([3, 1, 2])).toBe(2);
  expect(median([4, 1, 3, 2])).toBe(2.5);
  expect(Number.isNaN(median([]))).toBe(true);
});

test("summaries take medians and keep the range", () => {
  const s = summarize(cell("portico", [10_000, 30_000, 20_000]));
  expect(s?.rps).toBe(20_000);
  expect(s?.rpsMin).toBe(10_000);
  expect(s?.rpsMax).toBe(30_000);
});

test("ratios are computed against nginx and direct of the same scenario and layout", () => {
  const t = renderTable([cell("portico", [20_000]), cell("nginx", [40_000]), cell("direct", [80_000])]);
  const row = t.split("\n").find((l) => l.includes("| portico |")) ?? "";
  expect(row).toContain("0.50×");
  expect(row).toContain("0.25×");
});

test("a system that did not run says why", () => {
  const c: Cell = { ...cell("portico", []), failure: "src/main.ts not present yet" };
  expect(renderTable([c])).toContain("not run: src/main.ts not present yet");
});

test("portico is set against the baseline of the same scenario and layout", () => {
  const notes = baselineNotes([cell("portico", [97_000]), cell("baseline", [100_000]), { ...cell("portico", [5]), layout: "unpinned" }]);
  expect(notes).toEqual(["portico vs baseline, small (pinned): req/s 97000 vs 100000 = 0.970×, p99 1.00×, proxy CPU 90% vs 90%"]);
});
