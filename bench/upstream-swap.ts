// Portico with its upstream fetch call swapped for the Bun.connect+llhttp prototype
// (bench/lib/llhttp-client.ts), against Portico as it is and the bare fetch proxy, in CPU per
// request: `bun bench/upstream-swap.ts`. Writes bench/results/upstream-swap.md. Loopback only;
// every process it starts is stopped, and the temporary copy is removed.
//
// Why: bench/upstream-client.ts prices the clients alone and in a minimal proxy; this prices
// the swap where it would be made, before any of the duties the prototype lacks (docs/design.md,
// "Performance notes", the upstream client). The swap is made in a temporary copy of the
// committed tree (`git archive HEAD`): forward.ts's fetch call becomes the prototype for a
// request without a body to a plain-HTTP backend (the bench's GETs), with no signal, no
// connect timeout and no error mapping. Nothing of it reaches src/.
//
// Layout as bench/paired.ts: two systems on CPU 0 during the same seconds, each driven by its
// own wrk (1 thread, 64 connections) on CPU 1 beside one nginx backend. The figure is each
// process tree's utime+stime (/proc) over its wrk's requests, not the rate ratio: the
// prototype has one busy thread where fetch has two, and the scheduler shares a core per
// thread (docs/design.md, "Bun facts measured here").
import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { intFlag } from "./lib/flags.ts";
import { ensureTools, versions } from "./lib/install.ts";
import { addCleanup, installCleanup, runMain, stopAll } from "./lib/procs.ts";
import { cpuTicks } from "./lib/procfs.ts";
import { median } from "./lib/report.ts";
import { HOST, startBackend, startPortico, upstreamsFor, writeManifests, type Running } from "./lib/systems.ts";
import { runWrk } from "./lib/wrk.ts";

const { values: f } = parseArgs({ options: { reps: { type: "string" }, duration: { type: "string" }, out: { type: "string" } } });
const reps = intFlag(f.reps, 5, 1, 30, "reps");
const duration = intFlag(f.duration, 5, 1, 60, "duration");
const ROOT = join(import.meta.dir, "..");
const out = f.out ?? join(import.meta.dir, "results", "upstream-swap.md");
const log = (m: string) => process.stderr.write(`[upstream-swap ${new Date().toISOString().slice(11, 19)}] ${m}\n`);

const ANCHOR_IMPORT = `import type { AttemptControl`;
const ANCHOR_CALL = `      response = await fetch(urlOf(input.backend, to, input.pathAndQuery), init);`;
const SWAP_FN = `import { LlhttpPool } from "../../../bench/lib/llhttp-client.ts";
const swapPools = new Map<string, LlhttpPool>();
async function viaLlhttp(method: string, authority: string, target: string, headers: Headers): Promise<Response> {
  let pool = swapPools.get(authority);
  if (pool === undefined) {
    const i = authority.lastIndexOf(":");
    pool = new LlhttpPool(authority.slice(0, i), Number(authority.slice(i + 1)));
    swapPools.set(authority, pool);
  }
  let head = method + " " + target + " HTTP/1.1\\r\\n";
  headers.forEach((v, k) => {
    head += k + ": " + v + "\\r\\n";
  });
  const got = await pool.request(head + "\\r\\n");
  const h = new Headers();
  for (let i = 0; i + 1 < got.fields.length; i += 2) h.append(got.fields[i] as string, got.fields[i + 1] as string);
  const body = got.body.length === 1 ? (got.body[0] as Uint8Array) : Buffer.concat(got.body);
  return new Response(body, { status: got.status, headers: h });
}
`;
const SWAP_CALL = `      response = input.body === null && input.backend.scheme === "http"
        ? await viaLlhttp(input.method, to.authority, input.pathAndQuery, input.headers as Headers)
        : await fetch(urlOf(input.backend, to, input.pathAndQuery), init);`;

/** The committed tree in a temporary folder, with the swap made in forward.ts. */
function swappedCopy(dir: string): string {
  const copy = join(dir, "swapped");
  mkdirSync(copy, { recursive: true });
  const archive = Bun.spawnSync(["git", "-C", ROOT, "archive", "HEAD"], { stdout: "pipe" });
  if (archive.exitCode !== 0) throw new Error("git archive failed");
  const untar = Bun.spawnSync(["tar", "-x", "-C", copy], { stdin: archive.stdout });
  if (untar.exitCode !== 0) throw new Error("tar failed");
  symlinkSync(join(ROOT, "node_modules"), join(copy, "node_modules"));
  const file = join(copy, "src", "proxy", "upstream", "forward.ts");
  const src = readFileSync(file, "utf8");
  // The swap needs both anchors exactly once; a forward.ts that changed shape stops the bench.
  if (src.split(ANCHOR_IMPORT).length !== 2 || src.split(ANCHOR_CALL).length !== 2) throw new Error("forward.ts no longer has the anchors this bench swaps at");
  writeFileSync(file, src.replace(ANCHOR_IMPORT, SWAP_FN + ANCHOR_IMPORT).replace(ANCHOR_CALL, SWAP_CALL));
  return copy;
}

async function main(): Promise<void> {
  if (cpus().length < 2) throw new Error("needs 2 CPUs");
  installCleanup();
  const tools = await ensureTools(log);
  const dir = mkdtempSync(join(tmpdir(), "portico-swap-"));
  addCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const started = new Date();
  const loadStart = loadavg().map((x) => x.toFixed(2)).join(" ");
  const copy = swappedCopy(dir);
  const rows = new Map<string, { a: number[]; b: number[]; ratio: number[] }>();
  const procs: Running[] = [];
  try {
    const backend = await startBackend(tools, join(dir, "backend"), "1", 0);
    procs.push({ proc: backend.proc, http: 0, https: 0, stop: backend.stop });
    const manifests = writeManifests(dir, upstreamsFor(backend.ports, "keepalive"), null);
    const mk = async (root: string, main: string, name: string) => {
      const d = join(dir, name);
      mkdirSync(d, { recursive: true });
      const r = await startPortico(tools, manifests, { root, main, dir: d, cpus: "0", workers: 1, tls: false });
      procs.push(r);
      return r;
    };
    const sys: Record<string, Running> = {
      "Portico, upstream on the prototype": await mk(copy, "src/main.ts", "swapped"),
      "Portico (fetch)": await mk(ROOT, "src/main.ts", "portico"),
      "bare fetch proxy": await mk(ROOT, "bench/lib/fetch-proxy.ts", "bare"),
    };
    const pairs: [string, string][] = [
      ["Portico, upstream on the prototype", "Portico (fetch)"],
      ["Portico (fetch)", "bare fetch proxy"],
      ["Portico, upstream on the prototype", "bare fetch proxy"],
    ];
    const wrk = (p: Running, s: number) => runWrk({ url: `http://127.0.0.1:${p.http}/`, connections: 64, threads: 1, seconds: s, host: HOST, cpus: "1", wrk: tools.wrk, taskset: tools.taskset });
    const used = (before: Map<number, number>, pid: number) => {
      let t = 0;
      for (const [p, v] of cpuTicks(pid)) t += v - (before.get(p) ?? 0);
      return t / 100;
    };
    for (let rep = 0; rep < reps; rep++) {
      for (const [an, bn] of pairs) {
        const a = sys[an] as Running;
        const b = sys[bn] as Running;
        await Promise.all([wrk(a, 1), wrk(b, 1)]);
        const ta = cpuTicks(a.proc.pid);
        const tb = cpuTicks(b.proc.pid);
        const [ra, rb] = await Promise.all([wrk(a, duration), wrk(b, duration)]);
        if (ra.errors || rb.errors || ra.non2xx || rb.non2xx) throw new Error(`errors: ${JSON.stringify({ ra, rb })}`);
        const ua = (used(ta, a.proc.pid) * 1e6) / ra.requests;
        const ub = (used(tb, b.proc.pid) * 1e6) / rb.requests;
        const k = `${an}|${bn}`;
        const row = rows.get(k) ?? { a: [], b: [], ratio: [] };
        row.a.push(ua);
        row.b.push(ub);
        row.ratio.push(ub / ua);
        rows.set(k, row);
        log(`${rep + 1}/${reps} ${an} vs ${bn}: ${ua.toFixed(1)} vs ${ub.toFixed(1)} µs CPU/request`);
      }
    }
  } finally {
    for (const p of procs.reverse()) await p.stop();
    await stopAll();
  }
  const v = versions(tools);
  const md = [
    "# Portico with the upstream fetch call swapped for the Bun.connect+llhttp prototype",
    "",
    `- date: ${started.toISOString()} (${((Date.now() - started.getTime()) / 60000).toFixed(1)} min); command: \`bun bench/upstream-swap.ts ${process.argv.slice(2).join(" ")}\``,
    `- machine: ${cpus().length} × ${cpus()[0]?.model ?? "?"}; bun ${v.bun}, ${v.nginx}, ${v.wrk}; load average at start ${loadStart}, at end ${loadavg().map((x) => x.toFixed(2)).join(" ")} (other engineers' work shares both cores)`,
    `- how the cores are shared: two systems at a time on CPU 0 (\`taskset -c 0\`, \`--workers 1\`, access log off), each driven by its own wrk (1 thread, 64 connections, ${duration} s after 1 s of warm-up) on CPU 1 beside one nginx backend (13-byte body, keep-alive)`,
    "- the swap (in a temporary copy, nothing in src/): forward.ts's fetch call becomes the prototype for body-less requests to plain-HTTP backends, with none of an upstream client's duties (no signal, connect timeout, error mapping, pool bounds)",
    "- figure: CPU per request of each process tree (/proc utime+stime over its wrk's requests, the same seconds); `reference/measured` is the reference's CPU per request over the measured system's (above 1: the measured system costs less; against the bare proxy, the fraction of its speed reached)",
    "",
    "| measured | reference | µs CPU/request (medians) | reference/measured (median) | each pair |",
    "|---|---|---:|---:|---|",
    ...[...rows].map(([k, r]) => {
      const [an, bn] = k.split("|");
      return `| ${an} | ${bn} | ${median(r.a).toFixed(1)} vs ${median(r.b).toFixed(1)} | **${median(r.ratio).toFixed(3)}×** | ${r.ratio.map((x) => x.toFixed(3)).join(", ")} |`;
    }),
    "",
  ].join("\n");
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, md);
  console.log(md);
}

await runMain(main);
