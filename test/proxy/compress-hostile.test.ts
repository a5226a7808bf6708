// A pod's body that compresses enormously (zeros, about 1000:1 under gzip) through the streamed
// encoders (http/zlib-stream.ts, docs/design.md "Response compression"): the proxy, in a process
// of its own so its RSS is its own, must hold nothing that grows with the body. A raw pod writes
// a chunked body of zeros as fast as it is taken; a raw client reads and counts. Loopback only;
// the body is bounded (BODY).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import net from "node:net";
import { spawnProxyProcess } from "./helpers.ts";
import { rawBackend, type RawBackend } from "./raw.ts";

const BODY = 256 * 1024 * 1024;
const CHUNK = 64 * 1024;
const chunk = Buffer.concat([Buffer.from(`${CHUNK.toString(16)}\r\n`), Buffer.alloc(CHUNK), Buffer.from("\r\n")]);

let pod: RawBackend;
let proxy: Awaited<ReturnType<typeof spawnProxyProcess>>;

beforeAll(async () => {
  pod = await rawBackend((req) => {
    const so = req.socket;
    let sent = 0;
    so.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n");
    const pump = () => {
      while (sent < BODY && !so.destroyed) {
        sent += CHUNK;
        if (!so.write(chunk)) return void so.once("drain", pump);
      }
      so.end("0\r\n\r\n");
    };
    pump();
    return null;
  });
  proxy = await spawnProxyProcess({ PORTICO_TEST_BACKEND_PORT: String(pod.port), PORTICO_TEST_COMPRESS: "1" });
});
afterAll(async () => {
  proxy?.proc.kill();
  await proxy?.proc.exited;
  await pod?.stop();
});

function rssKb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
}

/** GET with `encoding` accepted; resolves with the answer's head and the bytes read, once the last chunk is in. */
function download(encoding: string): Promise<{ head: string; bytes: number }> {
  return new Promise((resolve, reject) => {
    const c = net.connect(proxy.port, "127.0.0.1", () => c.write(`GET /zeros HTTP/1.1\r\nHost: a.test\r\nAccept-Encoding: ${encoding}\r\n\r\n`));
    let head = "";
    let start = "";
    let bytes = 0;
    let tail = "";
    c.on("data", (d: Buffer) => {
      bytes += d.length;
      if (head === "") {
        start += d.toString("latin1");
        const at = start.indexOf("\r\n\r\n");
        if (at >= 0) head = start.slice(0, at);
      }
      tail = (tail + d.toString("latin1")).slice(-5);
      if (tail === "0\r\n\r\n") {
        c.destroy();
        resolve({ head, bytes });
      }
    });
    c.on("error", reject);
    c.on("close", () => reject(new Error(`closed before the last chunk (${bytes} bytes)`)));
  });
}

test.each(["gzip", "br"])("256 MiB of zeros through %s: relayed whole, the proxy's RSS grows by far less than the body", async (encoding) => {
  const pid = proxy.proc.pid;
  const before = rssKb(pid);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssKb(pid))), 20);
  try {
    const got = await download(encoding);
    expect(got.head.toLowerCase()).toContain(`\r\ncontent-encoding: ${encoding}`);
    // Compressed (about 100:1 with a flush per read of the pod's body, 1000:1 without).
    expect(got.bytes).toBeLessThan(BODY / 20);
  } finally {
    clearInterval(sampler);
  }
  // Held whole, the body alone would be 256 MiB; what the encoder holds is its window and one
  // chunk's output (docs/design.md "Response compression"). Generous for GC lag: 64 MiB.
  expect((peak - before) * 1024).toBeLessThan(64 * 1024 * 1024);
}, 120_000);
