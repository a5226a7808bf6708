// Starting the processes under test: the nginx backend, the nginx proxy, and Portico.
import type { Subprocess } from "bun";
import { BUN_HEADER_FLAG } from "../../src/config/header-buffers.ts";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { endpointSlice, ingress, ingressClass, service, tlsSecret, toYaml, type IngressPath } from "./cluster.ts";
import type { CertFiles } from "./certs.ts";
import { freePorts, waitFor } from "./net.ts";
import { backendConf, proxyConf, regexPath, type BackendPorts } from "./nginx.ts";
import { logTail, start, stop } from "./procs.ts";
import type { Tools } from "./install.ts";

export const HOST = "bench.local";
export const SMALL_BODY = "hello world!\n";
export const MIB = 1024 * 1024;

export interface Running {
  readonly proc: Subprocess;
  readonly http: number;
  readonly https: number;
  stop(): Promise<void>;
}

async function startNginx(tools: Tools, dir: string, name: string, conf: string, cpus: string | null): Promise<Subprocess> {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.conf`);
  writeFileSync(file, conf);
  const log = join(dir, `${name}-stderr.log`);
  const p = start([tools.nginx, "-p", dir, "-c", file, "-e", join(dir, `${name}-error.log`)], { cpus, log }, tools.taskset);
  return p;
}

export interface Backend {
  readonly proc: Subprocess;
  readonly ports: BackendPorts;
  stop(): Promise<void>;
}

/** First loopback octet of the 200-endpoint listeners: 127.0.0.10 … 127.0.0.209. */
const MANY_FIRST = 10;

export async function startBackend(tools: Tools, dir: string, cpus: string | null, manyCount: number): Promise<Backend> {
  const root = join(dir, "www");
  mkdirSync(root, { recursive: true });
  writeFileSync(join(root, "1m"), new Uint8Array(MIB).fill(0x61));
  writeFileSync(join(root, "chunked.html"), "<p>" + "b".repeat(2041) + "</p>\n");
  const [keepalive, close, many, status] = freePorts(4) as [number, number, number, number];
  const ports: BackendPorts = { keepalive, close, many, manyFirstOctet: MANY_FIRST, manyCount, status };
  const proc = await startNginx(tools, dir, "backend", backendConf(dir, root, ports, 1), cpus);
  const alive = () => proc.exitCode === null;
  try {
    await waitFor(`http://127.0.0.1:${keepalive}/`, { timeoutMs: 5000, alive });
    await waitFor(`http://127.0.0.1:${close}/`, { timeoutMs: 5000, alive });
    if (manyCount > 0) await waitFor(`http://127.0.0.${MANY_FIRST + manyCount - 1}:${many}/`, { timeoutMs: 5000, alive });
  } catch (e) {
    throw new Error(`backend nginx did not start: ${String(e)}\n${await logTail(join(dir, "backend-error.log"))}`);
  }
  return { proc, ports, stop: () => stop(proc) };
}

/** Connections the backend has accepted so far (nginx stub_status), minus this query's own. */
export async function backendAccepts(b: Backend): Promise<number> {
  try {
    const r = await fetch(`http://127.0.0.1:${b.ports.status}/status`, { signal: AbortSignal.timeout(2000), keepalive: false });
    // "Active connections: N \nserver accepts handled requests\n A H R \n..."
    const m = /^\s*(\d+)\s+\d+\s+\d+\s*$/m.exec(await r.text());
    return m ? Number(m[1]) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** Which backend listener(s) a scenario sends to, as [last octet, port] pairs on 127.0.0.x. */
export function upstreamsFor(b: BackendPorts, kind: "keepalive" | "close" | "many"): [number, number][] {
  if (kind === "keepalive") return [[1, b.keepalive]];
  if (kind === "close") return [[1, b.close]];
  return Array.from({ length: b.manyCount }, (_, i) => [b.manyFirstOctet + i, b.many] as [number, number]);
}

export async function startNginxProxy(
  tools: Tools,
  dir: string,
  cpus: string | null,
  upstreams: readonly (readonly [number, number])[],
  cert: CertFiles,
  regexPaths = 0,
): Promise<Running> {
  const [http, https] = freePorts(2) as [number, number];
  const conf = proxyConf(dir, { httpPort: http, httpsPort: https, upstreams, certFile: cert.certFile, keyFile: cert.keyFile, workers: 1, regexPaths });
  const proc = await startNginx(tools, dir, "proxy", conf, cpus);
  try {
    // With regex paths "/" is the implicit location's 404 (the scenario's probe checks a path).
    await waitFor(`http://127.0.0.1:${http}/`, { timeoutMs: 5000, host: HOST, alive: () => proc.exitCode === null, status: regexPaths > 0 ? 404 : 200 });
  } catch (e) {
    throw new Error(`nginx proxy did not start: ${String(e)}\n${await logTail(join(dir, "proxy-error.log"))}`);
  }
  return { proc, http, https, stop: () => stop(proc) };
}

export interface PorticoOptions {
  readonly root: string;
  /** Entry point, relative to root (src/main.ts) or absolute (another worktree's src/main.ts). */
  readonly main: string;
  /** Temp dir for the log file. */
  readonly dir: string;
  readonly cpus: string | null;
  readonly workers: number | null;
  readonly tls: boolean;
  readonly extraArgs?: readonly string[];
}

/**
 * Writes the manifests for one scenario: IngressClass, Service, EndpointSlice, Ingress (+ Secret).
 * With `regexPaths`, the Ingress has that many regex paths (nginx.ts regexPath) and use-regex;
 * `extra` annotations go on the Ingress too (a scenario's feature); `canary` adds a canary
 * Ingress for the same host and paths with those annotations.
 */
export function writeManifests(
  dir: string,
  upstreams: readonly (readonly [number, number])[],
  cert: CertFiles | null,
  regexPaths = 0,
  extra?: Readonly<Record<string, string>>,
  canary?: Readonly<Record<string, string>>,
): string {
  const ports = new Set(upstreams.map(([, p]) => p));
  if (ports.size !== 1) throw new Error("one EndpointSlice needs one target port");
  const port = [...ports][0] as number;
  const paths: IngressPath[] =
    regexPaths > 0
      ? Array.from({ length: regexPaths }, (_, i) => ({ path: regexPath(i), pathType: "ImplementationSpecific", service: "backend" }))
      : [{ path: "/", pathType: "Prefix", service: "backend" }];
  const regex = regexPaths > 0 ? { "nginx.ingress.kubernetes.io/use-regex": "true" } : null;
  const annotations = regex === null && extra === undefined ? null : { ...regex, ...extra };
  const objs = [
    ingressClass(),
    service("bench", "backend", port),
    endpointSlice("bench", "backend", upstreams.map(([o]) => `127.0.0.${o}`), port),
    ingress("bench", "bench", HOST, paths, cert ? "bench-tls" : null, "1", annotations),
    ...(canary ? [ingress("bench", "bench-canary", HOST, paths, null, "1", { "nginx.ingress.kubernetes.io/canary": "true", ...canary })] : []),
    ...(cert ? [tlsSecret("bench", "bench-tls", cert.cert, cert.key)] : []),
  ];
  const file = join(dir, "manifests.yaml");
  writeFileSync(file, toYaml(objs));
  return file;
}

export function porticoAvailable(root: string, main = "src/main.ts"): boolean {
  return Bun.spawnSync(["test", "-s", resolve(root, main)]).exitCode === 0;
}

export async function startPortico(tools: Tools, manifests: string, o: PorticoOptions): Promise<Running> {
  const [http, https, admin] = freePorts(3) as [number, number, number];
  const args = [
    // The parser limit every Portico process runs with (package.json's scripts, the executable's
    // execArgv); without it Portico warns and Bun answers 431 to heads over 16 KiB.
    process.execPath, BUN_HEADER_FLAG, resolve(o.root, o.main),
    "--manifests", manifests,
    "--bind", "127.0.0.1",
    "--http-port", String(http),
    "--https-port", String(https),
    "--admin-port", String(admin),
    "--access-log", "off",
    "--log-level", "warn",
    ...(o.workers === null ? [] : ["--workers", String(o.workers)]),
    ...(o.tls ? ["--default-ssl-certificate", "bench/bench-tls"] : []),
    ...(o.extraArgs ?? []),
  ];
  const log = join(o.dir, "portico.log");
  const proc = start(args, { cpus: o.cpus, cwd: o.root, out: join(o.dir, "portico.out"), log }, tools.taskset);
  try {
    await waitFor(`http://127.0.0.1:${admin}/readyz`, { timeoutMs: 15_000, alive: () => proc.exitCode === null });
  } catch (e) {
    await stop(proc);
    throw new Error(`portico did not become ready: ${String(e)}\n${await logTail(log)}\n${await logTail(join(o.dir, "portico.out"))}`);
  }
  return { proc, http, https, stop: () => stop(proc) };
}
