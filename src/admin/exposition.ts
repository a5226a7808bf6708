// Registry snapshots as plain data, their text rendering (Prometheus text format 0.0.4), and
// the sum of snapshots from several worker processes (with --workers N ≥ 2 each worker keeps
// its own registry; the primary asks each for `toJSON()` and serves
// `formatExposition(sumSnapshots(...))`, docs/design.md "Workers").

import * as v from "valibot";

export type GaugeMerge = "sum" | "max" | "min";

export interface ScalarSeries {
  readonly labels: readonly string[];
  readonly value: number;
}

export interface HistogramSeries {
  readonly labels: readonly string[];
  /** Per-bucket counts (not cumulative), one more than `buckets`: the last is +Inf. */
  readonly counts: readonly number[];
  readonly sum: number;
  readonly count: number;
}

interface FamilyBase {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
}

export type FamilySnapshot =
  | (FamilyBase & { readonly type: "counter"; readonly series: readonly ScalarSeries[] })
  | (FamilyBase & { readonly type: "gauge"; readonly merge: GaugeMerge; readonly series: readonly ScalarSeries[] })
  | (FamilyBase & { readonly type: "histogram"; readonly buckets: readonly number[]; readonly series: readonly HistogramSeries[] });

export interface RegistrySnapshot {
  readonly families: readonly FamilySnapshot[];
}

/** Sample values: the text format spells infinities "+Inf"/"-Inf" and not-a-number "NaN". */
export function formatValue(n: number): string {
  if (Number.isNaN(n)) return "NaN";
  if (n === Infinity) return "+Inf";
  if (n === -Infinity) return "-Inf";
  return String(n);
}

// Text format 0.0.4: in label values `\`, `"` and line feed are escaped; in HELP text only
// `\` and line feed. The exposition is UTF-8, so lone surrogates are replaced first.
export function escapeLabelValue(s: string): string {
  return s.toWellFormed().replace(/[\\"\n]/g, (c) => (c === "\n" ? "\\n" : `\\${c}`));
}

export function escapeHelp(s: string): string {
  return s.toWellFormed().replace(/[\\\n]/g, (c) => (c === "\n" ? "\\n" : "\\\\"));
}

/** `a="x",b="y"` without braces (empty for no labels). */
function labelPairs(names: readonly string[], values: readonly string[]): string {
  return names.map((n, i) => `${n}="${escapeLabelValue(values[i] ?? "")}"`).join(",");
}

const braces = (pairs: string) => (pairs === "" ? "" : `{${pairs}}`);

function compareLabels(a: { labels: readonly string[] }, b: { labels: readonly string[] }): number {
  const n = Math.min(a.labels.length, b.labels.length);
  for (let i = 0; i < n; i++) {
    const x = a.labels[i] as string;
    const y = b.labels[i] as string;
    if (x !== y) return x < y ? -1 : 1;
  }
  return a.labels.length - b.labels.length;
}

/** Render a snapshot; families by name, series by label values, so scrapes diff cleanly. */
export function formatExposition(snap: RegistrySnapshot): string {
  const out: string[] = [];
  const families = [...snap.families].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const f of families) {
    out.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
    if (f.type === "histogram") {
      const les = f.buckets.map((le) => `le="${formatValue(le)}"`);
      for (const s of [...f.series].sort(compareLabels)) {
        const pairs = labelPairs(f.labelNames, s.labels);
        const pre = `${f.name}_bucket{${pairs === "" ? "" : `${pairs},`}`;
        let cumulative = 0;
        les.forEach((le, i) => {
          cumulative += s.counts[i] ?? 0;
          out.push(`${pre}${le}} ${formatValue(cumulative)}`);
        });
        // The +Inf bucket always equals _count (text format: histograms).
        out.push(`${pre}le="+Inf"} ${formatValue(s.count)}`);
        out.push(`${f.name}_sum${braces(pairs)} ${formatValue(s.sum)}`);
        out.push(`${f.name}_count${braces(pairs)} ${formatValue(s.count)}`);
      }
    } else {
      for (const s of [...f.series].sort(compareLabels)) {
        out.push(`${f.name}${braces(labelPairs(f.labelNames, s.labels))} ${formatValue(s.value)}`);
      }
    }
  }
  return out.length === 0 ? "" : `${out.join("\n")}\n`;
}

function sameList<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function combine(mode: GaugeMerge | "sum", a: number, b: number): number {
  return mode === "max" ? Math.max(a, b) : mode === "min" ? Math.min(a, b) : a + b;
}

/**
 * Sum snapshots from several processes: counters and histograms add up, gauges follow their
 * family's `merge`. A family whose type, labels or buckets disagree with the first one seen
 * is skipped for that snapshot rather than producing a malformed exposition.
 */
export function sumSnapshots(snaps: readonly RegistrySnapshot[]): RegistrySnapshot {
  const families = new Map<string, { first: FamilySnapshot; series: Map<string, ScalarSeries | HistogramSeries> }>();
  for (const snap of snaps) {
    for (const f of snap.families) {
      let acc = families.get(f.name);
      if (acc === undefined) {
        acc = { first: f, series: new Map() };
        families.set(f.name, acc);
      }
      const first = acc.first;
      if (first.type !== f.type || !sameList(first.labelNames, f.labelNames)) continue;
      if (first.type === "histogram" && f.type === "histogram" && !sameList(first.buckets, f.buckets)) continue;
      const mode = first.type === "gauge" ? first.merge : "sum";
      for (const s of f.series) {
        const key = JSON.stringify(s.labels);
        const prev = acc.series.get(key);
        if (prev === undefined) {
          acc.series.set(key, s);
        } else if ("counts" in prev && "counts" in s) {
          acc.series.set(key, {
            labels: s.labels,
            counts: prev.counts.map((c, i) => c + (s.counts[i] ?? 0)),
            sum: prev.sum + s.sum,
            count: prev.count + s.count,
          });
        } else if ("value" in prev && "value" in s) {
          acc.series.set(key, { labels: s.labels, value: combine(mode, prev.value, s.value) });
        }
      }
    }
  }
  const out: FamilySnapshot[] = [];
  for (const { first, series } of families.values()) {
    const list = [...series.values()];
    if (first.type === "histogram") out.push({ ...first, series: list.filter((s): s is HistogramSeries => "counts" in s) });
    else out.push({ ...first, series: list.filter((s): s is ScalarSeries => "value" in s) });
  }
  return { families: out };
}

// Snapshots cross a process boundary (worker IPC): validate their shape at that edge.
// JSON turns non-finite numbers into null; read null back as NaN rather than rejecting.
const num = v.pipe(
  v.nullable(v.number()),
  v.transform((n) => (n === null ? Number.NaN : n)),
);
const labels = v.array(v.string());
const base = { name: v.pipe(v.string(), v.regex(/^[a-zA-Z_:][a-zA-Z0-9_:]*$/)), help: v.string(), labelNames: labels };
const scalar = v.object({ labels, value: num });
const SnapshotSchema = v.object({
  families: v.array(
    v.variant("type", [
      v.object({ ...base, type: v.literal("counter"), series: v.array(scalar) }),
      v.object({ ...base, type: v.literal("gauge"), merge: v.picklist(["sum", "max", "min"]), series: v.array(scalar) }),
      v.object({
        ...base,
        type: v.literal("histogram"),
        buckets: v.array(v.number()),
        series: v.array(v.object({ labels, counts: v.array(v.number()), sum: num, count: v.number() })),
      }),
    ]),
  ),
});

/** Parse a snapshot received from another process; null when it is not one. */
export function parseSnapshot(input: unknown): RegistrySnapshot | null {
  const r = v.safeParse(SnapshotSchema, input);
  if (!r.success) return null;
  // Shapes the schema cannot say: arity of every series, and well-formed buckets.
  for (const f of r.output.families) {
    if (f.series.some((s) => s.labels.length !== f.labelNames.length)) return null;
    if (f.type === "histogram") {
      if (f.buckets.some((b, i) => !Number.isFinite(b) || (i > 0 && b <= (f.buckets[i - 1] as number)))) return null;
      if (f.series.some((s) => s.counts.length !== f.buckets.length + 1)) return null;
    }
  }
  return r.output;
}
