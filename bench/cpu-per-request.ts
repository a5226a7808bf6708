// The proxy's CPU time per request under h2load, alone on CPU 0 (`bun bench/cpu-per-request.ts`):
// a figure that holds on a shared machine, where the rate of one run moves with everyone
// else's work but the CPU one request costs (all the proxy's threads, from /proc) moves far
// less. Systems run interleaved, `--reps` rounds: `--system label=DIR` runs DIR/src/main.ts
// (another worktree, or `git archive main` unpacked as bench/README.md shows), `bare` runs
// bench/lib/bare-h2-proxy.ts. Cells: `small` (13 bytes; h2c and HTTPS h2 at 16 connections × 10
// streams, i.e. 160 requests in flight, past fetch's 64 pooled upstream connections) and `1mib`
// (HTTPS h2 4 × 2, HTTPS HTTP/1.1 8 connections), as in bench/http2.ts. The backend and h2load
// on CPU 1. Loopback only; every process it starts is stopped.
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { makeCert } from "./lib/certs.ts";
import { intFlag } from "./lib/flags.ts";
import { ensureTools } from "./lib/install.ts";
import { freePorts } from "./lib/net.ts";
import { addCleanup, installCleanup, logTail, runMain, start, stop, stopAll } from "./lib/procs.ts";
import { HOST, startBackend, startPortico, upstreamsFor, writeManifests } from "./lib/systems.ts";

const { values: flags } = parseArgs({
  options: {
    system: { type: "string", multiple: true },
    scenario: { type: "string", default: "small" },
    duration: { type: "string" },
    reps: { type: "string" },
  },
});
const ROOT = resolve(import.meta.dir, "..");
const duration = intFlag(flags.duration, 5, 1, 60, "duration");
const reps = intFlag(flags.reps, 2, 1, 10, "reps");
const systems = (flags.system ?? [`this=${ROOT}`, "bare"]).map((s) => {
  const i = s.indexOf("=");
  return i < 0 ? { label: s, root: null } : { label: s.slice(0, i), root: resolve(s.slice(i + 1)) };
});
if (flags.scenario !== "small" && flags.scenario !== "1mib") throw new Error("--scenario: small or 1mib");
const log = (msg: string) => process.stderr.write(`[cpu-per-request] ${msg}\n`);

/** utime + stime of every thread of `pid`, in clock ticks (USER_HZ, 100 on Linux). */
function ticks(pid: number): number {
  let t = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const s = readFileSync(`/proc/${pid}/task/${tid}/stat`, "latin1");
      const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
      t += Number(f[11]) + Number(f[12]);
    } catch {
      // a thread that ended meanwhile
    }
  }
  return t;
}

async function main(): Promise<void> {
  installCleanup();
  const tools = await ensureTools(log);
  const dir = mkdtempSync(join(tmpdir(), "portico-cpu-per-request-"));
  // nginx's workers read the 1 MiB file from here.
  chmodSync(dir, 0o755);
  addCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const backend = await startBackend(tools, join(dir, "backend"), "1", 0);
  const cert = await makeCert(tools.openssl, dir, HOST);
  const manifests = writeManifests(dir, upstreamsFor(backend.ports, "keepalive"), cert, 0, { "nginx.ingress.kubernetes.io/ssl-redirect": "false" });
  const small = flags.scenario === "small";
  const cells: ReadonlyArray<readonly [string, boolean, readonly string[]]> = small
    ? [["h2c", false, ["-c", "16", "-m", "10"]], ["HTTPS h2", true, ["-c", "16", "-m", "10"]]]
    : [["HTTPS h2", true, ["-c", "4", "-m", "2"]], ["HTTPS HTTP/1.1", true, ["--h1", "-c", "8"]]];
  const path = small ? "/" : "/1m";
  const rows: string[] = [];
  try {
    for (let rep = 1; rep <= reps; rep++) {
      for (const sys of systems) {
        let proxy: { pid: number; http: number; https: number; stop: () => Promise<void> };
        if (sys.root === null) {
          const [http, https] = freePorts(2) as [number, number];
          const logFile = join(dir, `bare-${rep}.log`);
          const proc = start([process.execPath, join(ROOT, "bench/lib/bare-h2-proxy.ts"), "--https-port", String(https), "--http-port", String(http), "--cert", cert.certFile, "--key", cert.keyFile, "--upstream", `http://127.0.0.1:${backend.ports.keepalive}`], { cpus: "0", log: logFile }, tools.taskset);
          let up = false;
          for (let i = 0; i < 100 && !up; i++) {
            up = await fetch(`http://127.0.0.1:${http}/`, { headers: { host: HOST } }).then((r) => r.ok, () => false);
            if (!up) await Bun.sleep(100);
          }
          if (!up) throw new Error(`the bare proxy did not start: ${await logTail(logFile)}`);
          proxy = { pid: proc.pid, http, https, stop: () => stop(proc) };
        } else {
          const d = join(dir, `${sys.label}-${rep}`);
          mkdirSync(d);
          const p = await startPortico(tools, manifests, { root: sys.root, main: "src/main.ts", dir: d, cpus: "0", workers: 1, tls: true });
          proxy = { pid: p.proc.pid, http: p.http, https: p.https, stop: p.stop };
        }
        try {
          for (const [name, tls, shape] of cells) {
            const url = tls ? `https://127.0.0.1:${proxy.https}${path}` : `http://127.0.0.1:${proxy.http}${path}`;
            const h = Bun.spawn([tools.taskset, "-c", "1", "h2load", "-D", String(duration), "--warm-up-time=1", ...shape, "-H", `:authority: ${HOST}`, url], { stdout: "pipe", stderr: "pipe" });
            const out = new Response(h.stdout).text();
            // The CPU window is h2load's measured one: after its warm-up second, to its end.
            await Bun.sleep(1000);
            const t0 = ticks(proxy.pid);
            const text = await out;
            await h.exited;
            const t1 = ticks(proxy.pid);
            const rps = Number(/([\d.]+) req\/s/.exec(text)?.[1] ?? Number.NaN);
            const ok = Number(/(\d+) 2xx/.exec(text)?.[1] ?? Number.NaN);
            const us = ((t1 - t0) * 10_000) / ok;
            const load = readFileSync("/proc/loadavg", "latin1").split(" ")[0];
            const row = `| ${rep} | ${sys.label} | ${name} | ${rps.toFixed(0)} | ${ok} | ${us.toFixed(1)} | ${load} |`;
            log(row);
            rows.push(row);
          }
        } finally {
          await proxy.stop();
        }
      }
    }
  } finally {
    await backend.stop();
    await stopAll();
  }
  console.log([
    `Proxy CPU per 2xx answer, ${flags.scenario}, ${duration} s per cell after 1 s of warm-up, Bun ${Bun.version}, ${new Date().toISOString().slice(0, 16)} UTC`,
    "",
    "| round | system | client | req/s | 2xx | proxy CPU µs/req | load average |",
    "|---:|---|---|---:|---:|---:|---:|",
    ...rows,
    "",
  ].join("\n"));
}

await runMain(main);
