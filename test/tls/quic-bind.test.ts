// The QUIC side of the HTTPS listener (--http3) against the TCP side it stands beside
// (tls/listener.ts; docs/design.md "HTTP/2 and gRPC", hand-overs): a QUIC bind that fails
// never fails a request over TCP, and answers over TCP stop advertising QUIC (Alt-Svc,
// RFC 7838) once nothing serves it. Loopback only, bounded counts and waits.
import { afterEach, expect, test } from "bun:test";
import { generateDefaultCertificate } from "../../src/tls/default-cert.ts";
import { createTlsListener, type TlsListener } from "../../src/tls/listener.ts";
import { createPemChecker } from "../../src/tls/pem.ts";
import { buildTlsEntries } from "../../src/tls/sni.ts";
import type { Logger } from "../../src/log/logger.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { serveOptions } from "../../src/proxy/pipeline/listener.ts";
import { createSplitListener } from "../../src/serving/tls-split.ts";
import { lookup } from "../../src/table/lookup.ts";
import type { TlsEntry } from "../../src/tls/sni.ts";
import { makeBackend, makeTable, testConfig } from "../proxy/helpers.ts";
import { rawBackend } from "../proxy/raw.ts";
import { eventually } from "../wait.ts";
import { binding, quietLog, RawClient } from "./helpers.ts";
import { createCertificate, generateKeyPair } from "./pki.ts";

const HOST = "quicbind.test";
// A Bun.serve is built synchronously, every certificate entry of it; many entries make that
// turn (the one in which a misordered bind left a TCP socket in the port group) long enough for
// the client process's connections to land on it.
// (measured on 1.4.5: a QUIC Bun.serve refused its UDP bind after about 2 ms with 40 entries).
const HOSTS = 40;
const ROUNDS = 8;
// The split's window is shorter (its front binds at once; the QUIC Bun.serve alone is built in
// it), so more hand-overs than rotations.
const HANDOVERS = 12;
// Connections a client process keeps open at most (tcp-client.ts).
const CONCURRENCY = 128;
const BOUND_MS = 5_000;

const settings = { minVersion: "1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256" } as const;
const generated = generateDefaultCertificate();
const checker = createPemChecker();
const key = generateKeyPair("ecdsa");
function entries(count: number) {
  const hosts = [HOST, ...Array.from({ length: count - 1 }, (_, i) => `h${i}.${HOST}`)];
  const built = buildTlsEntries(
    hosts.map((h) => binding(h, `ns/${h}`, createCertificate({ subjectCN: h, sans: [h, "127.0.0.1"], keyPair: key }), `uid/${h}`)),
    generated, settings, { checker },
  );
  expect(built.diagnostics).toEqual([]);
  return built;
}

function recordingLog(errors: string[]): Logger {
  const log: Logger = { debug() {}, info() {}, warn() {}, error: (msg) => void errors.push(msg), child: () => log };
  return log;
}

let cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface Line {
  readonly i: number;
  readonly status?: number;
  readonly error?: string;
}

function startClient(port: number): { lines: Line[]; stop(): Promise<void> } {
  const proc = Bun.spawn([process.execPath, `${import.meta.dir}/tcp-client.ts`, String(port), String(BOUND_MS), "200000", String(CONCURRENCY)], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
  const lines: Line[] = [];
  const read = (async () => {
    let buf = "";
    for await (const chunk of proc.stdout as ReadableStream<Uint8Array>) {
      buf += new TextDecoder().decode(chunk);
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        lines.push(JSON.parse(buf.slice(0, nl)) as Line);
        buf = buf.slice(nl + 1);
      }
    }
  })();
  const stop = async () => {
    proc.stdin.end();
    await proc.exited;
    await read;
  };
  cleanup.push(() => (proc.exitCode === null ? stop() : undefined));
  return { lines, stop };
}

test("a QUIC bind that fails in a rotation fails no request over TCP; TCP keeps serving, and QUIC binds again on the next change", async () => {
  const errors: string[] = [];
  const l: TlsListener = createTlsListener({
    hostname: "127.0.0.1", port: 0, log: recordingLog(errors), http2: true, http3: true, drainMs: 50, holdoffMs: 0,
    handler: () => ({ fetch: () => new Response("ok") }),
  });
  cleanup.push(() => l.stop(true));
  const e = entries(HOSTS);
  l.update(e.entries, e.fingerprint);
  const client = startClient(l.port);
  await eventually(() => client.lines.length >= 20, 20_000, "the TCP client served");

  // Only a socket without SO_REUSEPORT on the UDP port number makes Bun's QUIC bind fail
  // (measured on 1.4.5: "Failed to listen on UDP port ... for HTTP/3"); the current QUIC side
  // holds the port in a reuseport group, so it goes first.
  const [, quic] = l.servers;
  await quic!.stop(true);
  const udp = await Bun.udpSocket({ hostname: "127.0.0.1", port: l.port });
  cleanup.push(() => udp.close());

  for (let round = 1; round <= ROUNDS; round++) {
    l.update(e.entries, `${e.fingerprint}/${round}`);
    await eventually(() => errors.length >= round, 20_000, `rotation ${round} refused`);
    await l.settled();
    const seen = client.lines.length;
    await eventually(() => client.lines.length >= seen + 10, 20_000, `the TCP client served after rotation ${round}`);
  }
  expect(errors).toEqual(Array(ROUNDS).fill("TLS rotation failed; keeping the previous certificates"));
  expect([l.rotations, l.fingerprint]).toEqual([0, e.fingerprint]);

  // Once the UDP port is free again, the next change binds QUIC with it.
  udp.close();
  l.update(e.entries, `${e.fingerprint}/free`);
  await eventually(() => l.rotations === 1, 20_000, "the rotation after the port was freed");
  const res = await fetch(`https://127.0.0.1:${l.port}/`, { protocol: "http3", tls: { rejectUnauthorized: false }, signal: AbortSignal.timeout(BOUND_MS) } as RequestInit);
  expect([res.status, await res.text()]).toEqual([200, "ok"]);

  await client.stop();
  expect(client.lines.filter((x) => x.error !== undefined)).toEqual([]);
  expect(client.lines.length).toBeGreaterThan(ROUNDS * 10);
}, 120_000);

test("the SNI split's QUIC bind that fails in a hand-over fails no request over TCP on the listener it was to take over from", async () => {
  // The listener before the hand-over: a Bun.serve on the public port, in its SO_REUSEPORT group.
  const e = entries(HOSTS);
  const before = Bun.serve({ hostname: "127.0.0.1", port: 0, reusePort: true, tls: e.entries as TlsEntry[], fetch: () => new Response("ok") } as unknown as Parameters<typeof Bun.serve>[0]);
  cleanup.push(() => before.stop(true));
  const port = before.port as number;
  const udp = await Bun.udpSocket({ hostname: "127.0.0.1", port });
  cleanup.push(() => udp.close());
  const client = startClient(port);
  await eventually(() => client.lines.length >= 20, 20_000, "the TCP client served");
  const table = makeTable([{ host: HOST, backend: makeBackend([1]) }]);
  const handler = createProxyHandler({ config: testConfig(), table: () => table, lookup, log: quietLog, scheme: "https" });
  for (let round = 1; round <= HANDOVERS; round++) {
    const split = createSplitListener({
      hostname: "127.0.0.1", port, handler: () => serveOptions(handler), table: () => table, log: quietLog, hooks: {},
      http2: true, http3: true, headerTimeoutMs: 60_000, draining: () => false, front: { helloTimeoutMs: 5_000, connectTimeoutMs: 5_000 },
    });
    // Stopped by the file's cleanup too, so a failed expectation leaves nothing bound.
    cleanup.push(() => split.stop(true));
    expect(() => split.update(e.entries, e.fingerprint)).toThrow(`Failed to listen on UDP port ${port}`);
    await split.stop(true);
    const seen = client.lines.length;
    await eventually(() => client.lines.length >= seen + 10, 20_000, `the TCP client served after hand-over ${round}`);
  }
  await client.stop();
  expect(client.lines.filter((x) => x.error !== undefined)).toEqual([]);
}, 120_000);

/** The Alt-Svc field of an answer over TCP, or null (RawClient lower-cases the names). */
const altSvcOf = (r: { headers: Record<string, string> }) => r.headers["alt-svc"] ?? null;

test("a listener's answers over TCP advertise QUIC across a rotation, and no more once stop() has taken its QUIC side down", async () => {
  const l = createTlsListener({
    hostname: "127.0.0.1", port: 0, log: quietLog, http2: true, http3: true, drainMs: 2_000, holdoffMs: 0,
    handler: () => ({ fetch: () => new Response("ok") }),
  });
  cleanup.push(() => l.stop(true));
  const e = entries(1);
  l.update(e.entries, e.fingerprint);
  const advertised = `h3=":${l.port}"; ma=86400`;
  const first = new RawClient(l.port, HOST);
  cleanup.push(() => first.close());
  const a = await first.request("/");
  expect([a.status, altSvcOf(a), a.headers.connection ?? null]).toEqual([200, advertised, null]);

  // A rotation: the next server's QUIC side serves the port, so the draining one still says so.
  l.update(e.entries, `${e.fingerprint}/next`);
  await eventually(() => l.rotations === 1, 10_000, "the rotation");
  const b = await first.request("/");
  expect([b.status, altSvcOf(b), b.headers.connection]).toEqual([200, advertised, "close"]);

  const second = new RawClient(l.port, HOST);
  cleanup.push(() => second.close());
  const c = await second.request("/");
  expect([c.status, altSvcOf(c)]).toEqual([200, advertised]);
  // A hand-over or the shutdown: the QUIC side is stopped at once, the TCP side drains.
  const stopping = l.stop();
  const d = await second.request("/");
  expect([d.status, altSvcOf(d), d.headers.connection]).toEqual([200, null, "close"]);
  await stopping;
  await expect(fetch(`https://127.0.0.1:${l.port}/`, { protocol: "http3", tls: { rejectUnauthorized: false }, signal: AbortSignal.timeout(BOUND_MS) } as RequestInit)).rejects.toThrow();
}, 60_000);

test("the SNI split's Bun.serve side stops advertising its QUIC listener once stop() takes it down", async () => {
  const backend = await rawBackend(() => "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
  cleanup.push(() => backend.stop());
  const table = makeTable([{ host: HOST, backend: makeBackend([backend.port]) }]);
  const handler = createProxyHandler({ config: testConfig(), table: () => table, lookup, log: quietLog, scheme: "https" });
  const split = createSplitListener({
    hostname: "127.0.0.1", port: 0, handler: () => serveOptions(handler), table: () => table, log: quietLog, hooks: {}, drainMs: 2_000,
    http2: true, http3: true, headerTimeoutMs: 60_000, draining: () => false, front: { helloTimeoutMs: 5_000, connectTimeoutMs: 5_000 },
  });
  cleanup.push(() => split.stop(true));
  const e = entries(1);
  split.update(e.entries, e.fingerprint);
  const client = new RawClient(split.port, HOST);
  cleanup.push(() => client.close());
  const a = await client.request("/");
  expect([a.status, a.body, altSvcOf(a)]).toEqual([200, "ok", `h3=":${split.port}"; ma=86400`]);
  const stopping = split.stop();
  const b = await client.request("/");
  expect([b.status, b.body, altSvcOf(b), b.headers.connection]).toEqual([200, "ok", null, "close"]);
  await stopping;
}, 60_000);
