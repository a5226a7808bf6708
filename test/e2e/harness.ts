// Runs the real Portico process (sources, or the compiled binary with PORTICO_BIN) on free
// loopback ports, plus small backends, for end-to-end suites. Every process is killed in stop().
import { BUN_HEADER_FLAG } from "../../src/config/header-buffers.ts";
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { eventually } from "../wait.ts";
import { yamlDocs } from "./objects.ts";

const ROOT = join(import.meta.dir, "..", "..");

/** A port the OS just handed out (closed again; a tiny race we accept in tests). */
// Ports this test process has handed out: the kernel may give a released port 0 again at once,
// so two Porticos started side by side could otherwise be told the same port.
const handedOut = new Set<number>();

export function freePort(): number {
  for (;;) {
    const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = s.port;
    s.stop(true);
    if (handedOut.has(port)) continue;
    if (handedOut.size > 4096) handedOut.clear();
    handedOut.add(port);
    return port;
  }
}

export interface Portico {
  readonly http: string;
  readonly https: string;
  readonly admin: string;
  readonly ports: { http: number; https: number; admin: number };
  readonly proc: Subprocess<"ignore", "pipe", "pipe">;
  /** Every stdout/stderr line so far. */
  readonly lines: string[];
  /** Resolves with the first log line matching `re`. */
  waitForLine(re: RegExp, timeoutMs?: number): Promise<string>;
  stop(signal?: NodeJS.Signals): Promise<number>;
}

type StartOptions = { env?: Record<string, string>; ready?: boolean; subcommand?: "demo"; cwd?: string };

export async function startPortico(args: string[], opts: StartOptions = {}): Promise<Portico> {
  // A free port can still be taken by another process (another test file's) between the probe
  // and Portico's bind; Portico then exits saying so, and is started again on other ports.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(args, opts);
    } catch (e) {
      if (attempt >= 3 || !/is in use by another process/.test((e as Error).message)) throw e;
    }
  }
}

async function startOnce(args: string[], opts: StartOptions): Promise<Portico> {
  const ports = { http: freePort(), https: freePort(), admin: freePort() };
  // From sources, with the parser limit the executable carries (scripts/build.ts BUN_HEADER_FLAG).
  const cmd = process.env.PORTICO_BIN ? [process.env.PORTICO_BIN] : [process.execPath, BUN_HEADER_FLAG, join(ROOT, "src", "main.ts")];
  const proc = Bun.spawn(
    [
      ...cmd,
      ...(opts.subcommand ? [opts.subcommand] : []),
      "--bind", "127.0.0.1",
      "--http-port", String(ports.http),
      "--https-port", String(ports.https),
      "--admin-port", String(ports.admin),
      "--shutdown-delay", "0s",
      "--workers", "1",
      ...args,
    ],
    { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, ...opts.env }, cwd: opts.cwd ?? ROOT },
  );
  const lines: string[] = [];
  const waiters: { re: RegExp; resolve: (l: string) => void }[] = [];
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of stream) {
      buf += dec.decode(chunk, { stream: true });
      let i: number;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        lines.push(line);
        if (process.env.PORTICO_E2E_VERBOSE) process.stderr.write(`  | ${line}\n`);
        for (const w of [...waiters]) if (w.re.test(line)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(line); }
      }
    }
  };
  void pump(proc.stdout);
  void pump(proc.stderr);
  const p: Portico = {
    http: `http://127.0.0.1:${ports.http}`,
    https: `https://127.0.0.1:${ports.https}`,
    admin: `http://127.0.0.1:${ports.admin}`,
    ports,
    proc,
    lines,
    waitForLine(re, timeoutMs = 10_000) {
      const hit = lines.find((l) => re.test(l));
      if (hit) return Promise.resolve(hit);
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no log line matching ${re} within ${timeoutMs} ms:\n${lines.slice(-20).join("\n")}`)), timeoutMs);
        waiters.push({ re, resolve: (l) => { clearTimeout(t); resolve(l); } });
      });
    },
    async stop(signal = "SIGTERM") {
      if (proc.exitCode === null && !proc.killed) proc.kill(signal);
      const timer = setTimeout(() => proc.kill("SIGKILL"), 15_000);
      const code = await proc.exited;
      clearTimeout(timer);
      return code;
    },
  };
  if (opts.ready !== false) {
    try {
      await waitReady(p);
    } catch (err) {
      await p.stop("SIGKILL");
      throw err;
    }
  }
  return p;
}

/**
 * Porticos started side by side: when one fails to start, the others are stopped before the
 * failure is thrown, so a failed beforeAll leaves no process behind.
 */
export async function allStarted<T extends readonly Promise<Portico>[]>(starts: readonly [...T]): Promise<{ -readonly [K in keyof T]: Portico }> {
  const settled = await Promise.allSettled(starts);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed !== undefined) {
    await Promise.all(settled.map((r) => (r.status === "fulfilled" ? r.value.stop("SIGKILL") : undefined)));
    throw failed.reason;
  }
  return settled.map((r) => (r as PromiseFulfilledResult<Portico>).value) as { -readonly [K in keyof T]: Portico };
}

/** Waits until /readyz answers 200; fails at once, with its output, if the process exits. */
export async function waitReady(p: Portico, timeoutMs = 15_000): Promise<void> {
  try {
    await eventually(async () => p.proc.exitCode !== null || (await fetch(`${p.admin}/readyz`)).status === 200, timeoutMs, "portico ready");
  } catch (e) {
    throw new Error(`${(e as Error).message}:\n${p.lines.slice(-30).join("\n")}`);
  }
  if (p.proc.exitCode !== null) throw new Error(`portico exited with ${p.proc.exitCode}:\n${p.lines.join("\n")}`);
}

/** Whether a process with this id exists (signal 0 checks without sending, POSIX kill(2)). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export interface Backend {
  readonly name: string;
  readonly port: number;
  readonly hits: number;
  stop(): void;
}

/** A backend that answers `name path` and counts requests; `/slow?ms=N` waits N ms first. */
export function startBackend(name: string): Backend {
  let hits = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      hits++;
      const url = new URL(req.url);
      // A slow backend on purpose (the request in flight that drains and timeouts wait on).
      if (url.pathname.startsWith("/slow")) await Bun.sleep(Number(url.searchParams.get("ms") ?? "1000"));
      return new Response(`${name} ${url.pathname}`, { headers: { "x-backend": name } });
    },
  });
  return {
    name,
    port: server.port as number,
    get hits() {
      return hits;
    },
    stop: () => void server.stop(true),
  };
}

/** One GET on a fresh TCP connection, so SO_REUSEPORT picks a worker for each (status 0: no answer). */
export async function freshGet(p: Portico, host: string, path = "/"): Promise<{ status: number; body: string }> {
  try {
    const res = await fetch(`${p.http}${path}`, { headers: { host, connection: "close" }, keepalive: false });
    return { status: res.status, body: await res.text() };
  } catch {
    return { status: 0, body: "" };
  }
}

/** GET through the proxy with a Host header; returns status and body text. */
export async function get(base: string, host: string, path: string, init: RequestInit = {}): Promise<{ status: number; body: string; headers: Headers }> {
  const res = await fetch(`${base}${path}`, { ...init, headers: { host, ...(init.headers as Record<string, string> | undefined) }, redirect: "manual" });
  return { status: res.status, body: await res.text(), headers: res.headers };
}

/** The ingress-nginx controller's ConfigMap, as --nginx-configmap names it in these suites. */
export const NGINX_CM = { namespace: "ingress-nginx", name: "ingress-nginx-controller" } as const;

/**
 * A --manifests folder (in a fresh temporary one) holding objects.yaml and the controller's
 * ConfigMap, ingress-nginx.yaml; `args` starts Portico on it with --nginx-configmap.
 */
export interface ConfigMapManifests {
  readonly folder: string;
  readonly args: readonly string[];
  writeObjects(yaml: string): void;
  /** Replaces the ConfigMap in one step (a rename), as editors and ConfigMap volumes do. */
  writeConfigMap(data: Record<string, string>): void;
  remove(): void;
}

export function configMapManifests(prefix: string): ConfigMapManifests {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const folder = join(dir, "manifests");
  mkdirSync(folder);
  return {
    folder,
    args: ["--manifests", folder, "--nginx-configmap", `${NGINX_CM.namespace}/${NGINX_CM.name}`],
    writeObjects: (yaml) => writeFileSync(join(folder, "objects.yaml"), yaml),
    writeConfigMap: (data) => {
      writeFileSync(join(dir, "cm.tmp"), yamlDocs([{ apiVersion: "v1", kind: "ConfigMap", metadata: { ...NGINX_CM }, data }]));
      renameSync(join(dir, "cm.tmp"), join(folder, "ingress-nginx.yaml"));
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
