// CPU time and peak memory of a process tree, read from /proc (Linux).
import { readdirSync, readFileSync } from "node:fs";

/** Clock ticks per second for utime/stime in /proc/PID/stat (USER_HZ, 100 on Linux). */
const CLK_TCK = 100;

function readStat(pid: number): { ppid: number; ticks: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Field 2 (comm) may contain spaces and parens: parse after the last ")".
    const rest = s.slice(s.lastIndexOf(")") + 2).split(" ");
    // rest[0] is field 3 (state); ppid is field 4, utime 14, stime 15, cutime 16, cstime 17.
    const f = (n: number) => Number(rest[n - 3] ?? 0);
    return { ppid: f(4), ticks: f(14) + f(15) + f(16) + f(17) };
  } catch {
    return null;
  }
}

/** The pid and every descendant currently alive. */
export function tree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const st = readStat(pid);
    if (!st) continue;
    const list = children.get(st.ppid) ?? [];
    list.push(pid);
    children.set(st.ppid, list);
  }
  const out: number[] = [];
  const stack = [root];
  while (stack.length > 0 && out.length < 10_000) {
    const pid = stack.pop() as number;
    out.push(pid);
    for (const c of children.get(pid) ?? []) stack.push(c);
  }
  return out;
}

/**
 * CPU seconds used so far by a tree, per pid. utime+stime of each live process, plus
 * cutime+cstime (children it has already reaped), so a restarted worker is not lost.
 */
export function cpuTicks(root: number): Map<number, number> {
  const m = new Map<number, number>();
  for (const pid of tree(root)) {
    const st = readStat(pid);
    if (st) m.set(pid, st.ticks);
  }
  return m;
}

/** CPU % of one core used by the tree between two samples (processes born in between count from 0). */
export function cpuPercent(before: Map<number, number>, after: Map<number, number>, seconds: number): number {
  let ticks = 0;
  for (const [pid, t] of after) ticks += t - (before.get(pid) ?? 0);
  return (ticks / CLK_TCK / seconds) * 100;
}

function statusKiB(pid: number, field: string): number {
  try {
    const s = readFileSync(`/proc/${pid}/status`, "utf8");
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(s);
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** Peak resident set (VmHWM) summed over the tree, in MiB. */
export function peakRssMiB(root: number): number {
  let kib = 0;
  for (const pid of tree(root)) kib += statusKiB(pid, "VmHWM");
  return kib / 1024;
}

/** Current resident set (VmRSS) summed over the tree, in MiB. */
export function rssMiB(root: number): number {
  let kib = 0;
  for (const pid of tree(root)) kib += statusKiB(pid, "VmRSS");
  return kib / 1024;
}

/** Busy and total jiffies of the whole machine (all CPUs), from the first line of /proc/stat. */
export function machineTicks(): { busy: number; total: number } {
  const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0] ?? "";
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already in user). Busy counts
  // process time only (user+nice+system): irq/softirq time, which includes the loopback
  // traffic of the benchmark itself, is charged to no process and would read as foreign load.
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: (f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0), total };
}

/** CPU % (100 = one core) used by the whole machine between two machineTicks() samples. */
export function machinePercent(a: { busy: number }, b: { busy: number }, seconds: number): number {
  return ((b.busy - a.busy) / CLK_TCK / seconds) * 100;
}

/**
 * Waits (bounded) until the machine is nearly idle: between benchmark runs our own processes
 * sleep, so busy time here is other work. Returns the last measured busy % (100 = one core).
 */
export async function waitQuiet(maxMs: number, thresholdPct = 25, windowMs = 300): Promise<number> {
  const deadline = performance.now() + maxMs;
  let pct = 0;
  do {
    const a = machineTicks();
    await Bun.sleep(windowMs);
    pct = machinePercent(a, machineTicks(), windowMs / 1000);
    if (pct < thresholdPct) return pct;
  } while (performance.now() < deadline);
  return pct;
}

