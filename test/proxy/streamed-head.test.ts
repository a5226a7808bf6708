// The head of a streamed answer goes out in one write (src/proxy/pipeline/body.ts
// meterResponseBody queues a first chunk that came with the upstream's head). Bun.serve writes
// the head of a streamed body uncorked when the first chunk comes only at the first pull: one
// send() per fragment, over TLS one record per fragment (docs/bun-upstream-reports.md section
// 18). A TCP relay between a TLS 1.2 client and the HTTPS port (HTTP/1.1
// by ALPN) reads the record headers the server sends (RFC 5246 §6.2: type, version, 16-bit
// length), so the record boundaries are observed without decrypting anything. TLS 1.2, because
// a TLS 1.3 server sends its session tickets in records after the handshake (RFC 8446 §4.6.1),
// which could come after the request; a TLS 1.2 server sends them inside the handshake.
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
async function getThroughRelay(): Promise<{ answer: string; records: Record[]; protocol: string | null; cipher: string }> {
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
  const client = tls.connect({ host: "127.0.0.1", port, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"], servername: "a.test", maxVersion: "TLSv1.2" });
  client.on("error", () => {});
  let answer = "";
  let protocol: string | null = null;
  let cipher = "";
  client.on("data", (d: Buffer) => {
    answer += d.toString("latin1");
  });
  try {
    await new Promise<void>((resolve, reject) => {
      client.once("secureConnect", () => resolve());
      client.once("error", reject);
    });
    protocol = client.getProtocol();
    cipher = client.getCipher()?.name ?? "";
    afterRequest = true;
    client.write("GET /big HTTP/1.1\r\nHost: a.test\r\n\r\n");
    await eventually(() => answer.includes("\r\n\r\n") && answer.length - answer.indexOf("\r\n\r\n") - 4 >= SIZE, 10_000, "the whole answer");
  } finally {
    client.destroy();
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => relay.close(() => resolve()));
  }
  return { answer, records, protocol, cipher };
}

test("a streamed answer's head goes out in one TLS record, not one record per field fragment", async () => {
  const { answer, records, protocol, cipher } = await getThroughRelay();
  expect(protocol).toBe("TLSv1.2");
  // The listener's TLS 1.2 suite (test/proxy/helpers.ts): an AEAD record holds its plaintext,
  // an 8-byte explicit nonce and a 16-byte tag (RFC 5288 §3).
  expect(cipher).toBe("ECDHE-ECDSA-AES128-GCM-SHA256");
  expect(answer.startsWith("HTTP/1.1 200 ")).toBe(true);
  const head = answer.slice(0, answer.indexOf("\r\n\r\n"));
  expect(head).toContain("\r\nX-Three: 3");
  // Bun frames a streamed body chunked (docs/design.md, "Bun"): the body is all b's between chunk lines.
  expect(answer.slice(head.length + 4).replace(/\r\n[0-9a-f]+\r\n|^[0-9a-f]+\r\n|\r\n$/g, "")).toBe(BODY);
  // 23: application data (RFC 5246 §6.2.1). The first record after the request starts the
  // answer: written corked it holds the whole head (and perhaps body bytes after it); written
  // a fragment at a time it held the status line and the handler's fields only, and Date,
  // ": ", its value, "\r\n" and the framing field followed in records of their own.
  const data = records.filter((r) => r.type === 23);
  expect(data.length).toBeGreaterThan(0);
  const firstPlaintext = data[0]!.length - 8 - 16;
  expect(firstPlaintext).toBeGreaterThanOrEqual(head.length + 4);
});
