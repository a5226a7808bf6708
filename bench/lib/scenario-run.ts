// One scenario in one CPU layout: start the systems, probe them, then interleaved wrk runs.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { CertFiles } from "./certs.ts";
import type { Tools } from "./install.ts";
import { probe } from "./net.ts";
import { cpuPercent, cpuTicks, machinePercent, machineTicks, peakRssMiB, waitQuiet } from "./procfs.ts";
import type { Cell } from "./report.ts";
import type { Layout, Scenario, SystemName } from "./scenarios.ts";
import {
  HOST, backendAccepts, porticoAvailable, startNginxProxy, startPortico, upstreamsFor, writeManifests, type Backend, type Running,
} from "./systems.ts";
import { runWrk } from "./wrk.ts";

export interface RunContext {
  readonly tools: Tools;
  readonly backend: Backend;
  readonly cert: CertFiles;
  readonly dir: string;
  readonly root: string;
  readonly porticoMain: string;
  /** Entry point of the `baseline` system, or null when it is not run. */
  readonly baselineMain: string | null;
  readonly workers: number;
  readonly duration: number;
  readonly warmup: number;
  readonly reps: number;
  readonly quietWait: number;
  readonly systems: readonly SystemName[];
  readonly log: (msg: string) => void;
}

interface Target {
  readonly system: SystemName;
  readonly url: string;
  readonly pid: number;
}

/** A run during which other work used more than this (% of one core) is repeated once. */
const NOISY_OTHER_CPU = 30;

/** One wrk run; returns whether it was recorded (false for warm-ups and discarded noisy runs). */
async function measure(
  cell: Cell, t: Target, sc: Scenario, layout: Layout, ctx: RunContext, record: boolean, mayDiscard: boolean,
): Promise<boolean> {
  const { tools, backend, log } = ctx;
  const seconds = record ? ctx.duration : ctx.warmup;
  if (seconds === 0) return false;
  const before = cpuTicks(t.pid);
  const bBefore = cpuTicks(backend.proc.pid);
  const acceptsBefore = record ? await backendAccepts(backend) : 0;
  const mBefore = machineTicks();
  const t0 = performance.now();
  const r = await runWrk({
    url: t.url, connections: sc.connections, threads: 1, seconds, host: HOST, headers: sc.headers,
    cpus: layout.clientCpus, wrk: tools.wrk, taskset: tools.taskset,
  });
  const elapsed = (performance.now() - t0) / 1000;
  if (!record) return false;
  // Each stub_status query is one accepted connection of its own: subtract the second query.
  const newConnsPerRequest = r.requests > 0 ? ((await backendAccepts(backend)) - acceptsBefore - 1) / r.requests : Number.NaN;
  const own = t.system === "direct" ? 0 : cpuPercent(before, cpuTicks(t.pid), elapsed);
  const bCpu = cpuPercent(bBefore, cpuTicks(backend.proc.pid), elapsed);
  const wrkCpu = (r.cpuSeconds / elapsed) * 100;
  // Whatever else ran on the machine meanwhile (other jobs): noise to read the figures against.
  const other = Math.max(0, machinePercent(mBefore, machineTicks(), elapsed) - own - bCpu - wrkCpu);
  if (mayDiscard && other > NOISY_OTHER_CPU) {
    log(`  ${sc.name}/${layout.name}/${t.system}: other work used ${other.toFixed(0)}% CPU during the run: discarded, repeating once`);
    cell.discarded++;
    return false;
  }
  cell.samples.push({
    rps: r.rps, p50: r.p50, p99: r.p99, cpu: t.system === "direct" ? bCpu : own, backendCpu: bCpu,
    wrkCpu, otherCpu: other, errors: r.errors, newConnsPerRequest,
  });
  log(
    `  ${sc.name}/${layout.name}/${t.system}: ${r.rps.toFixed(0)} req/s p50 ${r.p50.toFixed(3)} ms p99 ${r.p99.toFixed(3)} ms ` +
      `cpu ${own.toFixed(0)}% backend ${bCpu.toFixed(0)}% wrk ${wrkCpu.toFixed(0)}% other ${other.toFixed(0)}% new upstream conns/req ${newConnsPerRequest.toFixed(3)} errors ${r.errors}`,
  );
  return true;
}

export async function runScenario(sc: Scenario, layout: Layout, ctx: RunContext): Promise<Cell[]> {
  const { tools, backend, cert, dir, root: ROOT, porticoMain, baselineMain, workers, reps, quietWait, systems, log } = ctx;
  const wanted = sc.systems.filter((s) => systems.includes(s));
  const cells = new Map<SystemName, Cell>(
    wanted.map((system) => [system, { scenario: sc.name, layout: layout.name, system, samples: [], peakRss: 0, failure: null, discarded: 0 }]),
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
          const n = await startNginxProxy(tools, join(sdir, "nginx"), layout.proxyCpus, ups, cert, sc.regexPaths ?? 0);
          running.push(n);
          url = `${scheme}://127.0.0.1:${sc.tls ? n.https : n.http}${sc.path}`;
          pid = n.proc.pid;
        } else {
          const main = system === "baseline" ? baselineMain : porticoMain;
          if (main === null) throw new Error("--baseline-main not given");
          if (!porticoAvailable(ROOT, main)) throw new Error(`${main} not present yet`);
          const manifests = writeManifests(sdir, ups, sc.tls ? cert : null, sc.regexPaths ?? 0, sc.annotations, sc.canary);
          const pdir = join(sdir, system);
          mkdirSync(pdir, { recursive: true });
          const p = await startPortico(tools, manifests, { root: ROOT, main, dir: pdir, cpus: layout.proxyCpus, workers, tls: sc.tls });
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
          await measure(cell, t, sc, layout, ctx, false, false);
          if (!(await measure(cell, t, sc, layout, ctx, true, true))) {
            if (ctx.quietWait > 0) await waitQuiet(ctx.quietWait * 1000);
            await measure(cell, t, sc, layout, ctx, true, false);
          }
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

