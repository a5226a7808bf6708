// HTTPS and HTTP/2 side by side (`bun bench/paired-tls.ts`): bench/paired.ts's method for the
// TLS port and h2c. Portico and a baseline share CPU 0 during the same seconds, each driven by
// its own h2load on CPU 1 against the same nginx backend, so the ratio of their rates is the
// inverse ratio of their CPU cost per request whatever else the shared machine does. The
// baseline is the bare Bun.serve({ tls, http2: true }) `fetch` proxy (bench/lib/bare-h2-proxy.ts,
// the runtime's ceiling for this design), another script of its shape (--baseline-proxy, e.g.
// bench/lib/duties-proxy.ts, the floor of required duties) or another tree's src/main.ts
// (--baseline-main); --proxy puts such a script in Portico's place. Each pair also gives both
// proxies' CPU time per request, which holds when the shared CPU 1 caps the rates.
// Loopback only; every process it starts is stopped.
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { makeCert } from "./lib/certs.ts";
import { ensureTools, type Tools } from "./lib/install.ts";
import { freePorts } from "./lib/net.ts";
import { tree } from "./lib/procfs.ts";
import { median } from "./lib/report.ts";
import { addCleanup, installCleanup, logTail, runMain, start, stop, stopAll } from "./lib/procs.ts";
import { pairedFlags, pairSeries, porticoStarter, ratioCells, writeReport, type Pair as PairOf } from "./lib/paired-run.ts";
import { HOST, startBackend, upstreamsFor, writeManifests, type Running } from "./lib/systems.ts";

const HELP = `bun bench/paired-tls.ts [options]
  --client C         h1 (HTTPS HTTP/1.1, 64 connections), h2 (HTTPS, 16 connections x 10 streams)
                     h2c (plain port, 16 x 10) or http (plain port, HTTP/1.1, 64 connections); default h1
  --body B          small (the backend's 13-byte answer, default), chunked (a 2 KiB answer nginx sends
                     chunked, which Portico streams) or 1mib (its 1 MiB file, with bench/http2.ts's
                     1 MiB shapes: h2 4 connections x 2 streams, HTTP/1.1 8 connections)
  --baseline-main F  another tree's src/main.ts as the baseline (default: the bare proxy)
  --bare B          native (the bare proxy returns fetch's Response, default) or stream (it reads
                     each body in JavaScript and hands it on in a default ReadableStream:
                     bench/lib/bare-h2-proxy.ts --relay-stream)
  --baseline-proxy F a script shaped as bench/lib/bare-h2-proxy.ts as the baseline (same flags),
                     e.g. bench/lib/duties-proxy.ts
  --proxy F          such a script in Portico's place (the first of each pair, and the A/A twin)
  --portico-main F   entry point of this build (default src/main.ts)
  --duration S       seconds per measured pair (default 5)
  --reps N           pairs (default 5)
  --aa N             A/A pairs (this build against itself) first (default 0)
  --out FILE         report path (default: print only)`;

const flags = pairedFlags(HELP, { reps: 5, aa: 0, baselineRequired: false }, { client: "h1", body: "small", bare: "native", "baseline-proxy": undefined, proxy: undefined });
const client = String(flags.extra.client);
if (client !== "h1" && client !== "h2" && client !== "h2c" && client !== "http") throw new Error("--client: h1, h2, h2c or http");
const body = String(flags.extra.body);
if (body !== "small" && body !== "chunked" && body !== "1mib") throw new Error("--body: small, chunked or 1mib");
if (flags.extra.bare !== "native" && flags.extra.bare !== "stream") throw new Error("--bare: native or stream");
const bareRelayStream = flags.extra.bare === "stream";
const h1Client = client === "h1" || client === "http";
// The 1 MiB cells use bench/http2.ts's shapes: fewer requests in flight, each a MiB.
const shape = body === "1mib" ? (h1Client ? ["--h1", "-c", "8"] : ["-c", "4", "-m", "2"]) : h1Client ? ["--h1", "-c", "64"] : ["-c", "16", "-m", "10"];
const shapeText = body === "1mib" ? (h1Client ? "--h1, 8 connections" : "4 connections × 2 streams") : h1Client ? "--h1, 64 connections" : "16 connections × 10 streams";
const { duration, reps, aa, porticoMain } = flags;
const baselineMain = flags.baselineMain ?? null;
const BARE = "bench/lib/bare-h2-proxy.ts";
const baselineProxy = flags.extra["baseline-proxy"] ?? BARE;
const firstProxy = flags.extra.proxy ?? null;
if (baselineMain !== null && flags.extra["baseline-proxy"] !== undefined) throw new Error("--baseline-main or --baseline-proxy, not both");
const ROOT = resolve(import.meta.dir, "..");
const log = (msg: string) => process.stderr.write(`[paired-tls ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

interface H2 {
  readonly rps: number;
  readonly failed: number;
  readonly done: number;
  /** The proxy's CPU time (all its threads and processes) per request done, in µs; NaN if unread. */
  cpuUs: number;
}

/**
 * CPU nanoseconds the process tree of `pid` has run so far: the first field of every thread's
 * /proc/PID/task/TID/schedstat (Linux; nanoseconds, where /proc/PID/stat counts 10 ms ticks).
 * The rate ratio holds only while CPU 0 is the bottleneck; on a loaded machine the shared CPU 1
 * (h2load, the backend) can cap both proxies and pull it towards 1, while the CPU each request
 * costs does not move with that (bench/cpu-per-request.ts).
 */
function cpuNs(pid: number): number {
  let ns = 0;
  for (const p of tree(pid)) {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${p}/task`);
    } catch {
      continue;
    }
    for (const t of tids) {
      try {
        ns += Number(readFileSync(`/proc/${p}/task/${t}/schedstat`, "utf8").split(" ")[0]);
      } catch {}
    }
  }
  return ns;
}

function h2loadArgs(port: { http: number; https: number }, seconds: number): string[] {
  const path = body === "1mib" ? "/1m" : body === "chunked" ? "/chunked.html" : "/";
  const url = client === "h2c" || client === "http" ? `http://127.0.0.1:${port.http}${path}` : `https://127.0.0.1:${port.https}${path}`;
  return ["-D", String(seconds), ...shape, "-H", `:authority: ${HOST}`, url];
}

async function h2load(tools: Tools, p: { http: number; https: number }, seconds: number): Promise<H2> {
  const proc = Bun.spawn([tools.taskset, "-c", "1", "h2load", ...h2loadArgs(p, seconds)], { stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), (seconds + 15) * 1000);
  const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  clearTimeout(timer);
  const fin = /finished in [\d.]+m?s, ([\d.]+) req\/s/.exec(out);
  const req = /requests: \d+ total, \d+ started, (\d+) done, \d+ succeeded, (\d+) failed/.exec(out);
  if (code !== 0 || !fin || !req) throw new Error(`h2load exited ${code}:\n${out}`);
  return { rps: Number(fin[1]), done: Number(req[1]), failed: Number(req[2]), cpuUs: Number.NaN };
}

async function bare(tools: Tools, dir: string, certFile: string, keyFile: string, upstreamPort: number, script: string, name: string): Promise<Running> {
  const [http, https] = freePorts(2) as [number, number];
  const logFile = join(dir, `${name}.log`);
  const proc = start(
    [process.execPath, resolve(ROOT, script), "--https-port", String(https), "--http-port", String(http), "--cert", certFile, "--key", keyFile, "--upstream", `http://127.0.0.1:${upstreamPort}`, ...(bareRelayStream && script === BARE ? ["--relay-stream"] : [])],
    { cpus: "0", log: logFile },
    tools.taskset,
  );
  for (let i = 0; i < 100; i++) {
    const ok = await fetch(`http://127.0.0.1:${http}/`, { headers: { host: HOST } }).then((r) => r.ok, () => false);
    if (ok) return { proc, http, https, stop: () => stop(proc) };
    if (proc.exitCode !== null) break;
    await Bun.sleep(100);
  }
  await stop(proc);
  throw new Error(`${script} did not start: ${await logTail(logFile)}`);
}

type Pair = PairOf<H2>;

function cpuCells(pairs: readonly Pair[]): string {
  const r = pairs.map((p) => p.b.cpuUs / p.a.cpuUs);
  return `${r.map((x) => x.toFixed(3)).join(", ")} | ${median(r).toFixed(3)}× | ${median(pairs.map((p) => p.a.cpuUs)).toFixed(1)} vs ${median(pairs.map((p) => p.b.cpuUs)).toFixed(1)}`;
}

async function main(): Promise<void> {
  if (cpus().length < 2) throw new Error("needs 2 CPUs");
  installCleanup();
  const tools = await ensureTools(log);
  const dir = mkdtempSync(join(tmpdir(), "portico-paired-tls-"));
  // nginx's workers run as another user: they must read the 1 MiB file (as in bench/http2.ts).
  chmodSync(dir, 0o755);
  addCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const started = new Date();
  const load = loadavg().map((x) => x.toFixed(2)).join(" ");
  const procs: Running[] = [];
  let aaPairs: Pair[] = [];
  let pairs: Pair[] = [];
  try {
    const backend = await startBackend(tools, join(dir, "backend"), "1", 0);
    procs.push({ proc: backend.proc, http: 0, https: 0, stop: backend.stop });
    const cert = await makeCert(tools.openssl, dir, HOST);
    // No redirect to HTTPS: the h2c cells use the plain port.
    const manifests = writeManifests(dir, upstreamsFor(backend.ports, "keepalive"), cert, 0, { "nginx.ingress.kubernetes.io/ssl-redirect": "false" });
    const portico = porticoStarter(tools, { root: ROOT, dir, manifests, tls: true, procs });
    const script = (file: string, name: string) =>
      bare(tools, dir, cert.certFile, cert.keyFile, backend.ports.keepalive, file, name).then((r) => {
        procs.push(r);
        return r;
      });
    const first = (name: string) => (firstProxy === null ? portico(porticoMain, name) : script(firstProxy, name));
    const a = await first("portico");
    const twin = aa > 0 ? await first("twin") : null;
    const b = baselineMain === null ? await script(baselineProxy, "baseline") : await portico(baselineMain, "baseline");
    const pair = async (x: Running, y: Running, seconds: number): Promise<Pair> => {
      const cx = cpuNs(x.proc.pid);
      const cy = cpuNs(y.proc.pid);
      const [rx, ry] = await Promise.all([h2load(tools, x, seconds), h2load(tools, y, seconds)]);
      rx.cpuUs = (cpuNs(x.proc.pid) - cx) / 1000 / Math.max(1, rx.done);
      ry.cpuUs = (cpuNs(y.proc.pid) - cy) / 1000 / Math.max(1, ry.done);
      if (rx.failed > 0 || ry.failed > 0) throw new Error(`failed requests in a pair: ${JSON.stringify({ rx, ry })}`);
      return { a: rx, b: ry };
    };
    const series = (x: Running, y: Running, n: number, what: string) => pairSeries(pair, x, y, n, duration, log, what);
    if (twin !== null) aaPairs = await series(a, twin, aa, "A/A");
    pairs = await series(a, b, reps, "portico vs baseline");
  } finally {
    for (const p of procs.reverse()) await p.stop();
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
  const base = baselineMain === null ? (baselineProxy === BARE ? `the bare proxy (\`bench/lib/bare-h2-proxy.ts${bareRelayStream ? " --relay-stream" : ""}\`)` : `\`${baselineProxy}\``) : `\`${baselineMain}\``;
  const firstName = firstProxy === null ? "Portico" : `\`${firstProxy}\``;
  const md = [
    `# ${firstName} against ${baselineMain !== null ? "another build" : baselineProxy === BARE ? "the bare Bun.serve h2 proxy" : `\`${baselineProxy}\``}, ${client === "h1" ? "HTTPS HTTP/1.1" : client === "h2" ? "HTTPS h2" : client === "http" ? "plain HTTP/1.1" : "h2c"}${body === "1mib" ? ", 1 MiB answers" : body === "chunked" ? ", 2 KiB chunked answers" : ""}, side by side`,
    "",
    `- date: ${started.toISOString()} (${((Date.now() - started.getTime()) / 60000).toFixed(1)} min); command: \`bun bench/paired-tls.ts ${process.argv.slice(2).join(" ")}\``,
    `- machine: ${cpus().length} × ${cpus()[0]?.model ?? "?"}; load average at start: ${load}; bun ${Bun.version}`,
    `- both proxies on CPU 0 (\`--workers 1\`, access log off), each driven by its own h2load on CPU 1 (${shapeText}), one nginx backend (${body === "1mib" ? "1 MiB file" : body === "chunked" ? "2 KiB answer, chunked" : "13-byte body"}, keep-alive) on CPU 1; ${duration} s pairs, which starts first alternates`,
    `- first: ${firstProxy === null ? `Portico \`${porticoMain}\`` : firstName}; baseline: ${base}`,
    "",
    "| comparison | pairs | ratios | median ratio | median req/s (each, sharing CPU 0) | CPU ratios (baseline's µs/req over first's) | median CPU ratio | median CPU µs/req (each) |",
    "|---|---:|---|---:|---:|---|---:|---:|",
    ...(aaPairs.length === 0 ? [] : [`| A/A | ${ratioCells(aaPairs, false)} | ${cpuCells(aaPairs)} |`]),
    `| first vs baseline | ${ratioCells(pairs)} | ${cpuCells(pairs)} |`,
    "",
    "CPU ratio: the baseline's CPU time per request over the first's (above 1: the first costs less), from /proc schedstat of each proxy's threads over its pair's seconds.",
    "",
  ].join("\n");
  writeReport(flags.out, md);
}

await runMain(main);
