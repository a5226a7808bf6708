// A small Prometheus registry of our own: counters, gauges and histograms
// with label names fixed at creation, a bound on label sets per metric, and a plain-data
// snapshot (toJSON) so several worker processes can be summed before exposition.
// Rendering and merging live in exposition.ts, the registry in registry.ts; this file only
// keeps the numbers.

import type { FamilySnapshot, GaugeMerge, HistogramSeries, ScalarSeries } from "./exposition.ts";

/** Default bound on distinct label sets per metric, so label values cannot grow memory without end. */
export const DEFAULT_MAX_SERIES = 10_000;

// Text format 0.0.4: metric names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names
// [a-zA-Z_][a-zA-Z0-9_]*, and names starting with "__" are reserved.
const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export interface MetricOptions {
  readonly name: string;
  readonly help: string;
  readonly labelNames?: readonly string[];
  /** Distinct label sets kept; new ones past it are dropped and counted. */
  readonly maxSeries?: number;
}

export interface GaugeOptions extends MetricOptions {
  /** How worker snapshots combine: "sum" (connections), "max" (generation, leader). */
  readonly merge?: GaugeMerge;
}

export interface HistogramOptions extends MetricOptions {
  /** Upper bounds, strictly increasing, finite; +Inf is implicit. */
  readonly buckets: readonly number[];
}

export type OnOverflow = (metric: string) => void;

function seriesKey(values: readonly string[]): string {
  if (values.length === 1) return values[0] as string;
  // Join with NUL (hot path: no allocation beyond the key). A value holding NUL could make two
  // label sets share a key, so such sets use their JSON form, which never contains a raw NUL.
  let key = "";
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as string;
    if (v.includes("\u0000")) return JSON.stringify(values);
    key = i === 0 ? v : `${key}\u0000${v}`;
  }
  return key;
}

abstract class Metric<S extends { readonly labels: readonly string[] }> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  protected readonly series = new Map<string, S>();
  private readonly maxSeries: number;
  private readonly onOverflow: OnOverflow;
  private epochN = 0;

  constructor(opts: MetricOptions, onOverflow: OnOverflow, reserved: readonly string[] = []) {
    if (!METRIC_NAME.test(opts.name)) throw new Error(`invalid metric name ${opts.name}`);
    const labelNames = Object.freeze([...(opts.labelNames ?? [])]);
    for (const l of labelNames) {
      if (!LABEL_NAME.test(l) || l.startsWith("__") || reserved.includes(l)) {
        throw new Error(`invalid label name ${l} on ${opts.name}`);
      }
    }
    if (new Set(labelNames).size !== labelNames.length) throw new Error(`duplicate label on ${opts.name}`);
    this.name = opts.name;
    this.help = opts.help;
    this.labelNames = labelNames;
    this.maxSeries = opts.maxSeries ?? DEFAULT_MAX_SERIES;
    this.onOverflow = onOverflow;
    // A metric without labels has exactly one series: expose it as 0 from the start.
    if (labelNames.length === 0) this.slot([]);
  }

  protected abstract create(labels: readonly string[]): S;

  /** The series for these label values, or undefined when the bound refuses a new one. */
  protected slot(values: readonly string[]): S | undefined {
    if (values.length !== this.labelNames.length) {
      throw new Error(`${this.name} takes ${this.labelNames.length} label values, got ${values.length}`);
    }
    const key = seriesKey(values);
    let s = this.series.get(key);
    if (s === undefined) {
      if (this.series.size >= this.maxSeries) {
        this.onOverflow(this.name);
        return undefined;
      }
      s = this.create(Object.freeze(values.map(String)));
      this.series.set(key, s);
    }
    return s;
  }

  /**
   * Bumped whenever a series is forgotten: a series kept by a caller (seriesFor) is stale once
   * this changes.
   */
  get epoch(): number {
    return this.epochN;
  }

  /**
   * The series for these label values, for a hot path that caches it (and checks `epoch`
   * before reusing it); undefined when the bound refuses a new one.
   */
  seriesFor(values: readonly string[]): S | undefined {
    return this.slot(values);
  }

  /** Forget one label set (a host whose certificate went away). */
  remove(values: readonly string[]): void {
    this.series.delete(seriesKey(values));
    this.epochN++;
  }

  /** Forget every label set (a gauge recomputed from scratch, e.g. diagnostics by reason). */
  reset(): void {
    this.series.clear();
    this.epochN++;
    if (this.labelNames.length === 0) this.slot([]);
  }

  abstract snapshot(): FamilySnapshot;
}

export interface ScalarState {
  readonly labels: readonly string[];
  value: number;
}

export class Counter extends Metric<ScalarState> {
  protected create(labels: readonly string[]): ScalarState {
    return { labels, value: 0 };
  }

  /** Counters only go up: negative or non-finite amounts are ignored, never thrown on the request path. */
  inc(values: readonly string[] = [], n = 1): void {
    if (!(n >= 0) || !Number.isFinite(n)) return;
    const s = this.slot(values);
    if (s) s.value += n;
  }

  /** inc() on a series from seriesFor(). */
  incSeries(s: ScalarState, n = 1): void {
    if (n >= 0 && Number.isFinite(n)) s.value += n;
  }

  get(values: readonly string[] = []): number {
    return this.series.get(seriesKey(values))?.value ?? 0;
  }

  snapshot(): FamilySnapshot {
    const series: ScalarSeries[] = [...this.series.values()].map((s) => ({ labels: s.labels, value: s.value }));
    return { name: this.name, help: this.help, type: "counter", labelNames: this.labelNames, series };
  }
}

export class Gauge extends Metric<ScalarState> {
  readonly merge: GaugeMerge;

  constructor(opts: GaugeOptions, onOverflow: OnOverflow) {
    super(opts, onOverflow);
    this.merge = opts.merge ?? "sum";
  }

  protected create(labels: readonly string[]): ScalarState {
    return { labels, value: 0 };
  }

  set(values: readonly string[], v: number): void {
    const s = this.slot(values);
    if (s) s.value = v;
  }

  inc(values: readonly string[] = [], n = 1): void {
    const s = this.slot(values);
    if (s) s.value += n;
  }

  dec(values: readonly string[] = [], n = 1): void {
    this.inc(values, -n);
  }

  get(values: readonly string[] = []): number | undefined {
    return this.series.get(seriesKey(values))?.value;
  }

  snapshot(): FamilySnapshot {
    const series: ScalarSeries[] = [...this.series.values()].map((s) => ({ labels: s.labels, value: s.value }));
    return { name: this.name, help: this.help, type: "gauge", labelNames: this.labelNames, merge: this.merge, series };
  }
}

export interface HistogramState {
  readonly labels: readonly string[];
  /** Per-bucket (not cumulative) counts; the last slot is the +Inf bucket. */
  readonly counts: number[];
  sum: number;
  count: number;
}

export class Histogram extends Metric<HistogramState> {
  readonly buckets: readonly number[];

  constructor(opts: HistogramOptions, onOverflow: OnOverflow) {
    // "le" is the bucket label of the text format; a user label of that name would clash.
    super(opts, onOverflow, ["le"]);
    const b = opts.buckets;
    if (b.length === 0 || b.some((x, i) => !Number.isFinite(x) || (i > 0 && x <= (b[i - 1] as number)))) {
      throw new Error(`buckets of ${opts.name} must be finite and strictly increasing`);
    }
    this.buckets = Object.freeze([...b]);
    // The base constructor created the unlabelled series before buckets were known: redo it.
    this.reset();
  }

  protected create(labels: readonly string[]): HistogramState {
    return { labels, counts: new Array<number>((this.buckets?.length ?? 0) + 1).fill(0), sum: 0, count: 0 };
  }

  observe(values: readonly string[], v: number): void {
    if (Number.isNaN(v)) return;
    const s = this.slot(values);
    if (s) this.observeSeries(s, v);
  }

  /** observe() on a series from seriesFor(). */
  observeSeries(s: HistogramState, v: number): void {
    if (Number.isNaN(v)) return;
    const b = this.buckets;
    let i = 0;
    while (i < b.length && v > (b[i] as number)) i++;
    s.counts[i] = (s.counts[i] as number) + 1;
    s.sum += v;
    s.count += 1;
  }

  snapshot(): FamilySnapshot {
    const series: HistogramSeries[] = [...this.series.values()].map((s) => ({
      labels: s.labels,
      counts: [...s.counts],
      sum: s.sum,
      count: s.count,
    }));
    return { name: this.name, help: this.help, type: "histogram", labelNames: this.labelNames, buckets: this.buckets, series };
  }
}
