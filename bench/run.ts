// Data-plane benchmark: Portico vs nginx (configured like ingress-nginx) vs direct-to-backend.
// `bun run bench` (or `bun bench/run.ts --help`). Loopback only; every process it starts is stopped.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, loadavg, cpus } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { makeCert } from "./lib/certs.ts";
import { intFlag } from "./lib/flags.ts";
import { ensureTools, versions } from "./lib/install.ts";
import { addCleanup, installCleanup, runMain, stopAll } from "./lib/procs.ts";
import { baselineNotes, renderReport, summarize, type Cell } from "./lib/report.ts";
import { runScenario } from "./lib/scenario-run.ts";
import { LAYOUTS, SCENARIOS, SYSTEMS } from "./lib/scenarios.ts";
import { startBackend } from "./lib/systems.ts";

const HELP = `bun bench/run.ts [options]
  --scenarios LIST   ${SCENARIOS.map((s) => s.name).join(",")} (default: all)
  --layouts LIST     pinned,unpinned (default: both)
  --systems LIST     portico,baseline,nginx,direct (default: all; baseline only with --baseline-main)
  --duration S       seconds per measured run (default 5)
  --warmup S         seconds of warm-up before each run (default 1)
  --reps N           interleaved repetitions (default 3)
  --workers N        Portico --workers (default 1: same as nginx's one worker)
  --portico-main F   entry point to run as "portico" (default src/main.ts; e.g. bench/lib/fetch-proxy.ts)
  --baseline-main F  entry point to run as "baseline", interleaved with "portico" (another worktree's
                     src/main.ts: before/after in one run)
  --quiet-wait S     before each run, wait up to S s for other work on the machine to settle (default 5)
  --quick            1 repetition of 3 s (smoke run)
  --out FILE         report path (default bench/results/latest.md)`;

const { values: flags } = parseArgs({
  options: {
    scenarios: { type: "string" },
    layouts: { type: "string" },
    systems: { type: "string" },
    duration: { type: "string" },
    warmup: { type: "string" },
    reps: { type: "string" },
    workers: { type: "string" },
    "portico-main": { type: "string" },
    "baseline-main": { type: "string" },
    "quiet-wait": { type: "string" },
    quick: { type: "boolean", default: false },
    out: { type: "string" },
    help: { type: "boolean", default: false },
  },
});
if (flags.help) {
  console.log(HELP);
  process.exit(0);
}

function listFlag<T extends { name: string }>(v: string | undefined, all: readonly T[], name: string): T[] {
  if (!v) return [...all];
  const out: T[] = [];
  for (const n of v.split(",")) {
    const hit = all.find((x) => x.name === n.trim());
    if (!hit) {
      console.error(`--${name}: unknown "${n}" (known: ${all.map((x) => x.name).join(", ")})`);
      process.exit(2);
    }
    out.push(hit);
  }
  return out;
}

const quick = flags.quick === true;
const duration = intFlag(flags.duration, quick ? 3 : 5, 1, 60, "duration");
const warmup = intFlag(flags.warmup, 1, 0, 10, "warmup");
const reps = intFlag(flags.reps, quick ? 1 : 3, 1, 20, "reps");
const workers = intFlag(flags.workers, 1, 1, 64, "workers");
const quietWait = intFlag(flags["quiet-wait"], 5, 0, 60, "quiet-wait");
const scenarios = listFlag(flags.scenarios, SCENARIOS, "scenarios");
const baselineMain = flags["baseline-main"] ?? null;
const systems = listFlag(flags.systems, SYSTEMS.map((name) => ({ name })), "systems")
  .map((s) => s.name)
  .filter((s) => s !== "baseline" || baselineMain !== null || flags.systems !== undefined);
if (systems.includes("baseline") && baselineMain === null) {
  console.error("--systems baseline needs --baseline-main");
  process.exit(2);
}
let layouts = listFlag(flags.layouts, LAYOUTS, "layouts");
const ROOT = join(import.meta.dir, "..");
const porticoMain = flags["portico-main"] ?? "src/main.ts";
const out = flags.out ?? join(import.meta.dir, "results", "latest.md");
const log = (msg: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

if (cpus().length < 2 && layouts.some((l) => l.proxyCpus !== null)) {
  log("fewer than 2 CPUs: skipping the pinned layout");
  layouts = layouts.filter((l) => l.proxyCpus === null);
}

function runOrder(): string {
  return `bun bench/run.ts ${process.argv.slice(2).join(" ")}`.trim();
}

async function main(): Promise<void> {
  installCleanup();
  const tools = await ensureTools(log);
  const v = versions(tools);
  const dir = mkdtempSync(join(tmpdir(), "portico-bench-"));
  // nginx workers run as an unprivileged user when started by root: they must read the 1 MiB file.
  chmodSync(dir, 0o755);
  addCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const started = new Date();
  const load = loadavg().map((x) => x.toFixed(2)).join(" ");
  const perRun = warmup + duration + 0.5;
  const runs = layouts.length * reps * scenarios.reduce((a, s) => a + s.systems.filter((x) => systems.includes(x)).length, 0);
  log(`${runs} measured runs of ${duration}s (+${warmup}s warm-up): about ${Math.ceil((runs * perRun) / 60 + layouts.length * scenarios.length * 0.05)} min`);
  const cells: Cell[] = [];
  try {
    const cert = await makeCert(tools.openssl, dir);
    const manyCount = scenarios.some((s) => s.backend === "many") ? 200 : 0;
    const base = { cert, dir, root: ROOT, porticoMain, baselineMain, workers, duration, warmup, reps, quietWait, systems, log, tools };
    for (const layout of layouts) {
      log(`layout ${layout.name}`);
      const bdir = join(dir, `backend-${layout.name}`);
      mkdirSync(bdir, { recursive: true });
      const backend = await startBackend(tools, bdir, layout.clientCpus, manyCount);
      try {
        for (const sc of scenarios) {
          log(`scenario ${sc.name} (${layout.name})`);
          cells.push(...(await runScenario(sc, layout, { ...base, backend })));
        }
      } finally {
        await backend.stop();
      }
    }
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
  const notes = [...baselineNotes(cells), ...idleConnNotes(cells), ...regexNotes(cells)];
  const header = [
    `date: ${started.toISOString()} (${((Date.now() - started.getTime()) / 60000).toFixed(1)} min); command: \`${runOrder()}\``,
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? "?"}; load average at start: ${load} (other work on this machine adds noise)`,
    `versions: bun ${v.bun}, ${v.nginx}, ${v.wrk}, ${v.openssl}`,
    ...layouts.map((l) => l.description),
    `before each measured run the harness waits up to ${quietWait} s for the machine to be idle (other CPU < 25%); a run during which other work used > 30% of a core is discarded and repeated once; "other CPU" is what the rest of the machine used during the run`,
    `wrk: 1 thread, ${reps} interleaved repetition(s) (portico, nginx, direct, portico, …) of ${duration} s, each after a ${warmup} s warm-up; figures are medians; min–max is req/s over the repetitions`,
    `Portico: \`bun ${porticoMain} --manifests … --workers ${workers} --access-log off --log-level warn\`; nginx: 1 worker, configured as ingress-nginx renders an Ingress (bench/lib/nginx.ts), access_log off`,
    ...(baselineMain === null ? [] : [`baseline: the same command with \`${baselineMain}\`, interleaved with portico`]),
    "backend: nginx, 1 worker, answering from memory (`return 200`, 13 bytes) or a 1 MiB file with sendfile; same CPU as wrk when pinned",
    "proxy CPU: utime+stime of the proxy's process tree over the run (100% = one core; for `direct`, the backend's); peak RSS: VmHWM summed over the tree at the end of the scenario",
    ...scenarios.map((s) => `scenario ${s.name}: ${s.title}`),
  ];
  const md = renderReport({ title: "Portico data-plane benchmark", lines: header }, cells, notes);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, md);
  console.log(md);
  log(`wrote ${out}`);
}

/**
 * The 64-idle-connection effect (docs/design.md "Bun facts measured here"): 200 endpoints vs 1,
 * per system and layout.
 */
function idleConnNotes(cells: readonly Cell[]): string[] {
  const notes: string[] = [];
  for (const c of cells) {
    if (c.scenario !== "ep200" || c.system === "direct") continue;
    const one = cells.find((x) => x.scenario === "small" && x.layout === c.layout && x.system === c.system);
    const a = summarize(c);
    const b = one ? summarize(one) : null;
    if (a && b) notes.push(`${c.system} (${c.layout}): 200 endpoints ${a.rps.toFixed(0)} req/s vs 1 endpoint ${b.rps.toFixed(0)} req/s = ${(a.rps / b.rps).toFixed(2)}× (target for Portico ≥ 0.90×)`);
  }
  return notes;
}

/**
 * The route lookup cost of ingress-nginx's regex mode: 50 regex paths (the request matching the
 * last one nginx tries) against one Prefix path, per system and layout; the table's ratio to
 * nginx is the side-by-side figure.
 */
function regexNotes(cells: readonly Cell[]): string[] {
  const notes: string[] = [];
  for (const c of cells) {
    if (c.scenario !== "regex50") continue;
    const one = cells.find((x) => x.scenario === "small" && x.layout === c.layout && x.system === c.system);
    const a = summarize(c);
    const b = one ? summarize(one) : null;
    if (a && b) notes.push(`${c.system} (${c.layout}): 50 regex paths ${a.rps.toFixed(0)} req/s vs one Prefix path ${b.rps.toFixed(0)} req/s = ${(a.rps / b.rps).toFixed(2)}×`);
  }
  return notes;
}

await runMain(main);
