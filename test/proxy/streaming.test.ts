// Large bodies both ways (Content-Length and chunked, sha256 on both sides, proxy RSS growth
// measured on a proxy in its own process) and SSE latency.
// Size: 100 MB (about 2 s here); PORTICO_BODY_MB=20 for a quicker run.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { makeBackend, makeTable, spawnProxyProcess, startProxy, type TestProxy } from "./helpers.ts";
import { eventually } from "../wait.ts";

// SSE in lock step: the backend writes event n+1 only once the client has received event n,
// so a proxy that held events back (buffered the stream) never lets the stream finish.
let sseReceived = 0;

const SIZE = Number(process.env.PORTICO_BODY_MB ?? 100) * 1024 * 1024;
const CHUNK = 64 * 1024;

/** Deterministic bytes: chunk i is filled from a small xorshift seeded by i. */
function chunkAt(i: number, len: number): Uint8Array {
  const out = new Uint8Array(len);
  let x = (i + 1) * 2654435761;
  for (let k = 0; k < len; k += 4) {
    x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
    out[k] = x & 0xff; out[k + 1] = (x >>> 8) & 0xff; out[k + 2] = (x >>> 16) & 0xff; out[k + 3] = (x >>> 24) & 0xff;
  }
  return out;
}
function generated(size: number): ReadableStream<Uint8Array> {
  let off = 0;
  let i = 0;
  return new ReadableStream({
    pull(c) {
      if (off >= size) return c.close();
      const len = Math.min(CHUNK, size - off);
      c.enqueue(chunkAt(i++, len));
      off += len;
    },
  });
}
function expectedHash(size: number): string {
  const h = new Bun.CryptoHasher("sha256");
  for (let off = 0, i = 0; off < size; off += CHUNK, i++) h.update(chunkAt(i, Math.min(CHUNK, size - off)));
  return h.digest("hex");
}
async function hashStream(s: ReadableStream<Uint8Array>): Promise<{ hash: string; bytes: number }> {
  const h = new Bun.CryptoHasher("sha256");
  let bytes = 0;
  for await (const c of s) {
    h.update(c);
    bytes += c.byteLength;
  }
  return { hash: h.digest("hex"), bytes };
}

const backend = Bun.serve({
  hostname: "127.0.0.1", port: 0, idleTimeout: 0, maxRequestBodySize: Number.MAX_SAFE_INTEGER,
  async fetch(req) {
    const url = new URL(req.url);
    if (url.pathname === "/upload") {
      const { hash, bytes } = await hashStream(req.body!);
      return Response.json({ hash, bytes, cl: req.headers.get("content-length"), te: req.headers.get("transfer-encoding") });
    }
    if (url.pathname === "/download-chunked") return new Response(generated(SIZE));
    if (url.pathname === "/download-length") {
      return new Response(generated(SIZE), { headers: { "content-length": String(SIZE) } });
    }
    if (url.pathname === "/sse") {
      let n = 0;
      return new Response(
        new ReadableStream({
          async pull(c) {
            if (n > 0) await eventually(() => sseReceived >= n, 10_000, `event ${n - 1} at the client before event ${n} is written`);
            if (n === 10) return c.close();
            c.enqueue(new TextEncoder().encode(`data: ${n++}\n\n`));
          },
        }),
        { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } },
      );
    }
    return new Response("?", { status: 404 });
  },
});

let proc: ReturnType<typeof Bun.spawn> | null = null;
let proxyUrl = "";
let inproc: TestProxy;
const full = expectedHash(SIZE);
let payload: Uint8Array;

function rssKb(pid: number): number {
  const s = require("node:fs").readFileSync(`/proc/${pid}/status`, "utf8") as string;
  return Number(/VmRSS:\s+(\d+)/.exec(s)?.[1] ?? 0);
}

beforeAll(async () => {
  const spawned = await spawnProxyProcess({ PORTICO_TEST_BACKEND_PORT: String(backend.port) });
  proc = spawned.proc;
  proxyUrl = `http://127.0.0.1:${spawned.port}`;
  const parts: Uint8Array[] = [];
  for (let off = 0, i = 0; off < SIZE; off += CHUNK, i++) parts.push(chunkAt(i, Math.min(CHUNK, SIZE - off)));
  payload = new Uint8Array(await new Blob(parts).arrayBuffer());
  inproc = startProxy(makeTable([{ host: null, backend: makeBackend([backend.port as number]) }]));
});
afterAll(async () => {
  proc?.kill("SIGTERM");
  await proc?.exited;
  await inproc.stop();
  await backend.stop(true);
});

test(`${SIZE >> 20} MB up and down, Content-Length and chunked, checksums equal, RSS bounded`, async () => {
  const pid = proc!.pid;
  // Warm up once so the figure is growth from transfers, not from loading code.
  await (await fetch(proxyUrl + "/upload", { method: "POST", body: "warm" })).text();
  const before = rssKb(pid);
  let peak = before;
  const sampler = setInterval(() => { peak = Math.max(peak, rssKb(pid)); }, 20);
  const t0 = performance.now();
  try {
    const upLen = (await (await fetch(proxyUrl + "/upload", { method: "POST", body: payload })).json()) as { hash: string; bytes: number; cl: string | null; te: string | null };
    expect(upLen.bytes).toBe(SIZE);
    expect(upLen.hash).toBe(full);
    const upChunked = (await (await fetch(proxyUrl + "/upload", { method: "POST", body: generated(SIZE), duplex: "half" } as RequestInit)).json()) as typeof upLen;
    expect(upChunked.bytes).toBe(SIZE);
    expect(upChunked.hash).toBe(full);
    for (const path of ["/download-length", "/download-chunked"]) {
      const r = await fetch(proxyUrl + path);
      expect(r.status).toBe(200);
      const got = await hashStream(r.body!);
      expect(got.bytes).toBe(SIZE);
      expect(got.hash).toBe(full);
    }
    console.log(`[figure] upload framing seen by backend: CL request → cl=${upLen.cl} te=${upLen.te}; chunked request → cl=${upChunked.cl} te=${upChunked.te}`);
  } finally {
    clearInterval(sampler);
  }
  const after = rssKb(pid);
  const ms = performance.now() - t0;
  console.log(`[figure] ${SIZE >> 20} MB ×4 transfers in ${ms.toFixed(0)} ms; proxy RSS before ${before >> 10} MB, peak ${peak >> 10} MB, after ${after >> 10} MB, peak growth ${(peak - before) >> 10} MB`);
  // Streaming, not buffering: growth must stay well under one body's size (generous: 64 MB).
  expect((peak - before) * 1024).toBeLessThan(Math.max(64 * 1024 * 1024, SIZE * 0.64));
}, 60_000);

test("SSE: each event reaches the client before the backend writes the next", async () => {
  sseReceived = 0;
  const r = await fetch(inproc.url + "/sse");
  expect(r.headers.get("content-type")).toBe("text/event-stream");
  const events: number[] = [];
  let buf = "";
  for await (const c of r.body!) {
    buf += new TextDecoder().decode(c);
    let i: number;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      events.push(Number(buf.slice(6, i)));
      buf = buf.slice(i + 2);
      sseReceived++;
    }
  }
  expect(events).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
});
