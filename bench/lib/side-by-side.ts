// Two configurations of this tree's Portico measured side by side, as bench/paired.ts measures
// two builds: both proxies share CPU 0 during the same seconds, each driven by its own wrk on
// CPU 1 beside one nginx backend, so the ratio of their rates is the inverse ratio of their CPU
// cost per request. Two client shapes: keep-alive, and a new connection per request
// (`Connection: close`); an A/A series (the baseline configuration against itself) states the
// noise floor. bench/passthrough.ts and bench/h2c-front.ts are the two users. Loopback only;
// every process it starts is stopped.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { intFlag } from "./flags.ts";
import { ensureTools, versions, type Tools } from "./install.ts";
import { addCleanup, installCleanup, runMain, stopAll } from "./procs.ts";
import { pairSeries, ratioCells, writeReport, type Pair as PairOf } from "./paired-run.ts";
import { HOST, startBackend, startPortico, upstreamsFor, type Running } from "./systems.ts";
import { runWrk, type WrkResult } from "./wrk.ts";

const PROXY_CPU = "0";
const CLIENT_CPU = "1";
const ROOT = join(import.meta.dir, "..", "..");

type Pair = PairOf<WrkResult>;
type Shape = "keep-alive" | "new connection per request";

/** One Portico to start: its manifests, whether it serves TLS, its extra flags. */
export interface SideConfig {
  readonly manifests: string;
  readonly tls: boolean;
  readonly extraArgs?: readonly string[];
  /** Where its wrk connects instead of its port (a relay in front of it, started here): the port. */
  readonly via?: (port: number) => Promise<number>;
}

export interface SideBySide {
  /** The script's name: its log prefix, its report file and the command shown. */
  readonly name: string;
  readonly title: string;
  /** What the clients speak, for the report ("plain HTTP/1.1", "HTTPS (HTTP/1.1, TLS 1.3)"). */
  readonly clients: string;
  readonly scheme: "http" | "https";
  readonly measured: string;
  readonly aaLabel: string;
  /** The configurations measured (`on`) and compared with (`off`), made in `dir` once the backend listens. */
  configs(o: { tools: Tools; dir: string; upstreams: ReturnType<typeof upstreamsFor> }): Promise<{ on: SideConfig; off: SideConfig }>;
}

export function sideBySide(b: SideBySide): void {
  const help = `bun bench/${b.name}.ts [options]
  --duration S  seconds per measured pair (default 5)
  --reps N      pairs per client shape (default 5)
  --aa N        A/A pairs per client shape (default 3)
  --out FILE    report path (default bench/results/${b.name}.md)`;
  const { values: flags } = parseArgs({
    options: {
      duration: { type: "string" },
      reps: { type: "string" },
      aa: { type: "string" },
      out: { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
  if (flags.help) {
    console.log(help);
    process.exit(0);
  }
  const duration = intFlag(flags.duration, 5, 1, 60, "duration");
  const reps = intFlag(flags.reps, 5, 1, 30, "reps");
  const aa = intFlag(flags.aa, 3, 0, 30, "aa");
  const out = flags.out ?? join(ROOT, "bench", "results", `${b.name}.md`);
  const log = (msg: string) => process.stderr.write(`[${b.name} ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

  async function main(): Promise<void> {
    if (cpus().length < 2) throw new Error("needs 2 CPUs: both proxies on CPU 0, the clients and the backend on CPU 1");
    installCleanup();
    const tools = await ensureTools(log);
    const v = versions(tools);
    const dir = mkdtempSync(join(tmpdir(), `portico-${b.name}-`));
    addCleanup(() => rmSync(dir, { recursive: true, force: true }));
    const started = new Date();
    const load = loadavg().map((x) => x.toFixed(2)).join(" ");
    const procs: Running[] = [];
    const rows: { shape: Shape; what: string; pairs: Pair[] }[] = [];
    try {
      const backend = await startBackend(tools, join(dir, "backend"), CLIENT_CPU, 0);
      procs.push({ proc: backend.proc, http: 0, https: 0, stop: backend.stop });
      const { on: onConfig, off: offConfig } = await b.configs({ tools, dir, upstreams: upstreamsFor(backend.ports, "keepalive") });
      const targets = new Map<Running, number>();
      const start = async (name: string, c: SideConfig) => {
        const d = join(dir, name);
        mkdirSync(d, { recursive: true });
        const p = await startPortico(tools, c.manifests, { root: ROOT, main: "src/main.ts", dir: d, cpus: PROXY_CPU, workers: 1, tls: c.tls, extraArgs: [...(c.extraArgs ?? [])] });
        if (c.via) targets.set(p, await c.via(b.scheme === "https" ? p.https : p.http));
        return p;
      };
      const on = await start("on", onConfig);
      procs.push(on);
      const off = await start("off", offConfig);
      procs.push(off);
      const twin = await start("twin", offConfig);
      procs.push(twin);
      const pair = async (x: Running, y: Running, seconds: number, shape: Shape): Promise<Pair> => {
        const run = (p: Running) =>
          runWrk({
            url: `${b.scheme}://127.0.0.1:${targets.get(p) ?? (b.scheme === "https" ? p.https : p.http)}/`, connections: shape === "keep-alive" ? 64 : 16, threads: 1, seconds, host: HOST,
            ...(shape === "keep-alive" ? {} : { headers: ["Connection: close"] }),
            cpus: CLIENT_CPU, wrk: tools.wrk, taskset: tools.taskset,
          });
        const [ra, rb] = await Promise.all([run(x), run(y)]);
        if (ra.non2xx > 0 || rb.non2xx > 0) throw new Error(`non-2xx answers in a pair: ${JSON.stringify({ ra, rb })}`);
        return { a: ra, b: rb };
      };
      const series = async (x: Running, y: Running, n: number, shape: Shape, what: string) => {
        const measure = (p: Running, q: Running, seconds: number) => pair(p, q, seconds, shape);
        rows.push({ shape, what, pairs: await pairSeries(measure, x, y, n, duration, log, `${shape}, ${what}`) });
      };
      for (const shape of ["keep-alive", "new connection per request"] as const) {
        if (aa > 0) await series(off, twin, aa, shape, b.aaLabel);
        await series(on, off, reps, shape, b.measured);
      }
    } finally {
      for (const p of procs.reverse()) await p.stop();
      await stopAll();
      rmSync(dir, { recursive: true, force: true });
    }
    const lines = [
      `# ${b.title}`,
      "",
      `- date: ${started.toISOString()} (${((Date.now() - started.getTime()) / 60000).toFixed(1)} min); command: \`bun bench/${b.name}.ts ${process.argv.slice(2).join(" ")}\``,
      `- machine: ${cpus().length} × ${cpus()[0]?.model ?? "?"}; load average at start: ${load}`,
      `- versions: bun ${v.bun}, ${v.nginx}, ${v.wrk}`,
      `- both Porticos (this tree, \`--workers 1\`, access log off) on CPU 0, each driven by its own wrk (1 thread; 64 keep-alive connections, or 16 with \`Connection: close\`) over ${b.clients} on CPU 1 beside one nginx backend; the two wrk runs of a pair start together and last ${duration} s`,
      "- the ratio is the first's req/s over the second's in the same seconds: the inverse ratio of their CPU cost per request",
      "",
      "| client | comparison | pairs | ratios | median ratio | median req/s (each, sharing CPU 0) |",
      "|---|---|---:|---|---:|---:|",
      ...rows.map((r) => `| ${r.shape} | ${r.what} | ${ratioCells(r.pairs)} |`),
      "",
    ];
    const md = lines.join("\n");
    writeReport(out, md);
    log(`wrote ${out}`);
  }

  void runMain(main);
}
