// What an upstream HTTP/1.1 request costs in CPU with each client Bun can run, and what each of
// Portico's fixed per-request items costs beyond the bare call: `bun bench/upstream-client.ts`.
// Writes bench/results/upstream-client.md. Loopback only; every process it starts is stopped.
//
// Why CPU per request and not req/s: the machine is shared, so a rate moves with whatever else
// runs; the CPU a process used (getrusage: every thread, Bun's HTTP thread included) divided by
// the requests it made moves far less. Each option still runs several times, interleaved with
// the others in the same run, and the report gives the median and the range.
//
// Layout: the measured process alone on CPU 0 (`taskset -c 0`), the backend (a Bun.serve
// answering 13 bytes, keep-alive) and, for the front part, wrk on CPU 1. Other engineers' work
// shares both cores; the load average is reported at start and end.
//
// Part 1, clients (`--role client`): N keep-alive GETs with C in flight to the same backend,
// the whole 13-byte answer read. Part 2, parse only: llhttp (wasm) parsing a captured answer.
// Part 3, front (`--role front`): a minimal fetch proxy under wrk with one of Portico's fixed
// items added (the signal, the forwarded fields, requestIP, a new Response), CPU per request
// of the proxy process.
import { cpus, loadavg } from "node:os";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { intFlag } from "./lib/flags.ts";
import { ensureTools } from "./lib/install.ts";
import { installCleanup, runMain, start, stop, stopAll } from "./lib/procs.ts";
import { cpuTicks } from "./lib/procfs.ts";
import { median } from "./lib/report.ts";
import { runWrk } from "./lib/wrk.ts";

const { values: f } = parseArgs({
  strict: true,
  options: {
    role: { type: "string" },
    client: { type: "string" },
    variant: { type: "string" },
    port: { type: "string" },
    upstream: { type: "string" },
    n: { type: "string" },
    conc: { type: "string" },
    reps: { type: "string" },
    seconds: { type: "string" },
    only: { type: "string" },
    out: { type: "string" },
    help: { type: "boolean", default: false },
  },
});

const HELP = `bun bench/upstream-client.ts [--reps N] [--n REQUESTS] [--conc C] [--seconds S] [--only clients|parse|front] [--out FILE]
  --reps N      runs of each option, interleaved (default 5)
  --n N         requests per client run (default 40000)
  --conc C      requests in flight per client (default 16)
  --seconds S   wrk seconds per front run (default 4)`;

const BODY = "hello world!\n";
const HOST = "127.0.0.1";
const MEASURED_CPU = "0";
const OTHER_CPU = "1";
const log = (msg: string) => process.stderr.write(`[upstream-client ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** A request's fields as a proxy receives them from wrk plus a browser's usual few. */
function incoming(): Headers {
  return new Headers({ host: "bench.local", "user-agent": "wrk", accept: "*/*" });
}

const SIX: readonly [string, string][] = [
  ["x-request-id", "0123456789abcdef0123456789abcdef"],
  ["x-real-ip", "127.0.0.1"],
  ["x-forwarded-for", "127.0.0.1"],
  ["x-forwarded-host", "bench.local"],
  ["x-forwarded-port", "80"],
  ["x-forwarded-proto", "http"],
];

// ---- part 1: clients ----------------------------------------------------------------------

type One = () => Promise<unknown>;

async function makeClient(name: string, port: number, conc: number): Promise<{ one: One; close(): void }> {
  const url = `http://${HOST}:${port}/`;
  const base = { decompress: false, redirect: "manual" } as RequestInit;
  const none = { one: (async () => {}) as One, close() {} };
  switch (name) {
    case "fetch":
      return { ...none, one: async () => (await fetch(url, base)).arrayBuffer() };
    case "fetch+AbortController":
      return {
        ...none,
        one: async () => {
          const ac = new AbortController();
          return (await fetch(url, { ...base, signal: ac.signal })).arrayBuffer();
        },
      };
    case "fetch+AbortSignal.timeout":
      return { ...none, one: async () => (await fetch(url, { ...base, signal: AbortSignal.timeout(60_000) })).arrayBuffer() };
    case "fetch+AbortSignal.any(ctl,timeout)":
      return {
        ...none,
        one: async () => {
          const ac = new AbortController();
          return (await fetch(url, { ...base, signal: AbortSignal.any([ac.signal, AbortSignal.timeout(60_000)]) })).arrayBuffer();
        },
      };
    case "fetch+copied Headers (no fields)": {
      const h0 = incoming();
      return { ...none, one: async () => (await fetch(url, { ...base, headers: new Headers(h0) })).arrayBuffer() };
    }
    case "fetch+copied Headers+6 set": {
      const h0 = incoming();
      return {
        ...none,
        one: async () => {
          const h = new Headers(h0);
          for (const [k, v] of SIX) h.set(k, v);
          return (await fetch(url, { ...base, headers: h })).arrayBuffer();
        },
      };
    }
    case "fetch+plain object headers (3+6)": {
      return {
        ...none,
        one: async () => {
          const o: Record<string, string> = { host: "bench.local", "user-agent": "wrk", accept: "*/*" };
          for (const [k, v] of SIX) o[k] = v;
          return (await fetch(url, { ...base, headers: o })).arrayBuffer();
        },
      };
    }
    case "fetch+array headers (3+6)": {
      return {
        ...none,
        one: async () => {
          const a: [string, string][] = [["host", "bench.local"], ["user-agent", "wrk"], ["accept", "*/*"]];
          for (const kv of SIX) a.push([kv[0], kv[1]]);
          return (await fetch(url, { ...base, headers: a })).arrayBuffer();
        },
      };
    }
    case "fetch+new Response(bytes)": {
      return {
        ...none,
        one: async () => {
          const r = await fetch(url, base);
          const b = await r.bytes();
          return new Response(b, { status: r.status, headers: r.headers });
        },
      };
    }
    case "node:http Agent keepAlive": {
      const http = await import("node:http");
      const agent = new http.Agent({ keepAlive: true, maxSockets: conc });
      return {
        close: () => agent.destroy(),
        one: () =>
          new Promise((resolve, reject) => {
            const q = http.request({ host: HOST, port, path: "/", agent }, (r) => {
              const parts: Buffer[] = [];
              r.on("data", (c: Buffer) => parts.push(c));
              r.on("end", () => resolve(Buffer.concat(parts)));
              r.on("error", reject);
            });
            q.on("error", reject);
            q.end();
          }),
      };
    }
    case "undici Pool (llhttp wasm)": {
      // By path: the bare specifier "undici" is Bun's own built-in stand-in, not the package.
      const { Pool } = (await import(join(import.meta.dir, "..", "node_modules", "undici", "index.js"))) as typeof import("undici");
      const pool = new Pool(`http://${HOST}:${port}`, { connections: conc, pipelining: 1 });
      return {
        close: () => void pool.close(),
        one: async () => {
          const { body } = await pool.request({ path: "/", method: "GET" });
          return body.arrayBuffer();
        },
      };
    }
    case "Bun.connect+llhttp (raw)":
    case "Bun.connect+llhttp→Response": {
      const { LlhttpPool } = await import("./lib/llhttp-client.ts");
      const pool = new LlhttpPool(HOST, port);
      const asResponse = name.endsWith("Response");
      return {
        close: () => pool.close(),
        one: async () => {
          // The request head built per request from the fields, as a proxy would.
          let head = `GET / HTTP/1.1\r\nhost: bench.local\r\nuser-agent: wrk\r\naccept: */*\r\n`;
          for (const [k, v] of SIX) head += `${k}: ${v}\r\n`;
          const got = await pool.request(head + "\r\n");
          if (!asResponse) return got;
          const h = new Headers();
          for (let i = 0; i + 1 < got.fields.length; i += 2) h.append(got.fields[i] as string, got.fields[i + 1] as string);
          const body = got.body.length === 1 ? (got.body[0] as Uint8Array) : Buffer.concat(got.body);
          // Read back as the fetch rows read theirs.
          return new Response(body, { status: got.status, headers: h }).arrayBuffer();
        },
      };
    }
    default:
      throw new Error(`unknown client ${name}`);
  }
}

const CLIENTS = [
  "fetch",
  "fetch+AbortController",
  "fetch+AbortSignal.timeout",
  "fetch+AbortSignal.any(ctl,timeout)",
  "fetch+copied Headers (no fields)",
  "fetch+copied Headers+6 set",
  "fetch+plain object headers (3+6)",
  "fetch+array headers (3+6)",
  "fetch+new Response(bytes)",
  "node:http Agent keepAlive",
  "undici Pool (llhttp wasm)",
  "Bun.connect+llhttp (raw)",
  "Bun.connect+llhttp→Response",
];

function cpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

async function runClient(name: string, port: number, n: number, conc: number): Promise<void> {
  const c = await makeClient(name, port, conc);
  const drive = async (count: number) => {
    let issued = 0;
    const worker = async () => {
      while (issued < count) {
        issued++;
        await c.one();
      }
    };
    await Promise.all(Array.from({ length: conc }, worker));
  };
  await drive(Math.min(5000, n)); // warm-up: connections open, JIT settled
  Bun.gc(true);
  const c0 = cpuUs();
  const t0 = performance.now();
  await drive(n);
  const cpu = cpuUs() - c0;
  const wall = performance.now() - t0;
  c.close();
  process.stdout.write(JSON.stringify({ name, usPerReq: cpu / n, rps: (n / wall) * 1000 }) + "\n");
  process.exit(0);
}

// ---- part 2: parse only -----------------------------------------------------------------

async function runParse(port: number, n: number): Promise<{ usPerParse: number; bytes: number }> {
  const { Parser, newSink } = await import("./lib/llhttp-client.ts");
  // One keep-alive answer of the backend, captured off the wire (llhttp says where it ends).
  const raw = await new Promise<Uint8Array>((resolve, reject) => {
    const parts: Uint8Array[] = [];
    const probe = new Parser();
    const sink = newSink();
    void Bun.connect({
      hostname: HOST,
      port,
      socket: {
        open: (s) => void s.write("GET / HTTP/1.1\r\nhost: bench.local\r\n\r\n"),
        data: (s, d) => {
          parts.push(new Uint8Array(d));
          probe.execute(d, sink);
          if (sink.done) {
            s.end();
            resolve(Buffer.concat(parts));
          }
        },
        error: (_s, e) => reject(e),
      },
    });
  });
  // One parser for every round, as on a kept-alive connection.
  const q = new Parser();
  const onceKa = () => {
    const s = newSink();
    q.execute(raw, s);
    if (!s.done || s.status !== 200) throw new Error("parse failed");
  };
  for (let i = 0; i < 20000; i++) onceKa();
  Bun.gc(true);
  const c0 = cpuUs();
  for (let i = 0; i < n; i++) onceKa();
  return { usPerParse: (cpuUs() - c0) / n, bytes: raw.length };
}

// ---- part 3: front costs ----------------------------------------------------------------

const VARIANTS = [
  "bare: fetch(req.headers) → new Response(res.body, res)",
  "+ server.requestIP",
  "+ new AbortController per request",
  "+ req.signal passed to fetch",
  "+ AbortSignal.any([req.signal, AbortSignal.timeout])",
  "+ copied Headers + 6 set",
  "+ new Response(bytes, {status, headers})",
  "Bun.connect+llhttp client → new Response(bytes, {status, headers})",
] as const;

/** Which front is compared with which: [measured, reference]. */
const PAIRS: readonly [number, number][] = [[0, 0], [1, 0], [2, 0], [3, 0], [3, 2], [4, 0], [5, 0], [6, 0], [7, 6], [7, 0]];

async function runFront(variant: number, port: number, upstream: number): Promise<void> {
  const origin = `http://${HOST}:${upstream}`;
  const base = { decompress: false, redirect: "manual" } as const;
  if (variant === 7) {
    const { LlhttpPool } = await import("./lib/llhttp-client.ts");
    const pool = new LlhttpPool(HOST, upstream);
    Bun.serve({
      hostname: HOST,
      port,
      async fetch(req) {
        const path = req.url.slice(req.url.indexOf("/", req.url.indexOf("//") + 2));
        // The request head written once: the client's fields as received (a prototype: no
        // hop-by-hop filtering, no request body).
        let head = `${req.method} ${path} HTTP/1.1\r\n`;
        req.headers.forEach((v, k) => {
          head += `${k}: ${v}\r\n`;
        });
        const got = await pool.request(head + "\r\n");
        const h = new Headers();
        for (let i = 0; i + 1 < got.fields.length; i += 2) h.append(got.fields[i] as string, got.fields[i + 1] as string);
        const body = got.body.length === 1 ? (got.body[0] as Uint8Array) : Buffer.concat(got.body);
        return new Response(body, { status: got.status, headers: h });
      },
    });
    return;
  }
  Bun.serve({
    hostname: HOST,
    port,
    async fetch(req, server) {
      const path = req.url.slice(req.url.indexOf("/", req.url.indexOf("//") + 2));
      const init: RequestInit & { decompress: boolean } = { ...base, headers: req.headers };
      switch (variant) {
        case 1:
          init.headers = req.headers;
          if ((server.requestIP(req)?.address ?? "") === "") throw new Error("no peer");
          break;
        case 2:
          init.signal = new AbortController().signal;
          break;
        case 3:
          init.signal = req.signal;
          break;
        case 4:
          init.signal = AbortSignal.any([req.signal, AbortSignal.timeout(60_000)]);
          break;
        case 5: {
          const h = new Headers(req.headers);
          for (const [k, v] of SIX) h.set(k, v);
          init.headers = h;
          break;
        }
      }
      const res = await fetch(origin + path, init);
      if (variant === 6) return new Response(await res.bytes(), { status: res.status, headers: res.headers });
      return new Response(res.body, res);
    },
  });
}

// ---- orchestration ----------------------------------------------------------------------

function backend(port: number): void {
  Bun.serve({ hostname: HOST, port, fetch: () => new Response(BODY) });
}

async function freePort(): Promise<number> {
  const s = Bun.listen({ hostname: HOST, port: 0, socket: { data() {} } });
  const p = s.port;
  s.stop(true);
  return p;
}

async function waitListening(port: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      const r = await fetch(`http://${HOST}:${port}/`);
      await r.arrayBuffer();
      return;
    } catch {
      await Bun.sleep(25);
    }
  }
  throw new Error(`nothing listening on ${port}`);
}

interface Row {
  readonly name: string;
  readonly values: number[];
  readonly rps: number[];
}

const fmtRow = (r: Row, ref: number | null) => {
  const m = median(r.values);
  const lo = Math.min(...r.values);
  const hi = Math.max(...r.values);
  return `| ${r.name} | ${m.toFixed(1)} | ${lo.toFixed(1)}-${hi.toFixed(1)} | ${ref === null ? "" : `${(m / ref).toFixed(2)}×`} | ${median(r.rps).toFixed(0)} |`;
};

async function main(): Promise<void> {
  if (f.help) {
    console.log(HELP);
    return;
  }
  if (cpus().length < 2) throw new Error("needs 2 CPUs");
  installCleanup();
  const reps = intFlag(f.reps, 5, 1, 30, "reps");
  const n = intFlag(f.n, 40000, 1000, 1_000_000, "n");
  const conc = intFlag(f.conc, 16, 1, 256, "conc");
  const seconds = intFlag(f.seconds, 4, 1, 30, "seconds");
  const only = f.only ?? "clients,parse,front";
  const out = f.out ?? join(import.meta.dir, "results", "upstream-client.md");
  const self = join(import.meta.dir, "upstream-client.ts");
  const loadStart = loadavg().map((x) => x.toFixed(2)).join(" ");
  const started = new Date();
  const bport = await freePort();
  const be = start([process.execPath, self, "--role", "backend", "--port", String(bport)], { cpus: OTHER_CPU });
  const lines: string[] = [];
  try {
    await waitListening(bport);
    if (only.includes("clients")) {
      const rows = new Map<string, Row>(CLIENTS.map((c) => [c, { name: c, values: [], rps: [] }]));
      for (let rep = 0; rep < reps; rep++) {
        // Each round runs every client once, in an order rotated per round.
        const order = CLIENTS.map((_, i) => CLIENTS[(i + rep) % CLIENTS.length] as string);
        for (const c of order) {
          const p = start([process.execPath, self, "--role", "client", "--client", c, "--port", String(bport), "--n", String(n), "--conc", String(conc)], { cpus: MEASURED_CPU, stdout: "pipe" });
          const text = await new Response(p.stdout as ReadableStream).text();
          const code = await p.exited;
          if (code !== 0) throw new Error(`client ${c} exited ${code}: ${text}`);
          const r = JSON.parse(text.trim().split("\n").pop() as string) as { usPerReq: number; rps: number };
          const row = rows.get(c) as Row;
          row.values.push(r.usPerReq);
          row.rps.push(r.rps);
          log(`round ${rep + 1}/${reps} ${c}: ${r.usPerReq.toFixed(1)} µs CPU/request, ${r.rps.toFixed(0)} req/s`);
        }
      }
      const ref = median((rows.get("fetch") as Row).values);
      lines.push(
        "## Clients: CPU per keep-alive upstream request",
        "",
        `${n} GETs per run with ${conc} in flight, 13-byte answer read whole; CPU = user+system of the client process (all its threads) over the measured requests, after ${Math.min(5000, n)} warm-up requests; ${reps} runs each, interleaved.`,
        "",
        "| client | µs CPU/request (median) | range | vs fetch | req/s (median, one core shared) |",
        "|---|---:|---|---:|---:|",
        ...[...rows.values()].map((r) => fmtRow(r, ref)),
        "",
      );
    }
    if (only.includes("parse")) {
      const vals: number[] = [];
      let bytes = 0;
      for (let rep = 0; rep < reps; rep++) {
        const p = start([process.execPath, self, "--role", "parse", "--port", String(bport), "--n", String(n * 5)], { cpus: MEASURED_CPU, stdout: "pipe" });
        const text = await new Response(p.stdout as ReadableStream).text();
        if ((await p.exited) !== 0) throw new Error(`parse exited: ${text}`);
        const r = JSON.parse(text.trim()) as { usPerParse: number; bytes: number };
        vals.push(r.usPerParse);
        bytes = r.bytes;
        log(`parse ${rep + 1}/${reps}: ${r.usPerParse.toFixed(2)} µs`);
      }
      lines.push(
        "## Parse only: llhttp (wasm, undici's build) on one captured answer",
        "",
        `The backend's ${bytes}-byte keep-alive answer (status line, ${"Content-Type, Date, Content-Length"}, 13-byte body) copied into wasm memory and parsed, field names and values decoded to strings and the body copied out, ${n * 5} times per run.`,
        "",
        `| what | µs CPU/answer (median) | range |`,
        `|---|---:|---|`,
        `| llhttp_execute + callbacks | ${median(vals).toFixed(2)} | ${Math.min(...vals).toFixed(2)}-${Math.max(...vals).toFixed(2)} |`,
        "",
      );
    }
    if (only.includes("front")) {
      // Two fronts at a time, both on CPU 0 during the same seconds, each driven by its own wrk
      // on CPU 1 (as bench/paired.ts): the scheduler gives each about half of CPU 0, so the
      // inverse ratio of their rates is the ratio of their CPU per request, whatever else the
      // machine runs. A/A first (the bare front against itself) states the noise floor.
      const tools = await ensureTools(log);
      const ratios = PAIRS.map(() => [] as number[]);
      const cpuA = PAIRS.map(() => [] as number[]);
      const cpuB = PAIRS.map(() => [] as number[]);
      const launch = async (v: number) => {
        const port = await freePort();
        const proc = start([process.execPath, self, "--role", "front", "--variant", String(v), "--port", String(port), "--upstream", String(bport)], { cpus: MEASURED_CPU });
        await waitListening(port);
        return { proc, port };
      };
      const wrk = (port: number, s: number) => runWrk({ url: `http://${HOST}:${port}/`, connections: 64, threads: 1, seconds: s, host: "bench.local", cpus: OTHER_CPU, wrk: tools.wrk, taskset: tools.taskset });
      for (let rep = 0; rep < reps; rep++) {
        for (let k = 0; k < PAIRS.length; k++) {
          const [va, vb] = PAIRS[k] as [number, number];
          const a = await launch(va);
          const b = await launch(vb);
          try {
            await Promise.all([wrk(a.port, 1), wrk(b.port, 1)]);
            const ta = cpuTicks(a.proc.pid);
            const tb = cpuTicks(b.proc.pid);
            // Which wrk starts first alternates, so neither always gets the head start.
            const [ra, rb] = rep % 2 === 0
              ? await Promise.all([wrk(a.port, seconds), wrk(b.port, seconds)])
              : (await Promise.all([wrk(b.port, seconds), wrk(a.port, seconds)])).reverse();
            if (ra === undefined || rb === undefined || ra.errors > 0 || rb.errors > 0) throw new Error(`errors in pair ${k}`);
            const used = (before: Map<number, number>, pid: number) => {
              let t = 0;
              for (const [p, v] of cpuTicks(pid)) t += v - (before.get(p) ?? 0);
              return t / 100;
            };
            const ua = (used(ta, a.proc.pid) * 1e6) / ra.requests;
            const ub = (used(tb, b.proc.pid) * 1e6) / rb.requests;
            (ratios[k] as number[]).push(rb.rps / ra.rps);
            (cpuA[k] as number[]).push(ua);
            (cpuB[k] as number[]).push(ub);
            log(`front round ${rep + 1}/${reps} [${VARIANTS[va]}] vs [${VARIANTS[vb]}]: ${ra.rps.toFixed(0)} vs ${rb.rps.toFixed(0)} req/s, CPU/request ${(rb.rps / ra.rps).toFixed(3)}×`);
          } finally {
            await stop(a.proc);
            await stop(b.proc);
          }
        }
      }
      const fx = (xs: readonly number[]) => xs.map((x) => x.toFixed(3)).join(", ");
      lines.push(
        "## Front: a minimal fetch proxy with one of Portico's fixed items, side by side with its reference",
        "",
        `Both fronts on CPU 0 during the same ${seconds} s (after 1 s of warm-up), each driven by its own wrk (1 thread, 64 connections) on CPU 1 beside the backend; the scheduler gives each about half of CPU 0, so reference req/s over measured req/s is the measured front's CPU per request relative to the reference's. µs columns: each process's utime+stime (/proc, 10 ms ticks) over its wrk's requests in the same seconds. ${reps} pairs each, interleaved with the other pairs. The rate ratio assumes both fronts run the same threads: the scheduler shares a core between threads, not processes, and a fetch front has two busy ones (JavaScript and Bun's HTTP client thread) where the Bun.connect front has one, so in its rows the rate ratio favours fetch and the µs column is the figure to read.`,
        "",
        "| measured | reference | CPU/request vs reference (median) | pairs | µs/request measured vs reference (medians) |",
        "|---|---|---:|---|---:|",
        ...PAIRS.map(([va, vb], k) => `| ${VARIANTS[va]} | ${k === 0 ? "itself (A/A)" : VARIANTS[vb]} | **${median(ratios[k] as number[]).toFixed(3)}×** | ${fx(ratios[k] as number[])} | ${median(cpuA[k] as number[]).toFixed(1)} vs ${median(cpuB[k] as number[]).toFixed(1)} |`),
        "",
      );
    }
  } finally {
    await stop(be);
    await stopAll();
  }
  const head = [
    "# Upstream HTTP/1.1 client: CPU per request",
    "",
    `- date: ${started.toISOString()} (${((Date.now() - started.getTime()) / 60000).toFixed(1)} min); command: \`bun bench/upstream-client.ts ${process.argv.slice(2).join(" ")}\``,
    `- machine: ${cpus().length} × ${cpus()[0]?.model ?? "?"}; bun ${Bun.version}; load average at start ${loadStart}, at end ${loadavg().map((x) => x.toFixed(2)).join(" ")} (other engineers' work shares both cores)`,
    `- how the cores are shared: the measured process alone on CPU 0 (\`taskset -c 0\`); the backend (Bun.serve, 13-byte answer, keep-alive) and wrk on CPU 1`,
    "",
  ];
  const md = [...head, ...lines].join("\n");
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, md);
  console.log(md);
}

switch (f.role) {
  case undefined:
    await runMain(main);
    break;
  case "backend":
    backend(Number(f.port));
    break;
  case "client":
    await runClient(String(f.client), Number(f.port), Number(f.n), Number(f.conc));
    break;
  case "parse":
    process.stdout.write(JSON.stringify(await runParse(Number(f.port), Number(f.n))) + "\n");
    process.exit(0);
    break;
  case "front":
    await runFront(Number(f.variant), Number(f.port), Number(f.upstream));
    break;
  default:
    throw new Error(`unknown role ${f.role}`);
}
