// Objects allocated per plain proxied GET (`bun bench/allocations.ts`): Portico (this tree, and
// another tree's with --before) against the bare 30-line fetch proxy (bench/lib/fetch-proxy.ts).
// Each proxy runs with bench/lib/heap-probe.ts preloaded. After a warm-up, the probe collects
// the heap and counts JSC's objects by type; N sequential keep-alive GETs follow (13-byte
// answer from an nginx backend); the probe counts again without collecting, so every object
// the N requests allocated is still there, dead or alive. A control with no request over the
// same time is subtracted (the probe's own reads, timers). A trial whose canary died (a
// collection ran during it) is dropped. What is counted is JavaScript heap cells (objects,
// closures, promises, strings are not cells of these types): Bun's native allocations are not.
// Loopback only; every process it starts is stopped.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { BUN_HEADER_FLAG } from "../src/config/header-buffers.ts";
import { intFlag } from "./lib/flags.ts";
import { ensureTools } from "./lib/install.ts";
import { freePorts, waitFor } from "./lib/net.ts";
import { addCleanup, installCleanup, logTail, runMain, start, stop, stopAll } from "./lib/procs.ts";
import { writeReport } from "./lib/paired-run.ts";
import { median } from "./lib/report.ts";
import { HOST, startBackend, upstreamsFor, writeManifests } from "./lib/systems.ts";

const HELP = `bun bench/allocations.ts [options]
  --before F     another tree's src/main.ts, measured as "before" (e.g. a checkout of main)
  --requests N   requests per trial (default 200)
  --trials N     trials per proxy (default 5)
  --out FILE     report path (default: print only)`;

const { values: flags } = parseArgs({
  options: {
    before: { type: "string" },
    requests: { type: "string" },
    trials: { type: "string" },
    out: { type: "string" },
    help: { type: "boolean", default: false },
  },
});
if (flags.help) {
  console.log(HELP);
  process.exit(0);
}
const N = intFlag(flags.requests, 200, 10, 5000, "requests");
const TRIALS = intFlag(flags.trials, 5, 1, 50, "trials");
const ROOT = resolve(import.meta.dir, "..");
const PROBE = join(import.meta.dir, "lib", "heap-probe.ts");
const log = (msg: string) => process.stderr.write(`[allocations ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

type Counts = Record<string, number>;

interface System {
  readonly name: string;
  readonly main: string;
  readonly portico: boolean;
}

interface Measured {
  readonly name: string;
  /** Objects per request by type (control subtracted), median over the kept trials. */
  readonly perType: Counts;
  readonly total: number;
  readonly totals: readonly number[];
  readonly dropped: number;
}

function minus(a: Counts, b: Counts): Counts {
  const out: Counts = {};
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) out[k] = (a[k] ?? 0) - (b[k] ?? 0);
  return out;
}

async function measure(sys: System, dir: string, manifests: string): Promise<Measured> {
  const d = join(dir, sys.name.replace(/[^a-z0-9]+/gi, "-"));
  mkdirSync(d, { recursive: true });
  const probeFile = join(d, "heap.json");
  const [http, https, admin] = freePorts(3) as [number, number, number];
  const args = sys.portico
    ? ["--manifests", manifests, "--bind", "127.0.0.1", "--http-port", String(http), "--https-port", String(https), "--admin-port", String(admin), "--access-log", "off", "--log-level", "warn", "--workers", "1"]
    : ["--manifests", manifests, "--bind", "127.0.0.1", "--http-port", String(http), "--admin-port", String(admin)];
  const proc = start([process.execPath, BUN_HEADER_FLAG, "--preload", PROBE, sys.main, ...args], { cpus: null, cwd: ROOT, env: { HEAP_PROBE_FILE: probeFile }, log: join(d, "stderr.log") });
  try {
    await waitFor(`http://127.0.0.1:${http}/`, { timeoutMs: 15_000, host: HOST, alive: () => proc.exitCode === null });
    const url = `http://127.0.0.1:${http}/`;
    const get = async () => {
      const r = await fetch(url, { headers: { host: HOST } });
      await r.arrayBuffer();
      if (r.status !== 200) throw new Error(`${sys.name}: status ${r.status}`);
    };
    const probe = async (cmd: "gc" | "count"): Promise<{ counts: Counts; canary: boolean }> => {
      rmSync(probeFile, { force: true });
      writeFileSync(`${probeFile}.cmd`, cmd);
      proc.kill("SIGUSR2");
      for (let i = 0; i < 500; i++) {
        try {
          const j = JSON.parse(readFileSync(probeFile, "utf8")) as { cmd: string; counts: Counts; canary: boolean };
          if (j.cmd === cmd) return j;
        } catch {}
        await Bun.sleep(10);
      }
      throw new Error(`${sys.name}: the heap probe did not answer`);
    };
    // Warm-up: the JIT settles and the upstream connection is pooled.
    for (let i = 0; i < 3000; i += 8) await Promise.all(Array.from({ length: 8 }, get));
    const run = async (n: number, waitMs: number): Promise<{ d: Counts; ms: number; ok: boolean }> => {
      const a = await probe("gc");
      const t0 = performance.now();
      for (let i = 0; i < n; i++) await get();
      const rest = waitMs - (performance.now() - t0);
      if (rest > 0) await Bun.sleep(rest);
      const ms = performance.now() - t0;
      const b = await probe("count");
      return { d: minus(b.counts, a.counts), ms, ok: b.canary };
    };
    const kept: Counts[] = [];
    let dropped = 0;
    for (let t = 0; t < TRIALS + 10 && kept.length < TRIALS; t++) {
      const m = await run(N, 0);
      const c = await run(0, m.ms);
      if (!m.ok || !c.ok) {
        dropped++;
        continue;
      }
      const per: Counts = {};
      for (const [k, v] of Object.entries(minus(m.d, c.d))) per[k] = v / N;
      kept.push(per);
      log(`${sys.name} trial ${kept.length}: ${Object.values(per).reduce((s, v) => s + v, 0).toFixed(1)} objects/request`);
    }
    if (kept.length === 0) throw new Error(`${sys.name}: every trial saw a collection; try fewer --requests`);
    const perType: Counts = {};
    for (const k of new Set(kept.flatMap((c) => Object.keys(c)))) perType[k] = median(kept.map((c) => c[k] ?? 0));
    const totals = kept.map((c) => Object.values(c).reduce((s, v) => s + v, 0));
    return { name: sys.name, perType, total: median(totals), totals, dropped };
  } catch (e) {
    throw new Error(`${String(e)}\n${await logTail(join(d, "stderr.log"))}`);
  } finally {
    await stop(proc);
  }
}

async function main(): Promise<void> {
  installCleanup();
  const tools = await ensureTools(log);
  const dir = mkdtempSync(join(tmpdir(), "portico-alloc-"));
  addCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const started = new Date();
  const systems: System[] = [
    { name: "portico (this tree)", main: join(ROOT, "src/main.ts"), portico: true },
    ...(flags.before === undefined ? [] : [{ name: "portico (before)", main: resolve(flags.before), portico: true }]),
    { name: "bare fetch proxy", main: join(ROOT, "bench/lib/fetch-proxy.ts"), portico: false },
  ];
  const results: Measured[] = [];
  try {
    const backend = await startBackend(tools, join(dir, "backend"), null, 0);
    addCleanup(() => void backend.stop());
    const manifests = writeManifests(dir, upstreamsFor(backend.ports, "keepalive"), null);
    for (const s of systems) results.push(await measure(s, dir, manifests));
    await backend.stop();
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
  const types = [...new Set(results.flatMap((r) => Object.keys(r.perType)))]
    .filter((k) => results.some((r) => Math.abs(r.perType[k] ?? 0) >= 0.05))
    .sort((a, b) => (results[0]?.perType[b] ?? 0) - (results[0]?.perType[a] ?? 0));
  const fmt = (x: number) => (Math.abs(x) < 0.05 ? "0" : x.toFixed(1));
  const md = [
    "# JavaScript objects allocated per plain proxied GET",
    "",
    `- date: ${started.toISOString()}; command: \`bun bench/allocations.ts ${process.argv.slice(2).join(" ")}\`; bun ${Bun.version}`,
    `- ${N} sequential keep-alive GETs per trial (13-byte answer, nginx backend), after 3,000 warm-up requests; per trial the count of a control with no request over the same time is subtracted; median of ${TRIALS} trials`,
    "- counted: JSC heap cells by type (bun:jsc heapStats().objectTypeCounts) allocated between a full collection and the end of the trial, without collecting (bench/lib/heap-probe.ts); Bun's native allocations are not counted",
    "",
    `| type | ${results.map((r) => r.name).join(" | ")} |`,
    `|---|${results.map(() => "---:").join("|")}|`,
    ...types.map((k) => `| ${k} | ${results.map((r) => fmt(r.perType[k] ?? 0)).join(" | ")} |`),
    `| **all** | ${results.map((r) => `**${r.total.toFixed(1)}**`).join(" | ")} |`,
    `| trials (all, per request) | ${results.map((r) => r.totals.map((t) => t.toFixed(1)).join(", ") + (r.dropped > 0 ? ` (${r.dropped} dropped: a collection ran)` : "")).join(" | ")} |`,
    "",
  ].join("\n");
  writeReport(flags.out, md);
}

await runMain(main);
