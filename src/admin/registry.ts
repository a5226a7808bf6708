// The registry: owns every metric by name, refuses name clashes (a histogram also owns its
// _bucket/_sum/_count names), counts label sets refused by the cardinality bound, and runs
// collectors before each snapshot.

import { formatExposition, type RegistrySnapshot } from "./exposition.ts";
import { Counter, Gauge, Histogram, type GaugeOptions, type HistogramOptions, type MetricOptions, type OnOverflow } from "./metrics.ts";

export const OVERFLOW_METRIC = "portico_metrics_label_overflow_total";

type AnyMetric = Counter | Gauge | Histogram;

export class Registry {
  private readonly metrics = new Map<string, AnyMetric>();
  private readonly collectors: Array<() => void> = [];
  readonly overflow: Counter;
  private readonly collectErrors: Counter;

  constructor() {
    const overflow = new Counter(
      { name: OVERFLOW_METRIC, help: "Label sets refused because a metric reached its series bound.", labelNames: ["metric"], maxSeries: 1000 },
      () => {},
    );
    this.overflow = overflow;
    this.metrics.set(overflow.name, overflow);
    this.collectErrors = this.counter({ name: "portico_metrics_collect_errors_total", help: "Collectors that threw while preparing a scrape." });
  }

  private readonly countOverflow: OnOverflow = (metric) => this.overflow.inc([metric]);

  private add<M extends AnyMetric>(m: M): M {
    // Histograms also own name_bucket/_sum/_count; refuse any clash so no series is duplicated.
    const names = (x: AnyMetric) => (x instanceof Histogram ? [x.name, `${x.name}_bucket`, `${x.name}_sum`, `${x.name}_count`] : [x.name]);
    const taken = new Set([...this.metrics.values()].flatMap(names));
    if (names(m).some((n) => taken.has(n))) throw new Error(`metric ${m.name} already registered`);
    this.metrics.set(m.name, m);
    return m;
  }

  counter(opts: MetricOptions): Counter {
    return this.add(new Counter(opts, this.countOverflow));
  }

  gauge(opts: GaugeOptions): Gauge {
    return this.add(new Gauge(opts, this.countOverflow));
  }

  histogram(opts: HistogramOptions): Histogram {
    return this.add(new Histogram(opts, this.countOverflow));
  }

  /** Run `fn` before every snapshot (e.g. read a live count into a gauge). */
  onCollect(fn: () => void): void {
    this.collectors.push(fn);
  }

  /** Plain data, safe to send over IPC and sum with `sumSnapshots`. */
  toJSON(): RegistrySnapshot {
    for (const fn of this.collectors) {
      // A failing collector leaves its gauge stale; it must not take /metrics down with it.
      try {
        fn();
      } catch {
        this.collectErrors.inc();
      }
    }
    return { families: [...this.metrics.values()].map((m) => m.snapshot()) };
  }

  /** The text format 0.0.4 exposition of this process alone. */
  expose(): string {
    return formatExposition(this.toJSON());
  }
}
