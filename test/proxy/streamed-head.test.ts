// The head of a streamed answer goes out with its first body bytes (src/proxy/pipeline/body.ts
// meterResponseBody queues a first chunk that came with the upstream's head). Bun.serve writes
// the head of a streamed body uncorked when the first chunk comes only at the first pull: one
// send() per fragment, over TLS one record per fragment (docs/bun-upstream-reports.md, "The
// head of a streamed answer"). A TCP relay between a TLS client and the HTTPS port (HTTP/1.1 by
// ALPN) reads the record headers the server sends (RFC 8446 §5.1: type, version, 16-bit length),
// so the record boundaries are observed without decrypting anything.
import { afterAll, beforeAll, expect, test } from "bun:test";
import net from "node:net";
import tls from "node:tls";
import { makeBackend, makeTable, startProxyOver, type TransportProxy } from "./helpers.ts";
import { rawBackend, type RawBackend } from "./raw.ts";
import { eventually } from "../wait.ts";

// Above SMALL_BODY (respond.ts), so the answer is streamed, and written in one piece with the
// head by the backend, so fetch has the first chunk with the head.
const SIZE = 100 * 1024;
const BODY = "b".repeat(SIZE);

let backend: RawBackend;
let proxy: TransportProxy;
beforeAll(async () => {
  backend = await rawBackend(() => `HTTP/1.1 200 OK\r\nContent-Length: ${SIZE}\r\nX-One: 1\r\nX-Two: 2\r\nX-Three: 3\r\n\r\n${BODY}`);
  // The HTTPS port (serving/https.ts, Bun.serve with http2: true): an http/1.1 ALPN client gets HTTP/1.1.
  proxy = await startProxyOver("h2", makeTable([{ host: null, backend: makeBackend([backend.port]) }]), {}, {}, "https");
});
afterAll(async () => {
  await proxy.stop();
  await backend.stop();
});

interface Record {
  readonly type: number;
  readonly length: number;
}

/** One HTTP/1.1 GET over TLS through a recording TCP relay: the answer, and the server's records sent after the request went out. */
async function getThroughRelay(): Promise<{ answer: string; records: Record[] }> {
  const records: Record[] = [];
  let afterRequest = false;
  let pending = Buffer.alloc(0);
  const sockets: net.Socket[] = [];
  const relay = net.createServer((down) => {
    const up = net.connect(proxy.port, "127.0.0.1");
    sockets.push(down, up);
    down.on("data", (d: Buffer) => up.write(d));
    up.on("data", (d: Buffer) => {
      pending = Buffer.concat([pending, d]);
      // Whole records only: 5-byte header, then `length` bytes.
      while (pending.length >= 5) {
        const length = pending.readUInt16BE(3);
        if (pending.length < 5 + length) break;
        if (afterRequest) records.push({ type: pending[0]!, length });
        pending = pending.subarray(5 + length);
      }
      down.write(d);
    });
    for (const s of [down, up]) s.on("error", () => {});
    down.on("close", () => up.destroy());
    up.on("close", () => down.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", () => resolve()));
  const port = (relay.address() as net.AddressInfo).port;
  const client = tls.connect({ host: "127.0.0.1", port, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"], servername: "a.test" });
  client.on("error", () => {});
  let answer = "";
  client.on("data", (d: Buffer) => {
    answer += d.toString("latin1");
  });
  try {
    await new Promise<void>((resolve, reject) => {
      client.once("secureConnect", () => resolve());
      client.once("error", reject);
    });
    // TLS 1.3 session tickets follow the handshake: counted only if they come after the request,
    // and they are far larger than a header fragment.
    afterRequest = true;
    client.write("GET /big HTTP/1.1\r\nHost: a.test\r\n\r\n");
    await eventually(() => answer.includes("\r\n\r\n") && answer.length - answer.indexOf("\r\n\r\n") - 4 >= SIZE, 10_000, "the whole answer");
  } finally {
    client.destroy();
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => relay.close(() => resolve()));
  }
  return { answer, records };
}

test("a streamed answer's head goes out in the TLS record that carries its first body bytes, not one record per field fragment", async () => {
  const { answer, records } = await getThroughRelay();
  expect(answer.startsWith("HTTP/1.1 200 ")).toBe(true);
  const head = answer.slice(0, answer.indexOf("\r\n\r\n"));
  expect(head).toContain("\r\nX-Three: 3");
  // Bun frames a streamed body chunked (docs/design.md, "Bun"): the body is all b's between chunk lines.
  expect(answer.slice(head.length + 4).replace(/\r\n[0-9a-f]+\r\n|^[0-9a-f]+\r\n|\r\n$/g, "")).toBe(BODY);
  // 23: application data (RFC 8446 §5.1; TLS 1.2 also carries HTTP in it). A fragment such as
  // ": " or "\r\n" makes a record of under 64 bytes; a first body chunk sent with the head fills
  // a record (16 KiB of plaintext at most, RFC 8446 §5.1).
  const data = records.filter((r) => r.type === 23);
  const firstLarge = data.findIndex((r) => r.length >= 1024);
  expect(firstLarge).toBeGreaterThanOrEqual(0);
  const tinyBefore = data.slice(0, firstLarge).filter((r) => r.length < 64).length;
  expect(tinyBefore).toBe(0);
});
