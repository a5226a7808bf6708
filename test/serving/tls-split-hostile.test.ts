// Hostile clients on the HTTPS port split by SNI (serving/tls-split.ts, docs/design.md "HTTP/2
// and gRPC", "SSL passthrough"), through serveTraffic as a process runs it: a TCP front reads
// each ClientHello (tls/client-hello.ts) and pipes the connection to node:http2 or Bun.serve on
// loopback. What must hold for each: the connection ends within a deadline, nothing it sends
// stops the port serving others. nginx gives the whole TLS handshake client_header_timeout
// (ngx_http_request.c: ngx_http_init_connection arms the read timer, ngx_http_ssl_handshake
// keeps it while the handshake is under way), so that is the bound here too. Raw sockets on
// loopback; counts and durations bounded.
import { afterAll, beforeAll, expect, test } from "bun:test";
import net from "node:net";
import { connect as tlsConnect } from "node:tls";
import { createInstruments } from "../../src/admin/instruments.ts";
import { Registry } from "../../src/admin/registry.ts";
import { silentLogger } from "../../src/log/logger.ts";
import { serveTraffic, type Serving } from "../../src/serving/serve.ts";
import { createTlsBuilder } from "../../src/serving/tls.ts";
import { freePort } from "../e2e/harness.ts";
import { makeBackend, makeTable, testConfig } from "../proxy/helpers.ts";
import { namedBackend, type RawBackend } from "../proxy/raw.ts";
import { eventually } from "../wait.ts";

/** --client-header-timeout here: short, so a test waits for it in seconds. */
const HEADER_TIMEOUT_MS = 1_000;
/** How long a test waits for a connection to be closed: a bound on a loaded machine, far above the deadline. */
const CLOSED_WITHIN_MS = 30_000;

let web: RawBackend;
let s: Serving;

beforeAll(async () => {
  web = await namedBackend("web");
  // A gRPC route on one host puts the port on the split (table/listener-needs.ts); its backend
  // is never called here.
  const table = makeTable([
    { host: "web.test", backend: makeBackend([web.port]) },
    { host: "grpc.test", backend: makeBackend([freePort()], { scheme: "grpc" }) },
  ]);
  const config = testConfig({
    httpPort: freePort(), httpsPort: freePort(), clientHeaderTimeoutMs: HEADER_TIMEOUT_MS, tlsCiphers: "ECDHE-ECDSA-AES128-GCM-SHA256",
  });
  s = serveTraffic({
    config, log: silentLogger, inst: createInstruments(new Registry(), { version: "t" }), table: () => table,
    tls: createTlsBuilder(config, silentLogger).build([]), ports: "alone",
  });
});
afterAll(async () => {
  await s?.shutdown({ delay: false });
  await web?.stop();
});

/** The ClientHello a node:tls client sends (its first write), read by a raw listener. */
function capture(servername: string | null, extra: Record<string, unknown> = {}): Promise<Uint8Array> {
  return new Promise((resolve) => {
    const l = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        data(so, chunk) {
          resolve(Uint8Array.from(chunk));
          so.end();
          l.stop(true);
        },
      },
    });
    const c = tlsConnect({ host: "127.0.0.1", port: l.port, rejectUnauthorized: false, ...(servername === null ? {} : { servername }), ...extra });
    c.on("error", () => {});
  });
}

/** A TLS 1.2 ClientHello record built by hand (RFC 5246 §7.4.1.2), with `extensions` as given. */
function handHello(extensions: number[]): Uint8Array {
  const body = [3, 3, ...new Array(32).fill(7), 0, 0, 4, 0xc0, 0x2b, 0x13, 0x01, 1, 0, extensions.length >> 8, extensions.length & 0xff, ...extensions];
  const msg = [1, 0, body.length >> 8, body.length & 0xff, ...body];
  return new Uint8Array([22, 3, 1, msg.length >> 8, msg.length & 0xff, ...msg]);
}

/** A server_name extension (RFC 6066 §3) holding these host_name entries. */
function sniExtension(names: string[]): number[] {
  const list: number[] = [];
  for (const n of names) list.push(0, n.length >> 8, n.length & 0xff, ...Buffer.from(n, "latin1"));
  const data = [list.length >> 8, list.length & 0xff, ...list];
  return [0, 0, data.length >> 8, data.length & 0xff, ...data];
}

/** A client that writes `bytes` and then nothing, never answering: whether the port closes it. */
function stall(bytes: Uint8Array): { closed: () => boolean; destroy: () => void } {
  let closed = false;
  const so = net.connect(s.ports.https, "127.0.0.1", () => so.write(bytes));
  // Reads (and drops) what the port sends: a socket that is never read never sees the FIN.
  so.on("data", () => {});
  so.on("error", () => {});
  so.on("close", () => (closed = true));
  return { closed: () => closed, destroy: () => so.destroy() };
}

/** An ordinary HTTPS request for web.test through the front: its status line. */
function ordinary(): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = tlsConnect({ host: "127.0.0.1", port: s.ports.https, servername: "web.test", rejectUnauthorized: false }, () =>
      c.write("GET / HTTP/1.1\r\nHost: web.test\r\nConnection: close\r\n\r\n"));
    let d = "";
    c.on("data", (x) => (d += x));
    c.on("end", () => resolve(d.split("\r\n")[0] ?? ""));
    c.on("error", reject);
  });
}

test("handshakes that stall or that the TLS stack refuses are closed by the deadline on both sides of the split; the port serves meanwhile", async () => {
  expect(s.httpsListener).toBe("split");
  const cases: [string, Uint8Array][] = [
    // To node:http2: its SNI names a gRPC host, or none, or the front cannot read it.
    ["a whole ClientHello for a gRPC host, then nothing", await capture("grpc.test")],
    ["a whole ClientHello without SNI, then nothing", await capture(null)],
    ["a record header promising 16,385 bytes (past RFC 8446 §5.1's 2^14), then nothing", new Uint8Array([22, 3, 1, 0x40, 0x01, 1, 0, 0x3f, 0xfd])],
    ["a ClientHello cut short", (await capture("grpc.test")).subarray(0, 60)],
    ["a 1,000-byte SNI", await capture(`${"a".repeat(60)}.`.repeat(16) + "test")],
    ["a NUL in the SNI", handHello(sniExtension(["web\0.test"]))],
    ["200 SNI entries", handHello(sniExtension(Array.from({ length: 200 }, (_, i) => `h${i}.test`)))],
    ["an extension length past the message", handHello([0, 0x10, 0xff, 0xf0, 0, 2, 1])],
    // To Bun.serve: a name it serves.
    ["a whole ClientHello for web.test, then nothing", await capture("web.test")],
    ["200 ALPN protocols for web.test, then nothing", await capture("web.test", { ALPNProtocols: Array.from({ length: 200 }, (_, i) => `proto-${i}`) })],
  ];
  const clients = cases.map(([what, bytes]) => ({ what, c: stall(bytes) }));
  try {
    // Served while every one of them is held.
    expect(await ordinary()).toBe("HTTP/1.1 200 OK");
    for (const { what, c } of clients) await eventually(c.closed, CLOSED_WITHIN_MS, `${what}: closed by the port`);
    expect(await ordinary()).toBe("HTTP/1.1 200 OK");
  } finally {
    for (const { c } of clients) c.destroy();
  }
}, 120_000);

test("a ClientHello sent a byte at a time is closed at the deadline, not given another with each byte; half-open connections too, while the port serves", async () => {
  const hello = await capture("web.test");
  // Two hundred connections that sent a record header and half of a 16 KiB ClientHello.
  const partial = new Uint8Array(5 + 8192);
  partial.set([22, 3, 1, 0x40, 0x00, 1, 0, 0x3f, 0xfc]);
  const half = Array.from({ length: 200 }, () => stall(partial));
  let sent = 0;
  let closed = false;
  const so = net.connect(s.ports.https, "127.0.0.1");
  so.setNoDelay(true);
  so.on("error", () => {});
  so.on("close", () => (closed = true));
  try {
    expect(await ordinary()).toBe("HTTP/1.1 200 OK");
    // The slow client: a byte each 50 ms, at most the whole ClientHello (bounded: about 40 s
    // for a 800-byte one). A deadline renewed by each byte would let it finish.
    while (!closed && sent < hello.length) {
      so.write(hello.subarray(sent, sent + 1));
      sent++;
      await Bun.sleep(50);
    }
    expect(closed).toBe(true);
    expect(sent).toBeLessThan(hello.length);
    for (const c of half) await eventually(c.closed, CLOSED_WITHIN_MS, "a half-open connection closed by the front");
    expect(await ordinary()).toBe("HTTP/1.1 200 OK");
  } finally {
    so.destroy();
    for (const c of half) c.destroy();
  }
}, 120_000);
