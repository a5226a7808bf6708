// The HTTPS port split by SNI while a gRPC route exists (src/serving/tls-split.ts) against
// node:http2 serving the whole port, side by side: `bun bench/tls-split.ts --baseline-main
// ../main/src/main.ts`. bench/paired-tls.ts's method: both Porticos (`--workers 1`, access log
// off) share CPU 0 during the same seconds, each driven by its own h2load on CPU 1 beside one
// nginx backend, so the ratio of their rates is the inverse ratio of their CPU cost per request.
// Both serve the same manifests: the ordinary host (bench.local) and a host with a gRPC route
// (grpc.bench.local: `backend-protocol: GRPC` on /grpc.Bench, and an ordinary `/` beside it).
// Measured: the ordinary host over HTTPS HTTP/1.1 and h2 (on the baseline node:http2 serves
// it; with the split the front pipes it to Bun.serve), and the gRPC host's ordinary path over
// h2 (the front and node:http2 against node:http2 alone: what the split costs the hosts that
// stay on node:http2). h2load connects by name (--connect-to) so the ClientHello carries the
// SNI. Loopback only; every process it starts is stopped.
import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { makeCert } from "./lib/certs.ts";
import { ingress, toYaml } from "./lib/cluster.ts";
import { ensureTools, versions, type Tools } from "./lib/install.ts";
import { addCleanup, installCleanup, runMain, stopAll } from "./lib/procs.ts";
import { pairedFlags, pairSeries, porticoStarter, ratioCells, writeReport, type Pair as PairOf } from "./lib/paired-run.ts";
import { HOST, startBackend, upstreamsFor, writeManifests, type Running } from "./lib/systems.ts";

const HELP = `bun bench/tls-split.ts --baseline-main F [options]
  --baseline-main F  the tree whose node:http2 serves the whole HTTPS port while a gRPC route exists (its src/main.ts)
  --portico-main F   entry point of this build (default src/main.ts)
  --duration S       seconds per measured pair (default 5)
  --reps N           pairs per cell (default 5)
  --aa N             A/A pairs (this build against itself, ordinary host h2) first (default 0)
  --out FILE         report path (default: print only)`;

const flags = pairedFlags(HELP, { reps: 5, aa: 0, baselineRequired: true });
const { duration, reps, aa, porticoMain } = flags;
const baselineMain = resolve(flags.baselineMain ?? "");
const ROOT = resolve(import.meta.dir, "..");
const GRPC_HOST = "grpc.bench.local";
const log = (msg: string) => process.stderr.write(`[tls-split ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

interface Cell {
  readonly label: string;
  readonly host: string;
  readonly h1: boolean;
}
const CELLS: readonly Cell[] = [
  { label: "ordinary host, HTTPS HTTP/1.1 (64 connections)", host: HOST, h1: true },
  { label: "ordinary host, HTTPS h2 (16 connections × 10 streams)", host: HOST, h1: false },
  { label: "gRPC route's host, its ordinary path, HTTPS h2 (16 × 10)", host: GRPC_HOST, h1: false },
];

interface H2 {
  readonly rps: number;
  readonly failed: number;
}

async function h2load(tools: Tools, p: Running, cell: Cell, seconds: number): Promise<H2> {
  const shape = cell.h1 ? ["--h1", "-c", "64"] : ["-c", "16", "-m", "10"];
  // By name, so the ClientHello names the host (an IP literal is never sent as SNI, RFC 6066 §3).
  const args = ["-D", String(seconds), ...shape, `--connect-to=127.0.0.1:${p.https}`, `https://${cell.host}:${p.https}/`];
  const proc = Bun.spawn([tools.taskset, "-c", "1", "h2load", ...args], { stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), (seconds + 15) * 1000);
  const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  clearTimeout(timer);
  const fin = /finished in [\d.]+m?s, ([\d.]+) req\/s/.exec(out);
  const req = /requests: \d+ total, \d+ started, \d+ done, \d+ succeeded, (\d+) failed/.exec(out);
  const status = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(out);
  if (code !== 0 || !fin || !req || !status) throw new Error(`h2load exited ${code}:\n${out}`);
  // h2load counts its warm-up too; any 4xx or 5xx is a wrong answer (a 421 would be one).
  if (Number(status[3]) > 0 || Number(status[4]) > 0) throw new Error(`non-2xx answers: ${status[0]}`);
  return { rps: Number(fin[1]), failed: Number(req[1]) };
}

type Pair = PairOf<H2>;

async function main(): Promise<void> {
  if (cpus().length < 2) throw new Error("needs 2 CPUs: both proxies on CPU 0, the clients and the backend on CPU 1");
  installCleanup();
  const tools = await ensureTools(log);
  const v = versions(tools);
  const dir = mkdtempSync(join(tmpdir(), "portico-tls-split-"));
  addCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const started = new Date();
  const load = loadavg().map((x) => x.toFixed(2)).join(" ");
  const procs: Running[] = [];
  const rows: { label: string; what: string; pairs: Pair[] }[] = [];
  try {
    const backend = await startBackend(tools, join(dir, "backend"), "1", 0);
    procs.push({ proc: backend.proc, http: 0, https: 0, stop: backend.stop });
    const cert = await makeCert(tools.openssl, dir, HOST);
    const manifests = writeManifests(dir, upstreamsFor(backend.ports, "keepalive"), cert, 0, { "nginx.ingress.kubernetes.io/ssl-redirect": "false" });
    // The gRPC route is never called: it only has to exist, on its own host.
    appendFileSync(manifests, `\n---\n${toYaml([
      ingress("bench", "grpc", GRPC_HOST, [{ path: "/grpc.Bench", pathType: "Prefix", service: "backend" }], null, "1", { "nginx.ingress.kubernetes.io/backend-protocol": "GRPC" }),
      ingress("bench", "grpc-host-plain", GRPC_HOST, [{ path: "/", pathType: "Prefix", service: "backend" }], null, "1", { "nginx.ingress.kubernetes.io/ssl-redirect": "false" }),
    ])}`);
    const portico = porticoStarter(tools, { root: ROOT, dir, manifests, tls: true, procs });
    const split = await portico(porticoMain, "split");
    const twin = aa > 0 ? await portico(porticoMain, "twin") : null;
    const whole = await portico(baselineMain, "baseline");
    const pair = (cell: Cell) => async (x: Running, y: Running, seconds: number): Promise<Pair> => {
      const [rx, ry] = await Promise.all([h2load(tools, x, cell, seconds), h2load(tools, y, cell, seconds)]);
      if (rx.failed > 0 || ry.failed > 0) throw new Error(`failed requests in a pair: ${JSON.stringify({ rx, ry })}`);
      return { a: rx, b: ry };
    };
    const series = async (x: Running, y: Running, cell: Cell, n: number, what: string) => {
      rows.push({ label: cell.label, what, pairs: await pairSeries(pair(cell), x, y, n, duration, log, `${cell.label}, ${what}`) });
    };
    if (twin !== null) await series(split, twin, CELLS[1] as Cell, aa, "A/A: this build twice");
    for (const cell of CELLS) await series(split, whole, cell, reps, "split vs node:http2 alone");
  } finally {
    for (const p of procs.reverse()) await p.stop();
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
  const md = [
    "# The HTTPS port split by SNI against node:http2 for the whole port, while a gRPC route exists, side by side",
    "",
    `- date: ${started.toISOString()} (${((Date.now() - started.getTime()) / 60000).toFixed(1)} min); command: \`bun bench/tls-split.ts ${process.argv.slice(2).join(" ")}\``,
    `- machine: ${cpus().length} × ${cpus()[0]?.model ?? "?"}; load average at start: ${load} (shared with other work); versions: bun ${v.bun}, ${v.nginx}, ${v.openssl}`,
    `- each proxy alone on CPU 0 with the other (\`taskset -c 0\`, \`--workers 1\`, access log off), each driven by its own h2load on CPU 1 (\`taskset -c 1\`) beside one nginx backend (13-byte body, keep-alive) on CPU 1; ${duration} s pairs, which starts first alternates`,
    `- split: \`${porticoMain}\` (this tree: front + Bun.serve for the ordinary host, front + node:http2 for the gRPC route's host); baseline: \`${flags.baselineMain}\` (node:http2 serves the whole HTTPS port while the gRPC route exists)`,
    "- the ratio is the split's req/s over the baseline's in the same seconds: the inverse ratio of their CPU cost per request",
    "",
    "| cell | comparison | pairs | ratios | median ratio | median req/s (each, sharing CPU 0) |",
    "|---|---|---:|---|---:|---:|",
    ...rows.map((r) => `| ${r.label} | ${r.what} | ${ratioCells(r.pairs)} |`),
    "",
  ].join("\n");
  writeReport(flags.out, md);
}

await runMain(main);
