// Every process the benchmark starts goes through here, so all of them are stopped on normal
// exit, on error and on SIGINT/SIGTERM. Processes are stopped by their own pid, never by name.
import type { Subprocess } from "bun";

const live = new Set<Subprocess>();

export interface StartOptions {
  /** CPU list for `taskset -c` (e.g. "0"), or null to leave the scheduler alone. */
  readonly cpus: string | null;
  readonly cwd?: string;
  readonly env?: Record<string, string>;
  readonly stdout?: "pipe" | "ignore" | "inherit";
  /** File that receives stderr (never a pipe nobody reads: a full pipe would stall the process). */
  readonly log?: string;
  /** File that receives stdout (overrides `stdout`). */
  readonly out?: string;
}

export function start(cmd: readonly string[], opts: StartOptions, tasksetPath = "taskset"): Subprocess {
  const argv = opts.cpus === null ? [...cmd] : [tasksetPath, "-c", opts.cpus, ...cmd];
  const p = Bun.spawn(argv, {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    stdin: "ignore",
    stdout: opts.out ? Bun.file(opts.out) : (opts.stdout ?? "ignore"),
    stderr: opts.log ? Bun.file(opts.log) : "ignore",
  });
  live.add(p);
  void p.exited.then(() => live.delete(p));
  return p;
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
export async function stop(p: Subprocess, graceMs = 2000): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) {
    live.delete(p);
    return;
  }
  p.kill("SIGTERM");
  const timer = setTimeout(() => p.kill("SIGKILL"), graceMs);
  await p.exited;
  clearTimeout(timer);
  live.delete(p);
}

/** Entry point of a benchmark: on failure, print it, stop what was started, exit 1. */
export async function runMain(main: () => Promise<void>): Promise<void> {
  try {
    await main();
  } catch (e) {
    console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
    await stopAll();
    process.exit(1);
  }
}

export async function stopAll(): Promise<void> {
  await Promise.all([...live].map((p) => stop(p)));
}

/** Synchronous last resort for process exit paths where awaiting is impossible. */
function killAllNow(): void {
  for (const p of live) {
    try {
      p.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
  live.clear();
}

const cleanups: (() => void)[] = [];

/** Synchronous cleanup (e.g. removing a temp dir) to run on exit and on signals. */
export function addCleanup(fn: () => void): void {
  cleanups.push(fn);
}

function runCleanups(): void {
  for (const fn of cleanups.splice(0)) {
    try {
      fn();
    } catch {
      // best effort on the way out
    }
  }
}

let installed = false;
/** Stop every started process on SIGINT/SIGTERM, uncaught errors and exit. */
export function installCleanup(): void {
  if (installed) return;
  installed = true;
  const onSignal = (sig: string) => {
    process.stderr.write(`\n${sig}: stopping benchmark processes\n`);
    void stopAll().finally(() => {
      runCleanups();
      process.exit(130);
    });
  };
  process.on("SIGINT", () => onSignal("SIGINT"));
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  process.on("exit", () => {
    killAllNow();
    runCleanups();
  });
  process.on("uncaughtException", (e) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    killAllNow();
    runCleanups();
    process.exit(1);
  });
}

/** The last lines a process wrote to its log file (for error messages). */
export async function logTail(file: string | undefined): Promise<string> {
  if (!file) return "";
  try {
    return (await Bun.file(file).text()).trim().slice(-2000);
  } catch {
    return "";
  }
}
