// Medians and the Markdown report of the data-plane benchmark.

export interface Sample {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  /** CPU % of one core used by the system under test (its whole process tree). */
  readonly cpu: number;
  /** CPU % of the backend during the same run (to show it was not the bottleneck). */
  readonly backendCpu: number;
  readonly wrkCpu: number;
  /** CPU % used by everything else on the machine during the run (noise). */
  readonly otherCpu: number;
  readonly errors: number;
  /** Connections the backend accepted per request during the run (nginx stub_status). */
  readonly newConnsPerRequest: number;
}

export interface Cell {
  readonly scenario: string;
  readonly layout: string;
  readonly system: string;
  readonly samples: Sample[];
  /** VmHWM summed over the process tree, MiB. */
  peakRss: number;
  failure: string | null;
  /** Runs thrown away because other work on the machine was busy during them (each repeated once). */
  discarded: number;
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** Medians of the samples' fields (errors summed), plus the req/s range. */
export interface Summary extends Sample {
  readonly rpsMin: number;
  readonly rpsMax: number;
}

export function summarize(c: Cell): Summary | null {
  if (c.samples.length === 0) return null;
  const pick = (f: (s: Sample) => number) => median(c.samples.map(f));
  const rpss = c.samples.map((s) => s.rps);
  return {
    rps: pick((s) => s.rps),
    rpsMin: Math.min(...rpss),
    rpsMax: Math.max(...rpss),
    p50: pick((s) => s.p50),
    p99: pick((s) => s.p99),
    cpu: pick((s) => s.cpu),
    backendCpu: pick((s) => s.backendCpu),
    wrkCpu: pick((s) => s.wrkCpu),
    otherCpu: pick((s) => s.otherCpu),
    newConnsPerRequest: pick((s) => s.newConnsPerRequest),
    errors: c.samples.reduce((a, s) => a + s.errors, 0),
  };
}

const fmtRps = (n: number) => (n >= 10_000 ? `${(n / 1000).toFixed(1)}k` : n.toFixed(0));
const fmtMs = (n: number) => (n < 1 ? `${(n * 1000).toFixed(0)} µs` : `${n.toFixed(2)} ms`);
const fmtRatio = (a: number, b: number | undefined) => (b && b > 0 && Number.isFinite(a) ? `${(a / b).toFixed(2)}×` : "–");

export interface ReportHeader {
  readonly title: string;
  readonly lines: readonly string[];
}

export function renderTable(cells: readonly Cell[]): string {
  const rows: string[] = [
    "| scenario | layout | system | req/s (median) | min–max | p50 | p99 | proxy CPU | backend CPU | wrk CPU | other CPU | peak RSS | new backend conns/req | req/s ×nginx | p99 ×nginx | req/s ×direct | errors |",
    "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  const find = (c: Cell, system: string) =>
    cells.find((x) => x.scenario === c.scenario && x.layout === c.layout && x.system === system);
  for (const c of cells) {
    const s = summarize(c);
    if (!s) {
      rows.push(`| ${c.scenario} | ${c.layout} | ${c.system} | not run: ${c.failure ?? "no samples"} ||||||||||||||`);
      continue;
    }
    const nginx = find(c, "nginx");
    const direct = find(c, "direct");
    const ns = nginx ? summarize(nginx) : null;
    const ds = direct ? summarize(direct) : null;
    const self = c.system === "nginx" || c.system === "direct";
    rows.push(
      [
        "",
        c.scenario,
        c.layout,
        c.system,
        fmtRps(s.rps),
        `${fmtRps(s.rpsMin)}–${fmtRps(s.rpsMax)}`,
        fmtMs(s.p50),
        fmtMs(s.p99),
        `${s.cpu.toFixed(0)}%`,
        `${s.backendCpu.toFixed(0)}%`,
        `${s.wrkCpu.toFixed(0)}%`,
        `${s.otherCpu.toFixed(0)}%`,
        `${c.peakRss.toFixed(0)} MiB`,
        Number.isFinite(s.newConnsPerRequest) ? s.newConnsPerRequest.toFixed(2) : "–",
        self && c.system === "nginx" ? "1.00×" : fmtRatio(s.rps, ns?.rps),
        self && c.system === "nginx" ? "1.00×" : fmtRatio(s.p99, ns?.p99),
        c.system === "direct" ? "1.00×" : fmtRatio(s.rps, ds?.rps),
        c.discarded > 0 ? `${s.errors} (${c.discarded} noisy run(s) repeated)` : String(s.errors),
        "",
      ].join(" | ").trim(),
    );
  }
  return rows.join("\n");
}

/** `portico` against `baseline` per scenario and layout, when both ran: the before/after figure. */
export function baselineNotes(cells: readonly Cell[]): string[] {
  const notes: string[] = [];
  for (const c of cells) {
    if (c.system !== "portico") continue;
    const base = cells.find((x) => x.scenario === c.scenario && x.layout === c.layout && x.system === "baseline");
    const a = summarize(c);
    const b = base ? summarize(base) : null;
    if (!a || !b) continue;
    notes.push(
      `portico vs baseline, ${c.scenario} (${c.layout}): req/s ${a.rps.toFixed(0)} vs ${b.rps.toFixed(0)} = ${(a.rps / b.rps).toFixed(3)}×, ` +
        `p99 ${(a.p99 / b.p99).toFixed(2)}×, proxy CPU ${a.cpu.toFixed(0)}% vs ${b.cpu.toFixed(0)}%`,
    );
  }
  return notes;
}

export function renderReport(h: ReportHeader, cells: readonly Cell[], notes: readonly string[]): string {
  return [`# ${h.title}`, "", ...h.lines.map((l) => `- ${l}`), "", renderTable(cells), "", ...notes.map((n) => `- ${n}`), ""].join("\n");
}
