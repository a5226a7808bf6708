// A CPU profile of Portico under HTTPS HTTP/1.1 small answers (`bun bench/profile-h1.ts`): one
// Portico (`--workers 1`, access log off) alone on CPU 0 under `bun --cpu-prof-md`, h2load --h1
// (64 connections) and the nginx backend (13-byte body, keep-alive) on CPU 1, for --duration
// seconds; the profile (Bun's markdown summary: self and total time per function) is written
// into --out-dir when Portico exits. Loopback only; every process it starts is stopped.
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { makeCert } from "./lib/certs.ts";
import { intFlag } from "./lib/flags.ts";
import { ensureTools } from "./lib/install.ts";
import { freePorts, waitFor } from "./lib/net.ts";
import { addCleanup, installCleanup, logTail, runMain, start, stop, stopAll } from "./lib/procs.ts";
import { BUN_HEADER_FLAG } from "../src/config/header-buffers.ts";
import { HOST, startBackend, upstreamsFor, writeManifests } from "./lib/systems.ts";

const { values: f } = parseArgs({ options: { main: { type: "string" }, duration: { type: "string" }, "out-dir": { type: "string" } } });
const ROOT = resolve(import.meta.dir, "..");
const main = resolve(ROOT, f.main ?? "src/main.ts");
const seconds = intFlag(f.duration, 10, 1, 60, "duration");
const outDir = resolve(f["out-dir"] ?? "profile-h1");
const log = (m: string) => process.stderr.write(`[profile-h1] ${m}\n`);

async function run(): Promise<void> {
  installCleanup();
  const tools = await ensureTools(log);
  const dir = mkdtempSync(join(tmpdir(), "portico-profile-h1-"));
  addCleanup(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(outDir, { recursive: true });
  try {
    const backend = await startBackend(tools, join(dir, "backend"), "1", 0);
    const cert = await makeCert(tools.openssl, dir, HOST);
    const manifests = writeManifests(dir, upstreamsFor(backend.ports, "keepalive"), cert, 0, { "nginx.ingress.kubernetes.io/ssl-redirect": "false" });
    const [http, https, admin] = freePorts(3) as [number, number, number];
    const plog = join(dir, "portico.log");
    const proc = start(
      [
        process.execPath, BUN_HEADER_FLAG, "--cpu-prof-md", `--cpu-prof-dir=${outDir}`, main,
        "--manifests", manifests, "--bind", "127.0.0.1",
        "--http-port", String(http), "--https-port", String(https), "--admin-port", String(admin),
        "--access-log", "off", "--log-level", "warn", "--workers", "1",
        "--default-ssl-certificate", "bench/bench-tls",
        // A profile is written at exit: drain at once so stop() does not have to SIGKILL.
        "--shutdown-delay", "0s", "--shutdown-grace-period", "1s",
      ],
      { cpus: "0", cwd: ROOT, log: plog, out: join(dir, "portico.out") },
      tools.taskset,
    );
    await waitFor(`http://127.0.0.1:${admin}/readyz`, { timeoutMs: 15_000, alive: () => proc.exitCode === null }).catch(async (e) => {
      throw new Error(`portico did not become ready: ${String(e)}\n${await logTail(plog)}`);
    });
    const load = Bun.spawn([tools.taskset, "-c", "1", "h2load", "-D", String(seconds), "--h1", "-c", "64", "-H", `:authority: ${HOST}`, `https://127.0.0.1:${https}/`], { stdout: "pipe", stderr: "pipe" });
    const timer = setTimeout(() => load.kill("SIGKILL"), (seconds + 15) * 1000);
    const out = await new Response(load.stdout).text();
    await load.exited;
    clearTimeout(timer);
    log(out.split("\n").filter((l) => /finished in|requests:/.test(l)).join(" | "));
    await stop(proc, 10_000);
    await backend.stop();
    log(`profiles in ${outDir}: ${readdirSync(outDir).join(", ")}`);
  } finally {
    await stopAll();
  }
}

await runMain(run);
