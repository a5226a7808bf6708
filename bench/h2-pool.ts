// Why the bare Bun.serve h2 proxy is slower than its own HTTP/1.1 (`bun bench/h2-pool.ts`): the
// same proxy under h2load shapes that differ in how many requests are in flight at once, with
// the new connections the backend accepted per request (nginx stub_status). Bun's fetch parks
// idle upstream connections in a pool of 64 slots per process (oven-sh/bun, src/http/HTTPContext:
// the pool size; PR #42617 proposes 128): past 64 requests in flight, a connection freed when
// the pool is full is closed, and a later request opens a new one. h2 -c16 -m10 has 160 in
// flight, h1 -c64 has 64. `--system portico` runs Portico instead of the bare proxy.
// The proxy on CPU 0, h2load and the nginx backend on CPU 1. Loopback only; every process it
// starts is stopped.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { makeCert } from "./lib/certs.ts";
import { ensureTools } from "./lib/install.ts";
import { freePorts } from "./lib/net.ts";
import { addCleanup, installCleanup, logTail, runMain, start, stop, stopAll } from "./lib/procs.ts";
import { backendAccepts, HOST, startBackend, startPortico, upstreamsFor, writeManifests, type Running } from "./lib/systems.ts";

const { values: flags } = parseArgs({ options: { system: { type: "string", default: "bare" }, duration: { type: "string", default: "5" } } });
const ROOT = resolve(import.meta.dir, "..");
const log = (msg: string) => process.stderr.write(`[h2-pool] ${msg}\n`);
const SHAPES: ReadonlyArray<readonly [string, "https" | "http", readonly string[]]> = [
  ["HTTPS h1, 64 connections", "https", ["--h1", "-c", "64"]],
  ["HTTPS h1, 160 connections", "https", ["--h1", "-c", "160"]],
  ["HTTPS h2, 16 connections x 10 streams", "https", ["-c", "16", "-m", "10"]],
  ["HTTPS h2, 16 x 4", "https", ["-c", "16", "-m", "4"]],
  ["HTTPS h2, 64 x 1", "https", ["-c", "64", "-m", "1"]],
  ["h2c, 16 x 10", "http", ["-c", "16", "-m", "10"]],
  ["h2c, 16 x 4", "http", ["-c", "16", "-m", "4"]],
];

async function main(): Promise<void> {
  installCleanup();
  const tools = await ensureTools(log);
  const dir = mkdtempSync(join(tmpdir(), "portico-h2-pool-"));
  addCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const backend = await startBackend(tools, join(dir, "backend"), "1", 0);
  const cert = await makeCert(tools.openssl, dir, HOST);
  let proxy: Running;
  if (flags.system === "portico") {
    const manifests = writeManifests(dir, upstreamsFor(backend.ports, "keepalive"), cert, 0, { "nginx.ingress.kubernetes.io/ssl-redirect": "false" });
    const d = join(dir, "portico");
    mkdirSync(d);
    proxy = await startPortico(tools, manifests, { root: ROOT, main: "src/main.ts", dir: d, cpus: "0", workers: 1, tls: true });
  } else {
    const [http, https] = freePorts(2) as [number, number];
    const logFile = join(dir, "bare.log");
    const proc = start([process.execPath, join(ROOT, "bench/lib/bare-h2-proxy.ts"), "--https-port", String(https), "--http-port", String(http), "--cert", cert.certFile, "--key", cert.keyFile, "--upstream", `http://127.0.0.1:${backend.ports.keepalive}`], { cpus: "0", log: logFile }, tools.taskset);
    proxy = { proc, http, https, stop: () => stop(proc) };
    let up = false;
    for (let i = 0; i < 100 && !up; i++) {
      up = await fetch(`http://127.0.0.1:${http}/`, { headers: { host: HOST } }).then((r) => r.ok, () => false);
      if (!up) await Bun.sleep(100);
    }
    if (!up) throw new Error(`the bare proxy did not start: ${await logTail(logFile)}`);
  }
  const rows: string[] = [];
  try {
    for (const [name, scheme, shape] of SHAPES) {
      const url = scheme === "http" ? `http://127.0.0.1:${proxy.http}/` : `https://127.0.0.1:${proxy.https}/`;
      const a0 = await backendAccepts(backend);
      const p = Bun.spawn([tools.taskset, "-c", "1", "h2load", "-D", String(flags.duration), "--warm-up-time=1", ...shape, "-H", `:authority: ${HOST}`, url], { stdout: "pipe", stderr: "pipe" });
      const out = await new Response(p.stdout).text();
      await p.exited;
      const a1 = await backendAccepts(backend);
      const rps = Number(/([\d.]+) req\/s/.exec(out)?.[1] ?? Number.NaN);
      const done = Number(/(\d+) done/.exec(out)?.[1] ?? Number.NaN);
      const inFlight = shape.includes("--h1") ? Number(shape[2]) : Number(shape[1]) * Number(shape[3]);
      const row = `| ${name} | ${inFlight} | ${rps.toFixed(0)} | ${((a1 - a0) / done).toFixed(3)} |`;
      log(row);
      rows.push(row);
    }
  } finally {
    await proxy.stop();
    await backend.stop();
    await stopAll();
  }
  console.log([`${flags.system === "portico" ? "Portico" : "bare Bun.serve h2 proxy"}, ${flags.duration} s per shape, Bun ${Bun.version}`, "", "| client | requests in flight | req/s | new upstream connections per request |", "|---|---:|---:|---:|", ...rows, ""].join("\n"));
}

await runMain(main);
