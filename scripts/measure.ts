// Figures for the release note: binary size, start-up time to ready, idle RSS, exit time.
//
//   bun run build && bun scripts/measure.ts [--binary dist/portico] [--manifests k8s/examples/demo] [--workers 1]
//
// Starts the compiled binary on loopback ports, polls /readyz until 200, waits for the process
// to settle, sums VmRSS over the process and its children (workers), then sends SIGTERM and
// times the exit (--shutdown-delay 0 so the drain does not dominate). Linux only (/proc).
import { readFileSync, readdirSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { relative, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..");

function arg(name: string, fallback: string): string {
  const i = Bun.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Bun.argv[i + 1] : undefined;
  return v ?? fallback;
}

/** A free loopback port (closed again before use: fine for a measurement script). */
async function freePort(): Promise<number> {
  return await new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      const port = typeof a === "object" && a ? a.port : 0;
      s.close(() => ok(port));
    });
  });
}

function rssKiB(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** pid and every descendant, from the ppid field of /proc/<pid>/stat. */
function tree(root: number): number[] {
  const parent = new Map<number, number>();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      parent.set(Number(d), Number(fields[1]));
    } catch {
      // the process exited while we looked
    }
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) for (const [pid, ppid] of parent) if (ppid === out[i]) out.push(pid);
  return out;
}

async function main(): Promise<number> {
  const binary = resolve(ROOT, arg("binary", "dist/portico"));
  const manifests = resolve(ROOT, arg("manifests", "k8s/examples/demo"));
  const workers = arg("workers", "1");
  const [http, https, admin] = [await freePort(), await freePort(), await freePort()];
  const size = statSync(binary).size;

  const started = performance.now();
  const proc = Bun.spawn(
    [binary, "--manifests", manifests, "--bind", "127.0.0.1", "--http-port", String(http), "--https-port", String(https),
      "--admin-port", String(admin), "--workers", workers, "--shutdown-delay", "0s", "--access-log", "off"],
    { cwd: ROOT, stdout: "ignore", stderr: "inherit", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } },
  );
  let readyMs = -1;
  try {
    for (let i = 0; i < 600 && readyMs < 0; i++) {
      if (proc.exitCode !== null) throw new Error(`portico exited with ${proc.exitCode} before ready`);
      const r = await fetch(`http://127.0.0.1:${admin}/readyz`).catch(() => null);
      if (r?.status === 200) readyMs = performance.now() - started;
      else await Bun.sleep(10);
    }
    if (readyMs < 0) throw new Error("not ready after ~6 s");
    await Bun.sleep(2000); // let start-up garbage be collected before reading RSS
    const pids = tree(proc.pid);
    const rss = pids.reduce((sum, p) => sum + rssKiB(p), 0);
    const stopAt = performance.now();
    proc.kill("SIGTERM");
    const code = await proc.exited;
    const exitMs = performance.now() - stopAt;
    console.log(
      JSON.stringify({
        binary: relative(ROOT, binary),
        sizeBytes: size,
        sizeMiB: Number((size / 1048576).toFixed(1)),
        workers: Number(workers),
        processes: pids.length,
        readyMs: Math.round(readyMs),
        idleRssMiB: Number((rss / 1024).toFixed(1)),
        exitMs: Math.round(exitMs),
        exitCode: code,
      }),
    );
    return 0;
  } catch (e) {
    console.error(`measure: ${(e as Error).message}`);
    return 1;
  } finally {
    if (proc.exitCode === null) proc.kill("SIGKILL");
  }
}

if (import.meta.main) process.exit(await main());
