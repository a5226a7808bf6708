// What the side-by-side benches share (bench/paired.ts, bench/paired-tls.ts, bench/tls-split.ts,
// bench/lib/side-by-side.ts): their common flags, the series of pairs (a warm-up pair, then
// measured pairs in which whose client starts first alternates, so neither always gets the
// head start) and the report's ratio columns. The two proxies of a pair share CPU 0 during the
// same seconds, so the ratio of their rates is the inverse ratio of their CPU cost per request.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { intFlag } from "./flags.ts";
import type { Tools } from "./install.ts";
import { median } from "./report.ts";
import { startPortico, type Running } from "./systems.ts";

export interface PairedFlags {
  readonly duration: number;
  readonly reps: number;
  readonly aa: number;
  readonly porticoMain: string;
  readonly baselineMain: string | undefined;
  readonly out: string | undefined;
  /** The script's own string flags, by name (their defaults applied). */
  readonly extra: Readonly<Record<string, string | undefined>>;
}

/**
 * --baseline-main, --portico-main, --duration, --reps, --aa, --out and --help, plus the
 * script's own string flags (`extra`: name to default). --help prints `help` and exits 0;
 * a missing required --baseline-main prints it and exits 2; a bad number exits 2 (intFlag).
 */
export function pairedFlags(
  help: string,
  defaults: { readonly reps: number; readonly aa: number; readonly baselineRequired: boolean },
  extra: Readonly<Record<string, string | undefined>> = {},
): PairedFlags {
  const own: Record<string, { type: "string"; default?: string }> = {};
  for (const [name, def] of Object.entries(extra)) own[name] = def === undefined ? { type: "string" } : { type: "string", default: def };
  const { values } = parseArgs({
    options: {
      ...own,
      "baseline-main": { type: "string" },
      "portico-main": { type: "string" },
      duration: { type: "string" },
      reps: { type: "string" },
      aa: { type: "string" },
      out: { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
  const str = (name: string): string | undefined => {
    const v = (values as Record<string, string | boolean | undefined>)[name];
    return typeof v === "string" ? v : undefined;
  };
  if (values.help === true || (defaults.baselineRequired && str("baseline-main") === undefined)) {
    console.log(help);
    process.exit(values.help === true ? 0 : 2);
  }
  return {
    duration: intFlag(str("duration"), 5, 1, 60, "duration"),
    reps: intFlag(str("reps"), defaults.reps, 1, 30, "reps"),
    aa: intFlag(str("aa"), defaults.aa, 0, 30, "aa"),
    porticoMain: str("portico-main") ?? "src/main.ts",
    baselineMain: str("baseline-main"),
    out: str("out"),
    extra: Object.fromEntries(Object.keys(extra).map((k) => [k, str(k)])),
  };
}

/**
 * Starts one Portico of a pair from entry point `main` on `manifests`, alone on CPU 0 with one
 * worker, in its own directory `dir/name`, and adds it to `procs` (stopped in reverse order).
 */
export function porticoStarter(tools: Tools, o: { root: string; dir: string; manifests: string; tls: boolean; procs: Running[] }) {
  return async (main: string, name: string): Promise<Running> => {
    const d = join(o.dir, name);
    mkdirSync(d, { recursive: true });
    const r = await startPortico(tools, o.manifests, { root: o.root, main, dir: d, cpus: "0", workers: 1, tls: o.tls });
    o.procs.push(r);
    return r;
  };
}

export interface Rate {
  readonly rps: number;
}

/** One pair: `a` is the first system's result, `b` the second's, measured in the same seconds. */
export interface Pair<R extends Rate> {
  readonly a: R;
  readonly b: R;
}

/**
 * `n` measured pairs of `x` against `y`, `seconds` each, after a 1 s warm-up pair. `measure`
 * runs both clients at once and returns the first argument's result as `a`; odd pairs start
 * `y`'s client first and are flipped back, so `a` is always `x`'s.
 */
export async function pairSeries<S, R extends Rate>(
  measure: (x: S, y: S, seconds: number) => Promise<Pair<R>>,
  x: S,
  y: S,
  n: number,
  seconds: number,
  log: (msg: string) => void,
  label: string,
): Promise<Pair<R>[]> {
  const got: Pair<R>[] = [];
  await measure(x, y, 1);
  for (let i = 0; i < n; i++) {
    const p = i % 2 === 0 ? await measure(x, y, seconds) : flip(await measure(y, x, seconds));
    log(`${label} ${i + 1}/${n}: ${p.a.rps.toFixed(0)} vs ${p.b.rps.toFixed(0)} req/s = ${(p.a.rps / p.b.rps).toFixed(3)}×`);
    got.push(p);
  }
  return got;
}

function flip<R extends Rate>(p: Pair<R>): Pair<R> {
  return { a: p.b, b: p.a };
}

/**
 * The report's columns for a series: `pairs | ratios | median ratio | median req/s of each`
 * (no leading or trailing bar). `bold` marks the measured comparison's median, not an A/A one.
 */
export function ratioCells(pairs: readonly Pair<Rate>[], bold = true): string {
  const r = pairs.map((p) => p.a.rps / p.b.rps);
  const m = `${median(r).toFixed(3)}×`;
  return `${pairs.length} | ${r.map((x) => x.toFixed(3)).join(", ")} | ${bold ? `**${m}**` : m} | ${median(pairs.map((p) => p.a.rps)).toFixed(0)} vs ${median(pairs.map((p) => p.b.rps)).toFixed(0)}`;
}

/** Prints the report, and writes it to `out` first when a path is given. */
export function writeReport(out: string | undefined, md: string): void {
  if (out !== undefined) {
    mkdirSync(dirname(resolve(out)), { recursive: true });
    writeFileSync(resolve(out), md);
  }
  console.log(md);
}
