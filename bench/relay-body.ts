// What relaying a large body costs in JavaScript (`bun bench/relay-body.ts`): one process runs an
// upstream Bun.serve (1 MiB answers) and a proxy Bun.serve that fetches it and answers with
//   default: the body re-wrapped in a default ReadableStream, read chunk by chunk (what
//            src/proxy/upstream/respond.ts does: its meter needs each chunk and the end),
//   direct:  the same loop in a `type: "direct"` stream (Bun writes each chunk to its sink),
//   native:  fetch's own Response, which Bun pipes without JavaScript (the bare proxy),
// and, with --modes, ways of reading that were tried and measured no cheaper than default:
//   readmany:   a default stream fed by reader.readMany() (every chunk queued, one await),
//   hwm:        the default stream with a 1 MiB highWaterMark (reads ahead of Bun's pulls),
//   directmany: a direct stream fed by readMany(),
//   whole:      the body read whole (arrayBuffer()) and answered as one buffer.
// A client in a child process (8 concurrent keep-alive requests) does not count; the figure is
// this process's CPU per request, the upstream's share the same in every mode. Modes run
// interleaved, `--rounds` times, each in its own process on CPU 0 (taskset). Loopback only.
import { parseArgs } from "node:util";

const { values: f } = parseArgs({
  options: { mode: { type: "string" }, requests: { type: "string", default: "1500" }, rounds: { type: "string", default: "2" }, modes: { type: "string", default: "default,direct,native" } },
});
const MODES = ["default", "direct", "native", "readmany", "hwm", "directmany", "whole"];
const N = Number(f.requests);

if (f.mode === undefined) {
  for (let r = 1; r <= Number(f.rounds); r++) {
    for (const mode of String(f.modes).split(",")) {
      if (!MODES.includes(mode)) throw new Error(`--modes: ${MODES.join(", ")}`);
      const p = Bun.spawn(["taskset", "-c", "0", process.execPath, import.meta.path, "--mode", mode, "--requests", String(N)], { stdout: "pipe", stderr: "inherit" });
      const out = (await new Response(p.stdout).text()).trim();
      await p.exited;
      console.log(`round ${r}: ${out} (load ${(await Bun.file("/proc/loadavg").text()).split(" ")[0]})`);
    }
  }
  process.exit(0);
}

const big = new Uint8Array(1 << 20).fill(7);
const up = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(big) });
const upstream = `http://127.0.0.1:${up.port}/`;

/** A default stream that reads the upstream body chunk by chunk on each pull, queued by `strategy`. */
function viaRead(r: Response, strategy: QueuingStrategy<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = (r.body as ReadableStream<Uint8Array>).getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(c) {
        const x = await reader.read();
        if (x.done) c.close();
        else c.enqueue(x.value);
      },
      cancel: (e) => reader.cancel(e),
    },
    strategy,
  );
}

const viaDefault = (r: Response) => viaRead(r, { highWaterMark: 0 });

function viaDirect(r: Response): ReadableStream<Uint8Array> {
  const reader = (r.body as ReadableStream<Uint8Array>).getReader();
  return new ReadableStream<Uint8Array>({
    type: "direct",
    async pull(c) {
      for (;;) {
        const x = await reader.read();
        if (x.done) return c.close();
        const w = c.write(x.value);
        if (typeof w !== "number") await w;
      }
    },
    cancel: (e) => void reader.cancel(e),
  });
}

/** Bun's reader extension: every chunk already queued, in one read. */
interface ManyReader {
  readMany(): Promise<{ done: boolean; value: Uint8Array<ArrayBuffer>[] }>;
  cancel(reason?: unknown): Promise<void>;
}

function viaReadMany(r: Response): ReadableStream<Uint8Array> {
  const reader = (r.body as ReadableStream<Uint8Array>).getReader() as unknown as ManyReader;
  return new ReadableStream<Uint8Array>(
    {
      async pull(c) {
        const x = await reader.readMany();
        for (const v of x.value ?? []) c.enqueue(v);
        if (x.done) c.close();
      },
      cancel: (e) => reader.cancel(e),
    },
    { highWaterMark: 0 },
  );
}

const viaHighWaterMark = (r: Response) => viaRead(r, { highWaterMark: 1 << 20, size: (v: Uint8Array) => v.byteLength } as QueuingStrategy<Uint8Array>);

function viaDirectMany(r: Response): ReadableStream<Uint8Array> {
  const reader = (r.body as ReadableStream<Uint8Array>).getReader() as unknown as ManyReader;
  return new ReadableStream<Uint8Array>({
    type: "direct",
    async pull(c) {
      for (;;) {
        const x = await reader.readMany();
        for (const v of x.value ?? []) {
          const w = c.write(v);
          if (typeof w !== "number") await w;
        }
        if (x.done) return c.close();
      }
    },
    cancel: (e) => void reader.cancel(e),
  });
}

const mode = String(f.mode);
const relay: Record<string, (r: Response) => ReadableStream<Uint8Array>> = {
  default: viaDefault, direct: viaDirect, readmany: viaReadMany, hwm: viaHighWaterMark, directmany: viaDirectMany,
};
const proxy = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch() {
    const r = await fetch(upstream);
    if (mode === "native") return r;
    if (mode === "whole") return new Response(await r.arrayBuffer(), { headers: { "x-relay": mode } });
    return new Response((relay[mode] as (r: Response) => ReadableStream<Uint8Array>)(r), { headers: { "x-relay": mode } });
  },
});
const client = Bun.spawn([process.execPath, "-e", `let i = 0; const go = async () => { while (i++ < ${N}) await (await fetch("http://127.0.0.1:${proxy.port}/")).arrayBuffer(); }; await Promise.all(Array.from({ length: 8 }, go));`]);
const c0 = process.cpuUsage();
await client.exited;
const c = process.cpuUsage(c0);
console.log(`${mode}: ${((c.user + c.system) / N).toFixed(0)} µs of CPU per 1 MiB answer`);
proxy.stop(true);
up.stop(true);
