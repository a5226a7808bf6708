// Two builds of Portico measured at the same time: `bun bench/paired.ts --baseline-main F`.
// Loopback only; every process it starts is stopped.
//
// Why: the interleaved runs of bench/run.ts compare runs made seconds apart, and on a shared
// machine the rate moves by more than 3% from one run to the next (one such run of this tree
// against the previous release gave pair ratios from 0.81 to 1.04). Here both proxies share CPU 0 during the same
// seconds, each driven by its own wrk on CPU 1 against the same backend. The scheduler gives
// each about half of CPU 0, so the ratio of their rates is the inverse ratio of their CPU cost
// per request, under the same conditions, and whatever slows the machine slows both alike.
// The report includes an A/A check (the build against itself) so the noise floor is stated
// with the figure.
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { ensureTools, versions } from "./lib/install.ts";
import { addCleanup, installCleanup, runMain, stopAll } from "./lib/procs.ts";
import { pairedFlags, pairSeries, porticoStarter, ratioCells, writeReport, type Pair as PairOf } from "./lib/paired-run.ts";
import { HOST, startBackend, upstreamsFor, writeManifests, type Running } from "./lib/systems.ts";
import { runWrk, type WrkResult } from "./lib/wrk.ts";

const HELP = `bun bench/paired.ts --baseline-main F [options]
  --baseline-main F  entry point of the build to compare with (another tree's src/main.ts)
  --portico-main F   entry point of this build (default src/main.ts)
  --duration S       seconds per measured pair (default 5)
  --reps N           pairs (default 7)
  --aa N             A/A pairs (this build against itself) before the comparison (default 3)
  --out FILE         report path (default bench/results/paired.md)`;

const flags = pairedFlags(HELP, { reps: 7, aa: 3, baselineRequired: true });
const { duration, reps, aa, porticoMain } = flags;
const baselineMain = flags.baselineMain ?? "";
const ROOT = join(import.meta.dir, "..");
const out = flags.out ?? join(import.meta.dir, "results", "paired.md");
const log = (msg: string) => process.stderr.write(`[paired ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const CLIENT_CPU = "1";

type Pair = PairOf<WrkResult>;

async function main(): Promise<void> {
  if (cpus().length < 2) throw new Error("needs 2 CPUs: both proxies on CPU 0, the clients and the backend on CPU 1");
  installCleanup();
  const tools = await ensureTools(log);
  const v = versions(tools);
  const dir = mkdtempSync(join(tmpdir(), "portico-paired-"));
  addCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const started = new Date();
  const load = loadavg().map((x) => x.toFixed(2)).join(" ");
  const procs: Running[] = [];
  let aaPairs: Pair[] = [];
  let pairs: Pair[] = [];
  try {
    const backend = await startBackend(tools, join(dir, "backend"), CLIENT_CPU, 0);
    procs.push({ proc: backend.proc, http: 0, https: 0, stop: backend.stop });
    const manifests = writeManifests(dir, upstreamsFor(backend.ports, "keepalive"), null);
    const start = porticoStarter(tools, { root: ROOT, dir, manifests, tls: false, procs });
    const portico = await start(porticoMain, "portico");
    const twin = await start(porticoMain, "twin");
    const baseline = await start(baselineMain, "baseline");
    // Both wrk runs start together and last as long; a warm-up pair first, then the measured ones.
    const pair = async (a: Running, b: Running, seconds: number): Promise<Pair> => {
      const run = (p: Running) =>
        runWrk({
          url: `http://127.0.0.1:${p.http}/`, connections: 64, threads: 1, seconds, host: HOST,
          cpus: CLIENT_CPU, wrk: tools.wrk, taskset: tools.taskset,
        });
      const [ra, rb] = await Promise.all([run(a), run(b)]);
      if (ra.errors > 0 || rb.errors > 0 || ra.non2xx > 0 || rb.non2xx > 0) throw new Error(`errors in a pair: ${JSON.stringify({ ra, rb })}`);
      return { a: ra, b: rb };
    };
    const series = (a: Running, b: Running, n: number, what: string) => pairSeries(pair, a, b, n, duration, log, what);
    aaPairs = await series(portico, twin, aa, "A/A");
    pairs = await series(portico, baseline, reps, "portico vs baseline");
  } finally {
    for (const p of procs.reverse()) await p.stop();
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
  const lines = [
    "# Portico against another build, measured at the same time",
    "",
    `- date: ${started.toISOString()} (${((Date.now() - started.getTime()) / 60000).toFixed(1)} min); command: \`bun bench/paired.ts ${process.argv.slice(2).join(" ")}\``,
    `- machine: ${cpus().length} × ${cpus()[0]?.model ?? "?"}; load average at start: ${load}`,
    `- versions: bun ${v.bun}, ${v.nginx}, ${v.wrk}`,
    `- how the cores are shared: both proxies on CPU 0 (\`taskset -c 0\`, \`--workers 1\`, access log off), each driven by its own wrk (1 thread, 64 connections) on CPU 1, beside one nginx backend (13-byte body, keep-alive) also on CPU 1; the two wrk runs of a pair start together and last ${duration} s; which one starts first alternates`,
    `- portico: \`${porticoMain}\`; baseline: \`${baselineMain}\``,
    "- the ratio is portico's req/s over baseline's in the same seconds: the inverse ratio of their CPU cost per request",
    "",
    "| comparison | pairs | ratios | median ratio | median req/s (each, sharing CPU 0) |",
    "|---|---:|---|---:|---:|",
    ...(aaPairs.length === 0 ? [] : [`| A/A: this build against itself | ${ratioCells(aaPairs, false)} |`]),
    `| portico vs baseline | ${ratioCells(pairs)} |`,
    "",
  ];
  const md = lines.join("\n");
  writeReport(out, md);
  log(`wrote ${out}`);
}

await runMain(main);
