// HTTP/2 and gRPC benchmark, one run per cell, ratios (`bun bench/http2.ts`). h2load drives every
// cell, HTTP/2 and HTTP/1.1 alike (`--h1`), so the client is the same tool throughout:
// - Portico (Bun.serve's own HTTP/2 on the HTTPS port, h2c on the plain port) with h2, HTTP/1.1
//   and h2c clients;
// - Portico --http2=false (the same Bun.serve listener, HTTP/1.1 only) with HTTP/1.1 clients;
// - a bare Bun.serve({ tls, http2: true }) `fetch` proxy (bench/lib/bare-h2-proxy.ts: the
//   runtime's ceiling for this design) with all three;
// - two ceilings for a proxy with Portico's duties, each started exactly as the bare proxy is
//   (same flags, CPU 0 alone, same backend): "bare + duties" (bench/lib/duties-proxy.ts: the bare
//   proxy plus only the per-request work ingress-nginx behaviour requires, bench/results/
//   duties-floor.md) on the small cells, and "bare + body read in JS" (bare-h2-proxy.ts
//   --relay-stream: each body read through a JavaScript stream, as a proxy must that needs to
//   know when a body ends, docs/bun-upstream-reports.md §11; bench/results/relay-1mib.md) on the
//   1 MiB cells;
// - nginx with `listen ... ssl http2` (configured like ingress-nginx) with h2 and HTTP/1.1
//   (nginx 1.22 cannot serve h2c beside HTTP/1.1 on one port);
// - gRPC unary calls to a grpc-js server: through Portico (backend-protocol GRPC: the HTTPS port
//   then runs on node:http2, docs/design.md "HTTP/2 and gRPC"), through nginx grpc_pass, and
//   direct (h2c prior knowledge). The bare proxy cannot carry gRPC (Bun.serve sends no trailers).
// Small body (13 bytes) and 1 MiB. The proxy alone on CPU 0; the backends and h2load on CPU 1.
// Loopback only; every process it starts is stopped (also on Ctrl-C).
import type { Subprocess } from "bun";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http2 from "node:http2";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { makeCert, type CertFiles } from "./lib/certs.ts";
import { endpointSlice, ingress, ingressClass, service, tlsSecret, toYaml } from "./lib/cluster.ts";
import { ensureTools, type Tools } from "./lib/install.ts";
import { freePorts } from "./lib/net.ts";
import { grpcProxyConf, proxyConf } from "./lib/nginx.ts";
import { parseH2load, type H2loadResult } from "./lib/h2load.ts";
import { addCleanup, installCleanup, logTail, runMain, start, stop, stopAll } from "./lib/procs.ts";
import { cpuPercent, cpuTicks, machinePercent, machineTicks, peakRssMiB, waitQuiet } from "./lib/procfs.ts";
import { HOST, startBackend, startPortico, type Running } from "./lib/systems.ts";

const { values: flags } = parseArgs({
  options: {
    duration: { type: "string", default: "10" },
    out: { type: "string", default: "bench/results/http2.md" },
    only: { type: "string" },
    "grpc-access-log": { type: "string" },
    help: { type: "boolean", default: false },
  },
});
if (flags.help) {
  console.log("bun bench/http2.ts [--duration S (default 10)] [--out FILE (default bench/results/http2.md)] [--only SYSTEM,…,grpc (a smoke run)] [--grpc-access-log FILE (the gRPC cell through Portico: Portico's access log to FILE, h2load's per-request log to FILE.h2load)]");
  process.exit(0);
}
const DURATION = Number(flags.duration);
/** Systems (by name) and "grpc" to run; all when absent. */
const only = flags.only === undefined ? null : new Set(String(flags.only).split(",").map((x) => x.trim()));
if (!Number.isInteger(DURATION) || DURATION < 1 || DURATION > 120) throw new Error("--duration: 1..120 seconds");
const ROOT = resolve(import.meta.dir, "..");
const GRPC_HOST = "grpc.local";
// System names, as the report and --only spell them (no comma: --only splits on commas).
const BARE = "bare Bun.serve h2 proxy";
const DUTIES = "bare + duties";
const BODY_IN_JS = "bare + body read in JS";
const NGINX = "nginx http2";
const STARTED = performance.now();
const log = (m: string) => console.error(`[http2-bench] ${m}`);

function ensureH2load(): string {
  const found = Bun.which("h2load");
  if (found) return found;
  log("installing nghttp2-client (h2load) with apt-get");
  const sudo = process.getuid?.() === 0 ? [] : ["sudo"];
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  for (const cmd of [[...sudo, "apt-get", "update"], [...sudo, "apt-get", "install", "-y", "--no-install-recommends", "nghttp2-client"]]) {
    if (Bun.spawnSync(cmd, { env, stdout: "inherit", stderr: "inherit" }).exitCode !== 0) throw new Error(`${cmd.join(" ")} failed`);
  }
  const again = Bun.which("h2load");
  if (!again) throw new Error("h2load still missing");
  return again;
}

interface Cell {
  readonly scenario: string;
  readonly system: string;
  readonly client: "h2" | "h1" | "h2c";
  readonly r: H2loadResult;
  readonly proxyCpu: number;
  readonly otherCpu: number;
  /** Peak RSS of the proxy's process tree after the cell (VmHWM summed), MiB; 0 for none. */
  readonly peakRss: number;
}

async function h2load(bin: string, tools: Tools, args: readonly string[], proxyPid: number | null): Promise<Omit<Cell, "scenario" | "system" | "client">> {
  const other = await waitQuiet(5_000);
  if (other > 25) log(`machine not quiet before the run (${other.toFixed(0)}% of a core busy)`);
  const before = proxyPid === null ? null : cpuTicks(proxyPid);
  const m0 = machineTicks();
  const t0 = performance.now();
  const p = Bun.spawn([tools.taskset, "-c", "1", bin, "-D", String(DURATION), "--warm-up-time=1", ...args], { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  const secs = (performance.now() - t0) / 1000;
  const m1 = machineTicks();
  if (code !== 0) throw new Error(`h2load exited ${code}: ${err}\n${out}`);
  const proxyCpu = before === null || proxyPid === null ? 0 : cpuPercent(before, cpuTicks(proxyPid), secs);
  // Everything the machine did besides the proxy: h2load and the backend (CPU 1) and the
  // other engineers' work on this shared machine. Read the figures against it.
  const otherCpu = machinePercent(m0, m1, secs) - proxyCpu;
  return { r: parseH2load(out), proxyCpu, otherCpu, peakRss: proxyPid === null ? 0 : peakRssMiB(proxyPid) };
}

function manifests(dir: string, port: number, cert: CertFiles, grpc: boolean): string {
  const host = grpc ? GRPC_HOST : HOST;
  const ing = ingress("bench", "bench", host, [{ path: "/", pathType: "Prefix", service: "backend" }], "bench-tls");
  // The h2c cells use the plain port: no redirect to HTTPS there (ingress-nginx's ssl-redirect).
  (ing.metadata as Record<string, unknown>).annotations = grpc ? { "nginx.ingress.kubernetes.io/backend-protocol": "GRPC" } : { "nginx.ingress.kubernetes.io/ssl-redirect": "false" };
  const file = join(dir, grpc ? "grpc.yaml" : "http.yaml");
  writeFileSync(file, toYaml([ingressClass(), service("bench", "backend", port), endpointSlice("bench", "backend", ["127.0.0.1"], port), ing, tlsSecret("bench", "bench-tls", cert.cert, cert.key)]));
  return file;
}

async function startNginx(tools: Tools, dir: string, name: string, conf: string): Promise<Subprocess> {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.conf`);
  writeFileSync(file, conf);
  const p = start([tools.nginx, "-p", dir, "-c", file, "-e", join(dir, `${name}-error.log`)], { cpus: "0", log: join(dir, `${name}-stderr.log`) }, tools.taskset);
  await Bun.sleep(500);
  if (p.exitCode !== null) throw new Error(`${name} did not start: ${await logTail(join(dir, `${name}-error.log`))}`);
  return p;
}

/** The gRPC Echo server of the test suite (grpc-js), in its own process on CPU 1. */
async function startGrpcBackend(tools: Tools): Promise<{ port: number; proc: Subprocess }> {
  const proc = Bun.spawn([tools.taskset, "-c", "1", process.execPath, join(ROOT, "test/grpc/server.ts"), "bench"], { stdout: "pipe", stderr: "inherit" });
  addCleanup(() => proc.kill("SIGKILL"));
  const first = await proc.stdout.getReader().read();
  return { port: Number(new TextDecoder().decode(first.value).trim()), proc };
}

/** One gRPC message (field 1 "hi") with its 5-byte gRPC frame header. */
function grpcBody(dir: string): string {
  const msg = Buffer.from([0x0a, 0x02, 0x68, 0x69]);
  const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, msg.length]), msg]);
  const file = join(dir, "unary.bin");
  writeFileSync(file, frame);
  return file;
}

/** Check one call end to end before measuring: HTTP 200 and grpc-status 0 in the trailers. */
async function checkGrpc(url: string, authority: string, body: string): Promise<void> {
  // Portico's HTTPS port moves to node:http2 once its first table holds the gRPC route; a call
  // that reaches the Bun.serve listener it replaces gets UNAVAILABLE (docs/design.md, "HTTP/2 and
  // gRPC"). So a few tries, bounded, before measuring.
  for (let attempt = 1; ; attempt++) {
    try {
      return await checkGrpcOnce(url, authority, body);
    } catch (err) {
      if (attempt >= 20) throw err;
      await Bun.sleep(250);
    }
  }
}

async function checkGrpcOnce(url: string, authority: string, body: string): Promise<void> {
  const s = http2.connect(url, { rejectUnauthorized: false });
  try {
    const status = await new Promise<string>((resolve2, reject) => {
      s.on("error", reject);
      const req = s.request({ ":method": "POST", ":path": "/portico.test.Echo/Unary", ":authority": authority, "content-type": "application/grpc", te: "trailers" });
      let g = "";
      req.on("response", (h) => (g = String(h["grpc-status"] ?? "")));
      req.on("trailers", (t) => (g = String(t["grpc-status"] ?? g)));
      req.on("data", () => {});
      req.on("close", () => resolve2(g));
      req.on("error", reject);
      req.end(Buffer.from(readFileSync(body)));
    });
    if (status !== "0") throw new Error(`gRPC check on ${url} got grpc-status ${status}`);
  } finally {
    s.close();
  }
}

async function main(): Promise<void> {
  installCleanup();
  const tools = await ensureTools(log);
  const h2 = ensureH2load();
  const dir = mkdtempSync(join(tmpdir(), "portico-h2bench-"));
  // nginx's workers run as another user: they must read the 1 MiB file and the certificates.
  chmodSync(dir, 0o755);
  addCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const backend = await startBackend(tools, join(dir, "backend"), "1", 0);
  const cert = await makeCert(tools.openssl, dir);
  const cells: Cell[] = [];
  const body = grpcBody(dir);

  const httpManifests = manifests(dir, backend.ports.keepalive, cert, false);
  type Client = "h2" | "h1" | "h2c";
  type Scenario = "small" | "1mib";
  const systems: Array<{ name: string; start: () => Promise<{ https: number; http: number; pid: number; stop: () => Promise<void> }>; clients: Client[]; scenarios?: Scenario[] }> = [
    { name: "portico", clients: ["h2", "h1", "h2c"], start: () => portico(tools, httpManifests, dir, true) },
    { name: "portico --http2=false", clients: ["h1"], start: () => portico(tools, httpManifests, dir, false) },
    { name: BARE, clients: ["h2", "h1", "h2c"], start: () => bare(tools, dir, cert, backend.ports.keepalive, "bench/lib/bare-h2-proxy.ts") },
    // The two ceilings, each only where it is the ceiling: the duties cost per request (small
    // bodies), reading the body in JavaScript per chunk (1 MiB).
    { name: DUTIES, clients: ["h2", "h1", "h2c"], scenarios: ["small"], start: () => bare(tools, dir, cert, backend.ports.keepalive, "bench/lib/duties-proxy.ts") },
    { name: BODY_IN_JS, clients: ["h2", "h1"], scenarios: ["1mib"], start: () => bare(tools, dir, cert, backend.ports.keepalive, "bench/lib/bare-h2-proxy.ts", ["--relay-stream"]) },
    {
      name: NGINX, clients: ["h2", "h1"],
      start: async () => {
        const [http, https] = freePorts(2) as [number, number];
        const p = await startNginx(tools, join(dir, "nginx"), "proxy", proxyConf(join(dir, "nginx"), { httpPort: http, httpsPort: https, upstreams: [[1, backend.ports.keepalive]], certFile: cert.certFile, keyFile: cert.keyFile, workers: 1, http2: true }));
        return { https, http, pid: p.pid, stop: () => stop(p) };
      },
    },
  ];
  // h2 and h2c: 16 connections × 10 streams for small bodies (the issue's h2load -c16 -m10).
  const shapes = { small: { h2: ["-c", "16", "-m", "10"], h1: ["-c", "64"] }, "1mib": { h2: ["-c", "4", "-m", "2"], h1: ["-c", "8"] } } as const;
  if (only !== null) {
    // A misspelt name would otherwise make a smoke run that measures nothing and says so nowhere.
    const known = new Set([...systems.map((x) => x.name), "grpc"]);
    const unknown = [...only].filter((x) => !known.has(x));
    if (unknown.length > 0) throw new Error(`--only: unknown ${unknown.map((x) => JSON.stringify(x)).join(", ")}; known: ${[...known].map((x) => JSON.stringify(x)).join(", ")}`);
  }
  for (const sys of systems) {
    if (only !== null && !only.has(sys.name)) continue;
    log(`starting ${sys.name}`);
    const s = await sys.start();
    try {
      for (const [scenario, path] of [["small", "/"], ["1mib", "/1m"]] as const) {
        if (sys.scenarios !== undefined && !sys.scenarios.includes(scenario)) continue;
        for (const client of sys.clients) {
          // h2c is measured for small bodies only (the in-cluster gRPC and API case).
          if (client === "h2c" && scenario !== "small") continue;
          const shape = shapes[scenario];
          const url = client === "h2c" ? `http://127.0.0.1:${s.http}${path}` : `https://127.0.0.1:${s.https}${path}`;
          const args = [...(client === "h1" ? ["--h1", ...shape.h1] : shape.h2), "-H", `:authority: ${HOST}`, url];
          log(`${scenario} ${sys.name} ${client}`);
          cells.push({ scenario, system: sys.name, client, ...(await h2load(h2, tools, args, s.pid)) });
        }
      }
    } finally {
      await s.stop();
    }
  }

  // gRPC unary: h2 clients, 8 connections × 8 streams.
  if (only !== null && !only.has("grpc")) return finish(cells, h2, backend);
  const grpcBackend = await startGrpcBackend(tools);
  const grpcArgs = (url: string) => ["-c", "8", "-m", "8", "-d", body, "-H", "content-type: application/grpc", "-H", "te: trailers", "-H", `:authority: ${GRPC_HOST}`, `${url}/portico.test.Echo/Unary`];
  const direct = `http://127.0.0.1:${grpcBackend.port}`;
  await checkGrpc(direct, GRPC_HOST, body);
  log("grpc direct");
  cells.push({ scenario: "grpc-unary", system: "direct (h2c)", client: "h2", ...(await h2load(h2, tools, grpcArgs(direct), null)) });
  // Off by default (it costs the proxy CPU): to see what each call was answered, on both sides.
  const accessLog = flags["grpc-access-log"] === undefined ? null : resolve(String(flags["grpc-access-log"]));
  const gp = await portico(tools, manifests(dir, grpcBackend.port, cert, true), dir, true, accessLog === null ? [] : ["--access-log", "stdout", "--log-format", "json"]);
  try {
    await checkGrpc(`https://127.0.0.1:${gp.https}`, GRPC_HOST, body);
    log("grpc portico");
    cells.push({ scenario: "grpc-unary", system: "portico (GRPC)", client: "h2", ...(await h2load(h2, tools, [...(accessLog === null ? [] : ["--log-file", `${accessLog}.h2load`]), ...grpcArgs(`https://127.0.0.1:${gp.https}`)], gp.pid)) });
  } finally {
    await gp.stop();
    if (accessLog !== null) writeFileSync(accessLog, readFileSync(join(gp.dir, "portico.out")));
  }
  const [gport] = freePorts(1) as [number];
  const gn = await startNginx(tools, join(dir, "grpc-nginx"), "grpc-proxy", grpcProxyConf(join(dir, "grpc-nginx"), { httpsPort: gport, upstreamPort: grpcBackend.port, certFile: cert.certFile, keyFile: cert.keyFile }));
  try {
    await checkGrpc(`https://127.0.0.1:${gport}`, GRPC_HOST, body);
    log("grpc nginx");
    cells.push({ scenario: "grpc-unary", system: "nginx grpc_pass", client: "h2", ...(await h2load(h2, tools, grpcArgs(`https://127.0.0.1:${gport}`), gn.pid)) });
  } finally {
    await stop(gn);
  }
  grpcBackend.proc.kill();
  await finish(cells, h2, backend);
}

async function finish(cells: readonly Cell[], h2: string, backend: { stop(): Promise<void> }): Promise<void> {
  await backend.stop();
  const report = render(cells, Bun.spawnSync([h2, "--version"]).stdout.toString().trim());
  mkdirSync(dirname(resolve(ROOT, flags.out as string)), { recursive: true });
  writeFileSync(resolve(ROOT, flags.out as string), report);
  console.log(report);
}

async function portico(tools: Tools, file: string, dir: string, http2on: boolean, extra: readonly string[] = []): Promise<{ https: number; http: number; pid: number; dir: string; stop: () => Promise<void> }> {
  const d = join(dir, `portico-${http2on ? "h2" : "bun"}-${Math.random().toString(36).slice(2, 8)}`);
  mkdirSync(d, { recursive: true });
  const r: Running = await startPortico(tools, file, { root: ROOT, main: "src/main.ts", dir: d, cpus: "0", workers: 1, tls: true, extraArgs: [`--http2=${http2on}`, ...extra] });
  return { https: r.https, http: r.http, pid: r.proc.pid, dir: d, stop: () => r.stop() };
}

/**
 * A proxy script shaped as bench/lib/bare-h2-proxy.ts (its flags, `extra` after them) on CPU 0,
 * forwarding to the backend's keep-alive listener: the bare proxy and the ceilings are started
 * the same way, so what differs between them is only what the script does per request.
 */
async function bare(tools: Tools, dir: string, cert: CertFiles, upstreamPort: number, script: string, extra: readonly string[] = []): Promise<{ https: number; http: number; pid: number; stop: () => Promise<void> }> {
  const [http, https] = freePorts(2) as [number, number];
  const logFile = join(dir, `${script.replace(/^.*\//, "").replace(/\.ts$/, "")}${extra.join("")}.log`);
  const proc = start([process.execPath, join(ROOT, script), "--https-port", String(https), "--http-port", String(http), "--cert", cert.certFile, "--key", cert.keyFile, "--upstream", `http://127.0.0.1:${upstreamPort}`, ...extra], { cpus: "0", log: logFile }, tools.taskset);
  for (let i = 0; ; i++) {
    const ok = await fetch(`http://127.0.0.1:${http}/`, { headers: { host: HOST } }).then((r) => r.ok, () => false);
    if (ok) break;
    if (proc.exitCode !== null || i >= 100) {
      await stop(proc);
      throw new Error(`${script} ${extra.join(" ")} did not answer: ${await logTail(logFile)}`);
    }
    await Bun.sleep(100);
  }
  return { https, http, pid: proc.pid, stop: () => stop(proc) };
}

function render(cells: readonly Cell[], h2loadVersion: string): string {
  const find = (scenario: string, system: string, client: string) => cells.find((c) => c.scenario === scenario && c.system === system && c.client === client);
  const ratio = (a: Cell | undefined, b: Cell | undefined) => (a && b && b.r.rps > 0 ? (a.r.rps / b.r.rps).toFixed(2) : "–");
  // The proxy's CPU time per answered request (all its threads), in µs: on a shared machine
  // the rate moves with what else runs, while the CPU one request costs moves far less.
  const perReq = (c: Cell) => (c.r.rps > 0 && c.proxyCpu > 0 ? (c.proxyCpu * 10_000) / c.r.rps : Number.NaN);
  const cpuRatio = (a: Cell | undefined, b: Cell | undefined) => {
    const x = a ? perReq(a) : Number.NaN;
    const y = b ? perReq(b) : Number.NaN;
    return Number.isFinite(x) && Number.isFinite(y) ? (y / x).toFixed(2) : "–";
  };
  const lines = [
    "# HTTP/2 and gRPC: one run per cell",
    "",
    `Bun ${Bun.version}, ${h2loadVersion}, ${DURATION} s per cell after 1 s of warm-up, ${cells.length} cells, the whole run ${((performance.now() - STARTED) / 60_000).toFixed(1)} min. Proxy alone on CPU 0; backend and h2load on CPU 1.`,
    "**The machine was shared with other work during the run**: `other CPU` is what the machine used besides the proxy",
    "(h2load, the backend, and everyone else), in % of one core; read each row against it. One run, no repetitions: ratios, not absolutes.",
    "",
    "| scenario | system | client | req/s | MB/s | failed+errored | non-2xx | status in warm-up | proxy CPU % | proxy CPU µs/req | other CPU % | proxy peak RSS MiB |",
    "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...cells.map((c) => `| ${c.scenario} | ${c.system} | ${c.client} | ${c.r.rps.toFixed(0)} | ${c.r.mbps.toFixed(1)} | ${c.r.failed + c.r.errored} | ${c.r.non2xx} | ${c.r.statusInWarmUp} | ${c.proxyCpu.toFixed(0)} | ${Number.isFinite(perReq(c)) ? perReq(c).toFixed(0) : "–"} | ${c.otherCpu.toFixed(0)} | ${c.peakRss ? c.peakRss.toFixed(0) : "–"} |`),
    "",
    "`non-2xx`: the 3xx, 4xx and 5xx answers h2load counted. `status in warm-up`: streams h2load counts as done in the measured",
    "phase but whose response headers came during the warm-up, so it counted no status for them (succeeded, not errors: bench/lib/h2load.ts).",
    "",
  ];
  // Portico beside each reference, one row per cell. The goal is ≥ 0.85× the bare proxy; a
  // cell's ceiling does only the part of Portico's work that no ingress-nginx-compatible proxy
  // on this runtime can skip, so `ceiling / bare` says what the goal means there and `Portico /
  // ceiling` what is Portico's own (bench/results/duties-floor.md, bench/results/relay-1mib.md).
  lines.push(
    "## Ratios: Portico against the bare proxy, the cell's ceiling and nginx",
    "",
    `Ceilings: \`${DUTIES}\` (bench/lib/duties-proxy.ts: the bare proxy plus only the per-request work ingress-nginx behaviour requires:`,
    "requestIP, an AbortController's signal, the forwarded fields on a copied Headers, a new Response around the small body) on the",
    `small cells; \`${BODY_IN_JS}\` (bench/lib/bare-h2-proxy.ts --relay-stream: each answer's body read through a JavaScript stream, as a proxy`,
    "must that needs to know when a body ends) on the 1 MiB cells. Each is started exactly as the bare proxy is. req/s of the first over",
    "req/s of the second, and (CPU) the second's proxy CPU per request over the first's. On h2 and h2c small (160 streams in flight)",
    "`bare + duties`, like the bare proxy, pays for fetch's pool of 64 upstream connections, which Portico's pool gate spares it",
    "(docs/design.md, \"Past 64 requests in flight\"): there Portico can beat that ceiling, and the bare proxy's h2 figure is not a ceiling either.",
    "",
    "| cell | ceiling | Portico / bare (goal ≥ 0.85) | (CPU) | Portico / ceiling | (CPU) | ceiling / bare | (CPU) | Portico / nginx | (CPU) |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
  );
  const cellRows: Array<[label: string, scenario: string, client: string, ceiling: string]> = [
    ["HTTPS HTTP/1.1 small", "small", "h1", DUTIES],
    ["HTTPS h2 small", "small", "h2", DUTIES],
    ["h2c small", "small", "h2c", DUTIES],
    ["HTTPS HTTP/1.1 1 MiB", "1mib", "h1", BODY_IN_JS],
    ["HTTPS h2 1 MiB", "1mib", "h2", BODY_IN_JS],
  ];
  for (const [label, scenario, client, ceiling] of cellRows) {
    const p = find(scenario, "portico", client);
    const b = find(scenario, BARE, client);
    const c = find(scenario, ceiling, client);
    // nginx 1.22 cannot serve h2c beside HTTP/1.1 on one port: no nginx cell there, a dash.
    const n = find(scenario, NGINX, client);
    lines.push(`| ${label} | ${ceiling} | ${ratio(p, b)} | ${cpuRatio(p, b)} | ${ratio(p, c)} | ${cpuRatio(p, c)} | ${ratio(c, b)} | ${cpuRatio(c, b)} | ${ratio(p, n)} | ${cpuRatio(p, n)} |`);
  }
  const row = (label: string, a: [string, string], b: [string, string]) =>
    lines.push(`| ${label} | ${ratio(find("small", ...a), find("small", ...b))} | ${ratio(find("1mib", ...a), find("1mib", ...b))} | ${cpuRatio(find("small", ...a), find("small", ...b))} | ${cpuRatio(find("1mib", ...a), find("1mib", ...b))} |`);
  lines.push(
    "",
    "## Other ratios",
    "",
    "req/s of the first over req/s of the second, and (CPU) the second's proxy CPU per request over the first's:",
    "",
    "| ratio | small | 1 MiB | small (CPU) | 1 MiB (CPU) |",
    "|---|---:|---:|---:|---:|",
  );
  row("Portico HTTP/1.1: --http2 / --http2=false", ["portico", "h1"], ["portico --http2=false", "h1"]);
  row("bare proxy h2 / its own HTTP/1.1", [BARE, "h2"], [BARE, "h1"]);
  const g = (s: string) => find("grpc-unary", s, "h2");
  lines.push("", `gRPC unary: Portico / direct = ${ratio(g("portico (GRPC)"), g("direct (h2c)"))}, Portico / nginx grpc_pass = ${ratio(g("portico (GRPC)"), g("nginx grpc_pass"))} (goal ≥ 1.69). The bare proxy cannot relay gRPC: Bun.serve sends no trailers.`, "");
  return lines.join("\n");
}

await runMain(async () => {
  try {
    await main();
  } finally {
    await stopAll();
  }
});
