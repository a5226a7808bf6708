// Data-plane benchmark: Portico vs nginx (configured like ingress-nginx) vs direct-to-backend.
// `bun run bench` (or `bun bench/run.ts --help`). Loopback only; every process it starts is stopped.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, loadavg, cpus } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { makeCert, type CertFiles } from "./lib/certs.ts";
import { ensureTools, versions, type Tools } from "./lib/install.ts";
import { probe } from "./lib/net.ts";
import { cpuPercent, cpuTicks, machinePercent, machineTicks, peakRssMiB, waitQuiet } from "./lib/procfs.ts";
import { installCleanup, stopAll } from "./lib/procs.ts";
import { renderReport, summarize, type Cell } from "./lib/report.ts";
import { LAYOUTS, SCENARIOS, SYSTEMS, type Layout, type Scenario, type SystemName } from "./lib/scenarios.ts";
import {
  HOST, porticoAvailable, startBackend, startNginxProxy, startPortico, upstreamsFor, writeManifests,
  type Backend, type Running,
} from "./lib/systems.ts";
import { runWrk } from "./lib/wrk.ts";

const HELP = `bun bench/run.ts [options]
  --scenarios LIST   ${SCENARIOS.map((s) => s.name).join(",")} (default: all)
  --layouts LIST     pinned,unpinned (default: both)
  --systems LIST     portico,nginx,direct (default: all)
  --duration S       seconds per measured run (default 5)
  --warmup S         seconds of warm-up before each run (default 1)
  --reps N           interleaved repetitions (default 3)
  --workers N        Portico --workers (default 1: same as nginx's one worker)
  --portico-main F   entry point to run as "portico" (default src/main.ts; e.g. bench/lib/fetch-proxy.ts)
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

function intFlag(v: string | undefined, def: number, min: number, max: number, name: string): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) {
    console.error(`--${name} must be an integer in ${min}..${max}`);
    process.exit(2);
  }
  return n;
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
const systems = listFlag(flags.systems, SYSTEMS.map((name) => ({ name })), "systems").map((s) => s.name);
let layouts = listFlag(flags.layouts, LAYOUTS, "layouts");
const ROOT = join(import.meta.dir, "..");
const porticoMain = flags["portico-main"] ?? "src/main.ts";
const out = flags.out ?? join(import.meta.dir, "results", "latest.md");
const log = (msg: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

if (cpus().length < 2 && layouts.some((l) => l.proxyCpus !== null)) {
  log("fewer than 2 CPUs: skipping the pinned layout");
  layouts = layouts.filter((l) => l.proxyCpus === null);
}

interface Target {
  readonly system: SystemName;
  readonly url: string;
  readonly pid: number;
}

async function measure(
  cell: Cell, t: Target, sc: Scenario, layout: Layout, tools: Tools, backend: Backend, record: boolean,
): Promise<void> {
  const seconds = record ? duration : warmup;
  if (seconds === 0) return;
  const before = cpuTicks(t.pid);
  const bBefore = cpuTicks(backend.proc.pid);
  const mBefore = machineTicks();
  const t0 = performance.now();
  const r = await runWrk({
    url: t.url, connections: sc.connections, threads: 1, seconds, host: HOST,
    cpus: layout.clientCpus, wrk: tools.wrk, taskset: tools.taskset,
  });
  const elapsed = (performance.now() - t0) / 1000;
  if (!record) return;
  const own = t.system === "direct" ? 0 : cpuPercent(before, cpuTicks(t.pid), elapsed);
  const bCpu = cpuPercent(bBefore, cpuTicks(backend.proc.pid), elapsed);
  const wrkCpu = (r.cpuSeconds / elapsed) * 100;
  // Whatever else ran on the machine meanwhile (other jobs): noise to read the figures against.
  const other = Math.max(0, machinePercent(mBefore, machineTicks(), elapsed) - own - bCpu - wrkCpu);
  cell.samples.push({
    rps: r.rps, p50: r.p50, p99: r.p99, cpu: t.system === "direct" ? bCpu : own, backendCpu: bCpu,
    wrkCpu, otherCpu: other, errors: r.errors,
  });
  log(
    `  ${sc.name}/${layout.name}/${t.system}: ${r.rps.toFixed(0)} req/s p50 ${r.p50.toFixed(3)} ms p99 ${r.p99.toFixed(3)} ms ` +
      `cpu ${own.toFixed(0)}% backend ${bCpu.toFixed(0)}% wrk ${wrkCpu.toFixed(0)}% other ${other.toFixed(0)}% errors ${r.errors}`,
  );
}

async function runScenario(sc: Scenario, layout: Layout, tools: Tools, backend: Backend, cert: CertFiles, dir: string): Promise<Cell[]> {
  const wanted = sc.systems.filter((s) => systems.includes(s));
  const cells = new Map<SystemName, Cell>(
    wanted.map((system) => [system, { scenario: sc.name, layout: layout.name, system, samples: [], peakRss: 0, failure: null }]),
  );
  const ups = upstreamsFor(backend.ports, sc.backend);
  const running: Running[] = [];
  const targets: Target[] = [];
  const scheme = sc.tls ? "https" : "http";
  const sdir = join(dir, `${sc.name}-${layout.name}`);
  mkdirSync(sdir, { recursive: true });
  try {
    for (const system of wanted) {
      const cell = cells.get(system) as Cell;
      try {
        let url: string;
        let pid: number;
        if (system === "direct") {
          // The 200 listeners answer exactly like the keep-alive one; wrk only targets 127.0.0.1.
          const port = sc.backend === "close" ? backend.ports.close : backend.ports.keepalive;
          url = `http://127.0.0.1:${port}${sc.path}`;
          pid = backend.proc.pid;
        } else if (system === "nginx") {
          const n = await startNginxProxy(tools, join(sdir, "nginx"), layout.proxyCpus, ups, cert);
          running.push(n);
          url = `${scheme}://127.0.0.1:${sc.tls ? n.https : n.http}${sc.path}`;
          pid = n.proc.pid;
        } else {
          if (!porticoAvailable(ROOT, porticoMain)) throw new Error(`${porticoMain} not present yet`);
          const manifests = writeManifests(sdir, ups, sc.tls ? cert : null);
          const pdir = join(sdir, "portico");
          mkdirSync(pdir, { recursive: true });
          const p = await startPortico(tools, manifests, { root: ROOT, main: porticoMain, dir: pdir, cpus: layout.proxyCpus, workers, tls: sc.tls });
          running.push(p);
          url = `${scheme}://127.0.0.1:${sc.tls ? p.https : p.http}${sc.path}`;
          pid = p.proc.pid;
        }
        const pr = await probe(url, HOST);
        if (pr.status !== 200 || pr.bytes !== sc.bytes) throw new Error(`probe ${url} answered ${pr.status} with ${pr.bytes} bytes, expected 200 with ${sc.bytes}`);
        targets.push({ system, url, pid });
      } catch (e) {
        cell.failure = (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? "failed";
        log(`${sc.name}/${layout.name}/${system}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    for (let rep = 0; rep < reps; rep++) {
      for (const t of targets) {
        const cell = cells.get(t.system) as Cell;
        try {
          if (quietWait > 0) await waitQuiet(quietWait * 1000);
          await measure(cell, t, sc, layout, tools, backend, false);
          await measure(cell, t, sc, layout, tools, backend, true);
        } catch (e) {
          cell.failure = (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? "failed";
          log(`${sc.name}/${layout.name}/${t.system} rep ${rep + 1}: ${String(e)}`);
        }
      }
    }
    for (const t of targets) (cells.get(t.system) as Cell).peakRss = peakRssMiB(t.pid);
  } finally {
    for (const r of running) await r.stop();
  }
  return [...cells.values()];
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
  const started = new Date();
  const load = loadavg().map((x) => x.toFixed(2)).join(" ");
  const perRun = warmup + duration + 0.5;
  const runs = layouts.length * reps * scenarios.reduce((a, s) => a + s.systems.filter((x) => systems.includes(x)).length, 0);
  log(`${runs} measured runs of ${duration}s (+${warmup}s warm-up): about ${Math.ceil((runs * perRun) / 60 + layouts.length * scenarios.length * 0.05)} min`);
  const cells: Cell[] = [];
  try {
    const cert = await makeCert(tools.openssl, dir);
    const manyCount = scenarios.some((s) => s.backend === "many") ? 200 : 0;
    for (const layout of layouts) {
      log(`layout ${layout.name}`);
      const bdir = join(dir, `backend-${layout.name}`);
      mkdirSync(bdir, { recursive: true });
      const backend = await startBackend(tools, bdir, layout.clientCpus, manyCount);
      try {
        for (const sc of scenarios) {
          log(`scenario ${sc.name} (${layout.name})`);
          cells.push(...(await runScenario(sc, layout, tools, backend, cert, dir)));
        }
      } finally {
        await backend.stop();
      }
    }
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
  const notes = idleConnNotes(cells);
  const header = [
    `date: ${started.toISOString()} (${((Date.now() - started.getTime()) / 60000).toFixed(1)} min); command: \`${runOrder()}\``,
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? "?"}; load average at start: ${load} (other work on this machine adds noise)`,
    `versions: bun ${v.bun}, ${v.nginx}, ${v.wrk}, ${v.openssl}`,
    ...layouts.map((l) => l.description),
    `before each measured run the harness waits up to ${quietWait} s for the machine to be idle (other CPU < 25%); "other CPU" is what the rest of the machine used during the run`,
    `wrk: 1 thread, ${reps} interleaved repetition(s) (portico, nginx, direct, portico, …) of ${duration} s, each after a ${warmup} s warm-up; figures are medians; min–max is req/s over the repetitions`,
    `Portico: \`bun ${porticoMain} --manifests … --workers ${workers} --access-log off --log-level warn\`; nginx: 1 worker, configured as ingress-nginx renders an Ingress (bench/lib/nginx.ts), access_log off`,
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

/** The 64-idle-connection effect (DESIGN §5): 200 endpoints vs 1, per system and layout. */
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

try {
  await main();
} catch (e) {
  console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  await stopAll();
  process.exit(1);
}
