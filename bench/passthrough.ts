// What --enable-ssl-passthrough costs terminated HTTPS traffic: `bun bench/passthrough.ts`.
// Loopback only; every process it starts is stopped.
//
// With the flag, every HTTPS connection first meets the TCP front (src/serving/passthrough.ts):
// its ClientHello is read, then its bytes are copied to the terminating listener on a loopback
// port and back. The same build is run twice, with and without the flag, side by side as in
// bench/paired.ts: both proxies share CPU 0 during the same seconds, each driven by its own wrk
// on CPU 1, so the ratio of their rates is the inverse ratio of their CPU cost per request.
// Two client shapes: keep-alive (the copy per byte dominates) and a new TLS connection per
// request (`Connection: close`: the front's per-connection work, ClientHello and one more
// connect, dominates). An A/A series (the build without the flag against itself) states the
// noise floor.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { makeCert } from "./lib/certs.ts";
import { intFlag } from "./lib/flags.ts";
import { ensureTools, versions } from "./lib/install.ts";
import { addCleanup, installCleanup, runMain, stopAll } from "./lib/procs.ts";
import { median } from "./lib/report.ts";
import { HOST, startBackend, startPortico, upstreamsFor, writeManifests, type Running } from "./lib/systems.ts";
import { runWrk, type WrkResult } from "./lib/wrk.ts";

const HELP = `bun bench/passthrough.ts [options]
  --duration S  seconds per measured pair (default 5)
  --reps N      pairs per client shape (default 5)
  --aa N        A/A pairs per client shape (default 3)
  --out FILE    report path (default bench/results/passthrough.md)`;

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
  console.log(HELP);
  process.exit(0);
}
const duration = intFlag(flags.duration, 5, 1, 60, "duration");
const reps = intFlag(flags.reps, 5, 1, 30, "reps");
const aa = intFlag(flags.aa, 3, 0, 30, "aa");
const ROOT = join(import.meta.dir, "..");
const out = flags.out ?? join(import.meta.dir, "results", "passthrough.md");
const log = (msg: string) => process.stderr.write(`[passthrough ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const PROXY_CPU = "0";
const CLIENT_CPU = "1";

interface Pair {
  readonly a: WrkResult;
  readonly b: WrkResult;
}
type Shape = "keep-alive" | "new connection per request";

async function main(): Promise<void> {
  if (cpus().length < 2) throw new Error("needs 2 CPUs: both proxies on CPU 0, the clients and the backend on CPU 1");
  installCleanup();
  const tools = await ensureTools(log);
  const v = versions(tools);
  const dir = mkdtempSync(join(tmpdir(), "portico-passthrough-"));
  addCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const started = new Date();
  const load = loadavg().map((x) => x.toFixed(2)).join(" ");
  const procs: Running[] = [];
  const rows: { shape: Shape; what: string; pairs: Pair[] }[] = [];
  try {
    const backend = await startBackend(tools, join(dir, "backend"), CLIENT_CPU, 0);
    procs.push({ proc: backend.proc, http: 0, https: 0, stop: backend.stop });
    const cert = await makeCert(tools.openssl, dir);
    const manifests = writeManifests(dir, upstreamsFor(backend.ports, "keepalive"), cert);
    const start = (name: string, extraArgs: string[]) => {
      const d = join(dir, name);
      mkdirSync(d, { recursive: true });
      return startPortico(tools, manifests, { root: ROOT, main: "src/main.ts", dir: d, cpus: PROXY_CPU, workers: 1, tls: true, extraArgs });
    };
    const on = await start("on", ["--enable-ssl-passthrough"]);
    procs.push(on);
    const off = await start("off", []);
    procs.push(off);
    const twin = await start("twin", []);
    procs.push(twin);
    const pair = async (a: Running, b: Running, seconds: number, shape: Shape): Promise<Pair> => {
      const run = (p: Running) =>
        runWrk({
          url: `https://127.0.0.1:${p.https}/`, connections: shape === "keep-alive" ? 64 : 16, threads: 1, seconds, host: HOST,
          ...(shape === "keep-alive" ? {} : { headers: ["Connection: close"] }),
          cpus: CLIENT_CPU, wrk: tools.wrk, taskset: tools.taskset,
        });
      const [ra, rb] = await Promise.all([run(a), run(b)]);
      if (ra.non2xx > 0 || rb.non2xx > 0) throw new Error(`non-2xx answers in a pair: ${JSON.stringify({ ra, rb })}`);
      return { a: ra, b: rb };
    };
    const series = async (a: Running, b: Running, n: number, shape: Shape, what: string) => {
      const got: Pair[] = [];
      await pair(a, b, 1, shape);
      for (let i = 0; i < n; i++) {
        const p = i % 2 === 0 ? await pair(a, b, duration, shape) : flip(await pair(b, a, duration, shape));
        log(`${shape}, ${what} ${i + 1}/${n}: ${p.a.rps.toFixed(0)} vs ${p.b.rps.toFixed(0)} req/s = ${(p.a.rps / p.b.rps).toFixed(3)}×`);
        got.push(p);
      }
      rows.push({ shape, what, pairs: got });
    };
    for (const shape of ["keep-alive", "new connection per request"] as const) {
      if (aa > 0) await series(off, twin, aa, shape, "A/A: without the flag, twice");
      await series(on, off, reps, shape, "with the flag vs without");
    }
  } finally {
    for (const p of procs.reverse()) await p.stop();
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
  const ratios = (ps: readonly Pair[]) => ps.map((p) => p.a.rps / p.b.rps);
  const lines = [
    "# --enable-ssl-passthrough: its cost for terminated HTTPS, measured side by side",
    "",
    `- date: ${started.toISOString()} (${((Date.now() - started.getTime()) / 60000).toFixed(1)} min); command: \`bun bench/passthrough.ts ${process.argv.slice(2).join(" ")}\``,
    `- machine: ${cpus().length} × ${cpus()[0]?.model ?? "?"}; load average at start: ${load}`,
    `- versions: bun ${v.bun}, ${v.nginx}, ${v.wrk}`,
    `- both Porticos (this tree, \`--workers 1\`, access log off) on CPU 0, each driven by its own wrk (1 thread; 64 keep-alive connections, or 16 with \`Connection: close\`) over HTTPS (HTTP/1.1, TLS 1.3) on CPU 1, beside one nginx backend; the two wrk runs of a pair start together and last ${duration} s`,
    "- the ratio is the first's req/s over the second's in the same seconds: the inverse ratio of their CPU cost per request",
    "",
    "| client | comparison | pairs | ratios | median ratio | median req/s (each, sharing CPU 0) |",
    "|---|---|---:|---|---:|---:|",
    ...rows.map((r) => {
      const x = ratios(r.pairs);
      return `| ${r.shape} | ${r.what} | ${r.pairs.length} | ${x.map((y) => y.toFixed(3)).join(", ")} | **${median(x).toFixed(3)}×** | ${median(r.pairs.map((p) => p.a.rps)).toFixed(0)} vs ${median(r.pairs.map((p) => p.b.rps)).toFixed(0)} |`;
    }),
    "",
  ];
  const md = lines.join("\n");
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, md);
  console.log(md);
  log(`wrote ${out}`);
}

function flip(p: Pair): Pair {
  return { a: p.b, b: p.a };
}

await runMain(main);
