// The HTTPS port on Bun.serve's own HTTP/2 (ALPN h2 beside HTTP/1.1), handed to the node:http2
// listener only while a route needs response trailers (gRPC) or client certificates, and h2c
// with prior knowledge on the plain port (docs/design.md, "HTTP/2 and gRPC"). Real clients:
// curl, node:http2, @grpc/grpc-js. Loopback only, bounded counts.
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as grpc from "@grpc/grpc-js";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { serveOptions, startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import { createHttpsListener } from "../../src/serving/https.ts";
import { stopGracefully } from "../../src/tls/listener.ts";
import { lookup } from "../../src/table/lookup.ts";
import { FRAME, frame, headersFrame, hpack, rawH2, rstFrame } from "../http2/frames.ts";
import { entriesFor, h2Request, h2Session, startTlsProxy } from "../http2/helpers.ts";
import { makeBackend, makeTable, quietLog, testConfig } from "../proxy/helpers.ts";
import { exchangeToClose, rawBackend, statuses } from "../proxy/raw.ts";
import { echoPackage, startEchoServer, unary, type EchoServer } from "../grpc/server.ts";
import { eventually } from "../wait.ts";

let release!: () => void;
let gate = Promise.resolve();
const backend = Bun.serve({
  hostname: "127.0.0.1", port: 0, idleTimeout: 0,
  async fetch(req) {
    const path = new URL(req.url).pathname;
    if (path === "/hold") await gate;
    const body = req.body === null ? "" : await req.text();
    return new Response(`${req.method} ${path} ${body.length}`);
  },
});
let echo: EchoServer;
beforeAll(async () => {
  echo = await startEchoServer(undefined, "plain");
});
afterAll(async () => {
  await backend.stop(true);
  await echo.stop();
});

async function curl(args: string[]): Promise<{ out: string; err: string }> {
  const p = Bun.spawn(["curl", "-sk", "-v", "--max-time", "10", ...args], { stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  await p.exited;
  return { out, err };
}

const web = () => ({ host: null, backend: makeBackend([backend.port as number]) });
const grpcRoute = () => ({ host: "grpc.test", backend: makeBackend([echo.port], { scheme: "grpc" as const }) });

test("HTTPS on Bun.serve: h2 by ALPN and HTTP/1.1 on one port; a body without Content-Length reaches the backend whole", async () => {
  const p = startTlsProxy(makeTable([web()]), { kind: "serving" });
  try {
    expect(p.serving?.kind).toBe("bun");
    const h2 = await curl(["--http2", `${p.origin}/a`]);
    expect(h2.err).toContain("< HTTP/2 200");
    expect(h2.out).toBe("GET /a 0");
    const h1 = await curl(["--http1.1", `${p.origin}/b`]);
    expect(h1.err).toContain("< HTTP/1.1 200");
    expect(h1.out).toBe("GET /b 0");
    // RFC 9113 §8.1.1: DATA frames without a content-length field; Bun.serve adds none.
    const s = await h2Session(p.port);
    try {
      const up = "x".repeat(300_000);
      const r = await h2Request(s, { ":method": "POST", ":path": "/up" }, up);
      expect(r.status).toBe(200);
      expect(String(r.body)).toBe(`POST /up ${up.length}`);
    } finally {
      s.close();
    }
  } finally {
    await p.stop();
  }
});

test("the port moves to node:http2 while a gRPC route exists and back after; no request fails across either move", async () => {
  const p = startTlsProxy(makeTable([web()]), { kind: "serving" });
  let failures = 0;
  const seen: string[] = [];
  let ok = 0;
  let running = true;
  // A client that opens a new connection per request, and one that keeps its session (and
  // reconnects only after a GOAWAY, as RFC 9113 §6.8 asks).
  let retried = 0;
  const fresh = (async () => {
    while (running) {
      const r = await curl(["--http2", `${p.origin}/f`]);
      if (r.out === "GET /f 0") ok++;
      else if (/GOAWAY, error=0, last_stream=0/.test(r.err) || /SSL_connect: Connection reset by peer/.test(r.err) || /connect to \S+ port \d+ failed: Connection reset by peer/.test(r.err)) {
        // The outgoing server stopped in the instant it accepted this connection: the kernel
        // resets connections still in a closing listener's queue (unless net.ipv4.tcp_migrate_req
        // moves them), during the handshake or, for one whose SYN it held, at connect; or Bun
        // sends GOAWAY with last stream 0. Either way the request was never processed (RFC 9113
        // §6.8) nor, for a reset, even sent: a client may send it again.
        retried++;
      } else {
        failures++;
        seen.push(r.err.split("\n").filter((l) => /^\* (?!  )|^< /.test(l)).slice(-4).join(" | "));
      }
    }
  })();
  try {
    expect(p.serving?.kind).toBe("bun");
    await eventually(() => ok >= 2, 20_000);
    p.setTable(makeTable([web(), grpcRoute()]));
    expect(p.serving?.kind).toBe("node");
    // The outgoing Bun.serve server drains first (SO_REUSEPORT spreads new connections over
    // both meanwhile); a gRPC call it gets is UNAVAILABLE, never relayed without its status.
    await p.listener.settled();
    const c = new echoPackage.Echo(`127.0.0.1:${p.port}`,
      grpc.credentials.createSsl(null, null, null, { rejectUnauthorized: false, checkServerIdentity: () => undefined } as grpc.VerifyOptions),
      { "grpc.ssl_target_name_override": "grpc.test", "grpc.default_authority": "grpc.test" });
    const r = await unary(c, { text: "hi", n: 1 });
    expect(r.err).toBeNull();
    expect(r.trailers?.get("x-served-by")).toEqual(["plain"]);
    c.close();
    const before = ok;
    await eventually(() => ok >= before + 2, 20_000);
    p.setTable(makeTable([web()]));
    expect(p.serving?.kind).toBe("bun");
    const again = ok;
    await eventually(() => ok >= again + 2, 20_000);
    await p.listener.settled();
    expect(p.listener.alive).toBe(1);
  } finally {
    running = false;
    await fresh;
    await p.stop();
  }
  expect(seen).toEqual([]);
  expect(failures).toBe(0);
  expect(retried).toBeLessThanOrEqual(4); // the instant each of the two moves stops a listener
});

test("rapid reset against Bun.serve's HTTP/2: GOAWAY ENHANCE_YOUR_CALM, bounded streams reach the handler, the port still serves", async () => {
  gate = new Promise<void>((r) => (release = r));
  const p = startTlsProxy(makeTable([web()]), { kind: "serving" });
  try {
    const c = await rawH2(p.port);
    const batch: Buffer[] = [];
    const GET = [[":method", "GET"], [":scheme", "https"], [":authority", "a.test"], [":path", "/hold"]] as const;
    for (let i = 0; i < 5_000; i++) batch.push(headersFrame(1 + 2 * i, GET), rstFrame(1 + 2 * i));
    c.write(Buffer.concat(batch));
    await eventually(() => c.goaway() !== null);
    expect(c.goaway()).toBe(0xb);
    await eventually(() => c.closed);
    await eventually(() => p.handler.inflight.count === 0);
    // Bun's own guard, not Portico's budget (limits.ts): measured here at well under 5,000.
    expect(p.records.length).toBeLessThan(2_000);
    release();
    const s = await h2Session(p.port);
    expect((await h2Request(s, { ":path": "/after" })).status).toBe(200);
    s.close();
    expect(c.frames.some((f) => f.type === FRAME.GOAWAY)).toBe(true);
  } finally {
    release();
    await p.stop();
  }
});

test("h2c with prior knowledge on the plain port beside HTTP/1.1; gRPC there is refused Trailers-Only with a reason", async () => {
  const table = makeTable([web(), grpcRoute()]);
  const handler = createProxyHandler({ config: testConfig(), table: () => table, lookup, log: quietLog, scheme: "http" });
  const server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler, http2: true });
  try {
    const h2c = await curl(["--http2-prior-knowledge", `http://127.0.0.1:${server.port}/c`]);
    expect(h2c.err).toContain("< HTTP/2 200");
    expect(h2c.out).toBe("GET /c 0");
    const h1 = await curl(["--http1.1", `http://127.0.0.1:${server.port}/d`]);
    expect(h1.err).toContain("< HTTP/1.1 200");
    expect(h1.out).toBe("GET /d 0");
    const c = new echoPackage.Echo(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure(), { "grpc.default_authority": "grpc.test" });
    const before = echo.seen.length;
    const r = await unary(c, { text: "hi", n: 1 });
    c.close();
    expect(r.err?.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(r.err?.details).toContain("TLS");
    expect(echo.seen.length).toBe(before); // the backend never saw it
  } finally {
    await server.stop(true);
  }
});

test("--http3: QUIC on the HTTPS port number (Bun's fetch as the QUIC client), Alt-Svc on answers over TCP", async () => {
  const table = makeTable([web()]);
  const handler = createProxyHandler({ config: testConfig(), table: () => table, lookup, log: quietLog, scheme: "https" });
  const entries = entriesFor([]);
  const start = (http3: boolean) => {
    const l = createHttpsListener({ config: { http2: true, http3, clientHeaderTimeoutMs: 60_000 }, log: quietLog, hostname: "127.0.0.1", port: 0, handler: () => serveOptions(handler), draining: () => false });
    l.update(entries.entries, entries.fingerprint);
    return l;
  };
  const on = start(true);
  const off = start(false);
  const get = (port: number, protocol: string) =>
    fetch(`https://127.0.0.1:${port}/q`, { protocol, tls: { rejectUnauthorized: false }, signal: AbortSignal.timeout(5_000) } as RequestInit);
  try {
    const h3 = await get(on.port, "http3");
    expect(h3.status).toBe(200);
    expect(await h3.text()).toBe("GET /q 0");
    // Bun.serve advertises it itself (RFC 9114 §3.1.1, RFC 7838).
    const tcp = await get(on.port, "http1.1");
    expect(tcp.headers.get("alt-svc")).toBe(`h3=":${on.port}"; ma=86400`);
    await tcp.text();
    // The control: without --http3 nothing answers QUIC, and nothing is advertised.
    await expect(get(off.port, "http3")).rejects.toThrow();
    const plain = await get(off.port, "http1.1");
    expect(plain.headers.get("alt-svc")).toBeNull();
    await plain.text();
  } finally {
    await on.stop(true);
    await off.stop(true);
  }
});

test("a request with a non-WebSocket Upgrade is an ordinary request on Bun.serve: over HTTPS, and h2c's Upgrade on the plain port", async () => {
  const b = await rawBackend();
  const table = makeTable([{ host: null, path: "/", backend: makeBackend([b.port]) }]);
  const p = startTlsProxy(table, { kind: "serving" });
  const handler = createProxyHandler({ config: testConfig(), table: () => table, lookup, log: quietLog, scheme: "http" });
  const plain = startHttpListener({ hostname: "127.0.0.1", port: 0, handler, http2: true });
  try {
    expect(p.serving?.kind).toBe("bun");
    // RFC 9110 §7.8: a server may ignore Upgrade; the proxy drops it (hop-by-hop) and forwards
    // the request with its body. RFC 9113 §3.1 removed the h2c upgrade: it is ignored too.
    for (const [target, upgrade] of [[{ port: p.port, tls: true }, "foo/1"], [{ port: plain.port as number }, "h2c"]] as const) {
      const before = b.requests().length;
      const extra = upgrade === "h2c" ? "HTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\nConnection: Upgrade, HTTP2-Settings, close\r\n" : "Connection: Upgrade, close\r\n";
      const r = await exchangeToClose(target, `POST /u HTTP/1.1\r\nHost: a.test\r\nUpgrade: ${upgrade}\r\n${extra}Content-Length: 5\r\n\r\nhello`);
      expect(statuses(r.data)).toEqual([200]);
      const seen = b.requests().slice(before);
      expect(seen).toHaveLength(1);
      expect(seen[0]!.body).toBe("hello");
      expect(seen[0]!.head.toLowerCase()).not.toContain("upgrade");
    }
  } finally {
    await p.stop();
    await plain.stop(true);
    await b.stop();
  }
});

test("a graceful stop of Bun.serve ends an HTTP/2 connection accepted just before it (GOAWAY), without waiting for its idle timeout", async () => {
  const entries = entriesFor([]);
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, http2: true, idleTimeout: 75, tls: entries.entries as Bun.TLSOptions[], fetch: () => new Response("x") });
  const c = await h2Session(s.port as number);
  let goaway = false;
  c.on("goaway", () => (goaway = true));
  let stopped = false;
  // Right after the handshake: Bun has not handed the connection to its HTTP/2 side yet, and a
  // plain stop(false) neither sends it GOAWAY nor resolves before the 75 s idle timeout.
  const stopping = stopGracefully(s, 30_000).then(() => (stopped = true));
  try {
    await eventually(() => goaway && stopped, 10_000);
  } finally {
    c.close();
    await s.stop(true);
    await stopping;
  }
});

test("Bun.serve's HTTP/2: a CONTINUATION flood ends the connection before the handler; streams past 256 are refused, the rest complete", async () => {
  gate = new Promise<void>((r) => (release = r));
  const p = startTlsProxy(makeTable([web()]), { kind: "serving" });
  const GET = (path: string) => [[":method", "GET"], [":scheme", "https"], [":authority", "a.test"], [":path", path]] as const;
  try {
    expect(p.serving?.kind).toBe("bun");
    const flood = await rawH2(p.port);
    const frames: Buffer[] = [headersFrame(1, GET("/cont"), { endHeaders: false })];
    for (let i = 0; i < 5_000; i++) frames.push(frame(FRAME.CONTINUATION, 0, 1, hpack([[`x-c${i}`, "b".repeat(64)]])));
    flood.write(Buffer.concat(frames));
    await eventually(() => flood.closed);
    expect(flood.goaway()).not.toBeNull();
    expect(p.records).toHaveLength(0);

    const c = await rawH2(p.port);
    // Bun 1.4.5 advertises SETTINGS_MAX_CONCURRENT_STREAMS 128 but refuses only past 256.
    const n = 256 + 4;
    const batch: Buffer[] = [];
    for (let i = 0; i < n; i++) batch.push(headersFrame(1 + 2 * i, GET("/hold")));
    c.write(Buffer.concat(batch));
    await eventually(() => c.resets().size >= 4);
    expect([...c.resets().values()].every((code) => code === 7)).toBe(true); // REFUSED_STREAM
    release();
    const answered = () => c.frames.filter((f) => f.type === FRAME.HEADERS).length;
    await eventually(() => answered() === 256, 10_000);
    c.close();
  } finally {
    release();
    await p.stop();
  }
});
