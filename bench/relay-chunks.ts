// What the relay sees of a 1 MiB answer (`taskset -c 0 bun bench/relay-chunks.ts`): the chunks `fetch`'s reader
// hands it (count per answer, sizes by power of two) under the 1 MiB load of bench/http2.ts
// (h2load on CPU 1: h2 4 connections x 2 streams, HTTP/1.1 8 connections, HTTPS), relayed by a
// Bun.serve({ tls, http2: true }) front in this process (CPU 0 under that taskset) whose body is a default ReadableStream read chunk
// by chunk, as src/proxy/pipeline/body.ts meterResponseBody does; one nginx backend (the 1 MiB
// file) on CPU 1. Each chunk is one write to Bun.serve's sink. Loopback only; every process
// it starts is stopped.
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeCert } from "./lib/certs.ts";
import { ensureTools } from "./lib/install.ts";
import { addCleanup, installCleanup, runMain, start, stopAll } from "./lib/procs.ts";
import { startBackend } from "./lib/systems.ts";

const SECONDS = 4;

async function main(): Promise<void> {
  installCleanup();
  const tools = await ensureTools((m) => process.stderr.write(`[relay-chunks] ${m}\n`));
  const dir = mkdtempSync(join(tmpdir(), "portico-relay-chunks-"));
  // nginx's workers run as another user: they must read the 1 MiB file.
  chmodSync(dir, 0o755);
  addCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const backend = await startBackend(tools, join(dir, "backend"), "1", 0);
  const cert = await makeCert(tools.openssl, dir);
  const upstream = `http://127.0.0.1:${backend.ports.keepalive}/1m`;
  const sizes = new Map<number, number>();
  let chunks = 0;
  let answers = 0;
  const tls = { cert: await Bun.file(cert.certFile).text(), key: await Bun.file(cert.keyFile).text() };
  const front = Bun.serve({
    hostname: "127.0.0.1", port: 0, tls, http2: true, development: false, reusePort: false,
    async fetch() {
      const up = await fetch(upstream, { decompress: false });
      const reader = (up.body as ReadableStream<Uint8Array>).getReader();
      answers++;
      const body = new ReadableStream<Uint8Array>(
        {
          async pull(c) {
            const r = await reader.read();
            if (r.done) return c.close();
            chunks++;
            const bucket = 2 ** Math.ceil(Math.log2(Math.max(1, r.value.byteLength)));
            sizes.set(bucket, (sizes.get(bucket) ?? 0) + 1);
            c.enqueue(r.value);
          },
          cancel: (e) => reader.cancel(e),
        },
        { highWaterMark: 0 },
      );
      return new Response(body, { headers: { "content-type": "application/octet-stream" } });
    },
  });
  try {
    for (const [label, shape] of [["h2 (4 x 2)", ["-c", "4", "-m", "2"]], ["HTTP/1.1 (8)", ["--h1", "-c", "8"]]] as const) {
      sizes.clear();
      chunks = 0;
      answers = 0;
      const p = start(["h2load", "-D", String(SECONDS), ...shape, `https://127.0.0.1:${front.port}/`], { cpus: "1", stdout: "pipe" }, tools.taskset);
      const out = await new Response(p.stdout as ReadableStream<Uint8Array>).text();
      await p.exited;
      const rate = /finished in [\d.]+m?s, ([\d.]+) req\/s/.exec(out)?.[1] ?? "?";
      const hist = [...sizes].sort((a, b) => a[0] - b[0]).map(([k, v]) => `≤${k}: ${v}`).join(", ");
      console.log(`${label}: ${rate} req/s, ${answers} answers, ${(chunks / Math.max(1, answers)).toFixed(1)} chunks per answer; sizes ${hist}`);
    }
  } finally {
    front.stop(true);
    await backend.stop();
    await stopAll();
  }
}

await runMain(main);
