// Runs wrk against 127.0.0.1 and parses its summary (`wrk --latency` output).
import { start } from "./procs.ts";

export interface WrkResult {
  readonly rps: number;
  /** Latency percentiles in milliseconds. */
  readonly p50: number;
  readonly p99: number;
  readonly requests: number;
  /** Socket errors (connect + read + write + timeout) and non-2xx/3xx answers. */
  readonly errors: number;
  readonly non2xx: number;
  /** CPU seconds wrk itself used (from its rusage). */
  readonly cpuSeconds: number;
}

export interface WrkRun {
  readonly url: string;
  readonly connections: number;
  readonly threads: number;
  readonly seconds: number;
  readonly host: string | null;
  /** More request headers, `Name: value`. */
  readonly headers?: readonly string[] | undefined;
  readonly cpus: string | null;
  readonly wrk: string;
  readonly taskset: string;
  /** Lua script (written by the benchmark itself), e.g. a pacing delay(). */
  readonly script?: string;
  /** Ends the run early: wrk stops on SIGINT and still prints its summary. */
  readonly signal?: AbortSignal;
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "1.23ms" → 1.23; "850.00us" → 0.85. */
export function parseDuration(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m|h)$/.exec(text.trim());
  if (!m) throw new Error(`wrk: cannot read duration "${text}"`);
  return Number(m[1]) * (UNIT_MS[m[2] as string] ?? Number.NaN);
}

export function parseWrk(out: string): Omit<WrkResult, "cpuSeconds"> {
  const num = (re: RegExp): number | null => {
    const m = re.exec(out);
    return m ? Number(m[1]) : null;
  };
  const pct = (p: string): number => {
    const m = new RegExp(`^\\s*${p}%\\s+(\\S+)`, "m").exec(out);
    if (!m) throw new Error(`wrk: no ${p}% latency in output:\n${out}`);
    return parseDuration(m[1] as string);
  };
  const rps = num(/^Requests\/sec:\s+([\d.]+)/m);
  if (rps === null) throw new Error(`wrk: no Requests/sec in output:\n${out}`);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const socketErrors = sock ? sock.slice(1).reduce((a, b) => a + Number(b), 0) : 0;
  const non2xx = num(/Non-2xx or 3xx responses:\s+(\d+)/) ?? 0;
  return {
    rps,
    p50: pct("50"),
    p99: pct("99"),
    requests: num(/^\s*(\d+) requests in/m) ?? 0,
    errors: socketErrors + non2xx,
    non2xx,
  };
}

/** One wrk run; the process is bounded by `-d` and killed if it overstays by 10 s. */
export async function runWrk(r: WrkRun): Promise<WrkResult> {
  const url = new URL(r.url);
  if (url.hostname !== "127.0.0.1") throw new Error(`refusing to load ${url.hostname}: benchmarks target 127.0.0.1 only`);
  const args = [
    r.wrk,
    `-t${r.threads}`,
    `-c${r.connections}`,
    `-d${r.seconds}s`,
    "--timeout",
    "5s",
    "--latency",
    ...(r.host ? ["-H", `Host: ${r.host}`] : []),
    ...(r.headers ?? []).flatMap((h) => ["-H", h]),
    ...(r.script ? ["-s", r.script] : []),
    r.url,
  ];
  const p = start(args, { cpus: r.cpus, stdout: "pipe" }, r.taskset);
  const timer = setTimeout(() => p.kill("SIGKILL"), (r.seconds + 10) * 1000);
  r.signal?.addEventListener("abort", () => p.kill("SIGINT"), { once: true });
  const out = await new Response(p.stdout as ReadableStream).text();
  const code = await p.exited;
  clearTimeout(timer);
  if (code !== 0) throw new Error(`wrk exited ${code}:\n${out}`);
  const usage = p.resourceUsage();
  return { ...parseWrk(out), cpuSeconds: usage ? Number(usage.cpuTime.total) / 1e6 : 0 };
}
