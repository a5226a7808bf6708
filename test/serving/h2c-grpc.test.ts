// gRPC over h2c (prior knowledge, RFC 9113 §3.3) on the plain HTTP port, through serveTraffic
// as a process runs it: while the table holds a gRPC route, the port is behind a TCP front
// (serving/plain.ts) that sends h2c connections to node:http2 (which sends trailers) and the
// rest to Bun.serve. ingress-nginx answers plaintext gRPC on port 80 for `backend-protocol:
// GRPC` (its nginx.tmpl `listen 80` carries `http2` and the location does `grpc_pass
// grpc://`), which is what users who terminate TLS earlier rely on.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as grpc from "@grpc/grpc-js";
import http2 from "node:http2";
import net from "node:net";
import { createInstruments } from "../../src/admin/instruments.ts";
import { Registry } from "../../src/admin/registry.ts";
import { silentLogger } from "../../src/log/logger.ts";
import { serveTraffic, type Serving } from "../../src/serving/serve.ts";
import { createTlsBuilder } from "../../src/serving/tls.ts";
import type { RouteTable } from "../../src/table/types.ts";
import { freePort } from "../e2e/harness.ts";
import { curl } from "../http2/helpers.ts";
import { makeBackend, makeTable, testConfig, wsFirstReply, type RouteSpec } from "../proxy/helpers.ts";
import { type RawBackend, type RawRequest } from "../proxy/raw.ts";
import { xffBackend } from "./xff-backend.ts";
import { eventually } from "../wait.ts";
import { bidiExchange, clientStream, collect, echoPackage, startEchoServer, unary, type EchoServer } from "../grpc/server.ts";

// biome-ignore lint: grpc-js clients are typed at run time.
type Any = any;

/** Another loopback address than the listener's: the backend must see it, not the front's. */
const CLIENT = "127.0.0.2";

let echo: EchoServer;
let web: RawBackend;
/** Requests to slow.test wait here until the test answers them. */
const held: RawRequest[] = [];
let serving: Serving;
let table: RouteTable;

const ordinary = (): RouteSpec[] => [
  { host: "web.test", backend: makeBackend([web.port]) },
  { host: "slow.test", backend: makeBackend([web.port]) },
];
const withGrpc = () => makeTable([...ordinary(), { host: "grpc.test", backend: makeBackend([echo.port], { scheme: "grpc" }) }]);

function setTable(t: RouteTable): void {
  table = t;
  serving.tableChanged();
}

beforeAll(async () => {
  echo = await startEchoServer(undefined, "plain");
  web = await xffBackend(held);
  table = withGrpc();
  const config = testConfig({ httpPort: freePort(), httpsPort: freePort(), tlsCiphers: "ECDHE-ECDSA-AES128-GCM-SHA256" });
  serving = serveTraffic({
    config, log: silentLogger, inst: createInstruments(new Registry(), { version: "t" }), table: () => table,
    tls: createTlsBuilder(config, silentLogger).build([]), ports: "alone",
  });
});
afterAll(async () => {
  await serving.shutdown({ delay: false });
  await echo.stop();
  await web.stop();
});

const h2cClient = (): Any => new echoPackage.Echo(`127.0.0.1:${serving.ports.http}`, grpc.credentials.createInsecure(), { "grpc.default_authority": "grpc.test" });

/** An h2c session from CLIENT (prior knowledge: the preface is the first thing sent). */
function h2cSession(): http2.ClientHttp2Session {
  const port = serving.ports.http;
  const s = http2.connect(`http://127.0.0.1:${port}`, { createConnection: () => net.connect({ host: "127.0.0.1", port, localAddress: CLIENT }) });
  s.on("error", () => {});
  return s;
}

describe("a gRPC route: gRPC over h2c on the plain port", () => {
  test("unary: the message, request metadata and the response trailers relayed", async () => {
    const c = h2cClient();
    const r = await unary(c, { text: "hi", n: 7 }, { metadata: { "x-trace": "abc" } });
    expect(r.err).toBeNull();
    expect(r.res).toMatchObject({ text: "plain:hi", n: 7 });
    expect(r.trailers?.get("x-served-by")).toEqual(["plain"]);
    const seen = echo.seen.at(-1)!;
    expect(seen.metadata["x-trace"]).toBe("abc");
    expect(seen.metadata["x-forwarded-proto"]).toBe("http");
    c.close();
  });

  test("server streaming, client streaming and bidirectional streaming", async () => {
    const c = h2cClient();
    const ss = await collect(c.ServerStream({ text: "s", n: 4 }));
    expect(ss.status.code).toBe(grpc.status.OK);
    expect(ss.msgs.map((m) => m.text)).toEqual(["s-0", "s-1", "s-2", "s-3"]);

    const cs = await clientStream(c, ["a", "b", "c"]);
    expect(cs).toMatchObject({ text: "a,b,c", n: 3 });

    const bidi = await bidiExchange(c, ["x", "y"]);
    expect(bidi.code).toBe(grpc.status.OK);
    expect(bidi.replies.length).toBe(2);
    c.close();
  });

  test("a backend's error status arrives with its message (grpc-status in the trailers)", async () => {
    const c = h2cClient();
    const r = await unary(c, { text: "nope", action: "fail" });
    expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(r.err?.details).toBe("refused nope");
    c.close();
  });

  test("Portico's own failure is a Trailers-Only answer: no endpoint is UNAVAILABLE", async () => {
    setTable(makeTable([...ordinary(), { host: "grpc.test", backend: makeBackend([echo.port], { scheme: "grpc" }) }, { host: "down.test", backend: makeBackend([], { scheme: "grpc" }) }]));
    const c = new echoPackage.Echo(`127.0.0.1:${serving.ports.http}`, grpc.credentials.createInsecure(), { "grpc.default_authority": "down.test" });
    const r = await unary(c, { text: "x" });
    expect(r.err?.code).toBe(grpc.status.UNAVAILABLE);
    c.close();
    // On the wire: one HEADERS frame that ends the stream carries the status (gRPC's
    // PROTOCOL-HTTP2.md, Trailers-Only); no DATA, no trailing HEADERS.
    const s = h2cSession();
    try {
      const got = await new Promise<{ headers: http2.IncomingHttpHeaders; trailers: boolean; data: number }>((resolve, reject) => {
        const req = s.request({ ":method": "POST", ":path": "/portico.test.Echo/Unary", ":authority": "down.test", "content-type": "application/grpc", te: "trailers" });
        let headers: http2.IncomingHttpHeaders = {};
        let trailers = false;
        let data = 0;
        req.on("response", (h) => (headers = h));
        req.on("trailers", () => (trailers = true));
        req.on("data", (d: Buffer) => (data += d.length));
        req.on("error", reject);
        req.on("close", () => resolve({ headers, trailers, data }));
        req.end(Buffer.from([0, 0, 0, 0, 0]));
      });
      expect(Number(got.headers[":status"])).toBe(200);
      expect(got.headers["grpc-status"]).toBe(String(grpc.status.UNAVAILABLE));
      expect(got.trailers).toBe(false);
      expect(got.data).toBe(0);
    } finally {
      s.close();
      setTable(withGrpc());
    }
  });

  test("grpc-timeout is forwarded and Portico ends the call DEADLINE_EXCEEDED when the backend does not", async () => {
    let timeoutSeen: string | undefined;
    const raw = http2.createServer();
    raw.on("stream", (s: http2.ServerHttp2Stream, h) => {
      timeoutSeen = h["grpc-timeout"] as string;
      s.on("error", () => {});
      s.respond({ ":status": 200, "content-type": "application/grpc" });
    });
    await new Promise<void>((r) => raw.listen(0, "127.0.0.1", r));
    setTable(makeTable([...ordinary(), { host: "grpc.test", backend: makeBackend([(raw.address() as { port: number }).port], { scheme: "grpc" }) }]));
    const s = h2cSession();
    try {
      const req = s.request({ ":method": "POST", ":path": "/portico.test.Echo/Unary", ":authority": "grpc.test", "content-type": "application/grpc", te: "trailers", "grpc-timeout": "300m" });
      req.end(Buffer.from([0, 0, 0, 0, 0]));
      let trailers: http2.IncomingHttpHeaders | null = null;
      req.on("trailers", (t) => (trailers = t));
      req.on("data", () => {});
      req.on("error", () => {});
      await eventually(() => trailers !== null);
      expect(trailers!["grpc-status"]).toBe(String(grpc.status.DEADLINE_EXCEEDED));
      expect(timeoutSeen).toBe("300m");
    } finally {
      s.close();
      raw.close();
      setTable(withGrpc());
    }
  });

  test("meanwhile HTTP/1.1 and ordinary h2c on the same port work, with the client's address kept", async () => {
    const call = unary(h2cClient(), { text: "along", delayMs: 300 });
    const base = `http://127.0.0.1:${serving.ports.http}/`;
    const h1 = await curl(["--http1.1", "--interface", CLIENT, "-H", "host: web.test", "-w", " %{http_version}", base]);
    const h2 = await curl(["--http2-prior-knowledge", "--interface", CLIENT, "-H", "host: web.test", "-w", " %{http_version}", base]);
    expect(h1.out).toBe(`${CLIENT} 1.1`);
    expect(h2.out).toBe(`${CLIENT} 2`);
    // An h2c request from node:http2 too, on the session the front sent to node:http2.
    const s = h2cSession();
    const body = await new Promise<string>((resolve, reject) => {
      const req = s.request({ ":path": "/", ":authority": "web.test" });
      let b = "";
      req.on("data", (d: Buffer) => (b += d.toString()));
      req.on("end", () => resolve(b));
      req.on("error", reject);
    });
    s.close();
    expect(body).toBe(CLIENT);
    expect((await call).err).toBeNull();
  });
});

test("the gRPC route removed: the port is back on Bun.serve, requests in flight finish", async () => {
  setTable(withGrpc());
  // In flight through the front: an HTTP/1.1 request held at the backend, and a gRPC call.
  const before = held.length;
  const slow = curl(["--http1.1", "-H", "host: slow.test", `http://127.0.0.1:${serving.ports.http}/held`]);
  await eventually(() => held.length > before);
  const c = h2cClient();
  const calls = echo.seen.length;
  const call = unary(c, { text: "late", delayMs: 400 });
  await eventually(() => echo.seen.length > calls);
  expect(serving.plainListener).toBe("front");

  setTable(makeTable(ordinary()));
  expect(serving.plainListener).toBe("bun");
  // A new connection is Bun.serve's again.
  const fresh = await curl(["--http1.1", "-H", "host: web.test", `http://127.0.0.1:${serving.ports.http}/`]);
  expect(fresh.out).toBe("127.0.0.1");
  held.at(-1)!.socket.write("HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\ndone");
  expect((await slow).out).toBe("done");
  const r = await call;
  expect(r.err).toBeNull();
  expect(r.res?.text).toBe("plain:late");
  c.close();
  // The front, its loopback Bun.serve and the h2c server are gone once their connections are.
  await serving.settled();
  const h2 = await curl(["--http2-prior-knowledge", "-H", "host: web.test", "-w", " %{http_version}", `http://127.0.0.1:${serving.ports.http}/`]);
  expect(h2.out).toBe("127.0.0.1 2");
});

describe("the front's life", () => {
  function start(over: Parameters<typeof testConfig>[0], t: RouteTable) {
    const config = testConfig({ httpPort: freePort(), httpsPort: freePort(), tlsCiphers: "ECDHE-ECDSA-AES128-GCM-SHA256", ...over });
    const s = serveTraffic({
      config, log: silentLogger, inst: createInstruments(new Registry(), { version: "t" }), table: () => t,
      tls: createTlsBuilder(config, silentLogger).build([]), ports: "alone",
    });
    return { s, config };
  }
  const free = (port: number) => {
    try {
      Bun.listen({ hostname: "127.0.0.1", port, socket: { data() {} } }).stop(true);
      return true;
    } catch {
      return false;
    }
  };

  test("a WebSocket through the front: upgraded by the loopback Bun.serve, relayed both ways", async () => {
    const ws = Bun.serve({
      hostname: "127.0.0.1", port: 0,
      fetch: (req, server) => (server.upgrade(req) ? undefined : new Response("no", { status: 400 })),
      websocket: { message: (sock, m) => void sock.send(`echo:${String(m)}`) },
    });
    const { s } = start({}, makeTable([...ordinary(), { host: "ws.test", backend: makeBackend([ws.port as number]) }, { host: "grpc.test", backend: makeBackend([echo.port], { scheme: "grpc" }) }]));
    try {
      expect(s.plainListener).toBe("front");
      expect(await wsFirstReply(`ws://127.0.0.1:${s.ports.http}/`, { host: "ws.test" })).toBe("echo:hi");
    } finally {
      await s.shutdown({ delay: false });
      ws.stop(true);
    }
  });

  test("hostile first bytes: a stalled half preface is closed after --client-header-timeout; a near-preface goes to Bun.serve", async () => {
    const { s } = start({ clientHeaderTimeoutMs: 300 }, withGrpc());
    try {
      const stalled = net.connect({ host: "127.0.0.1", port: s.ports.http });
      let closed = false;
      stalled.on("error", () => {});
      stalled.on("close", () => (closed = true));
      stalled.write("PRI * HTTP/2.0\r\n");
      await eventually(() => closed);
      // One byte off the preface: an HTTP/1.1 request line Bun.serve refuses (its own 400).
      const odd = await new Promise<string>((resolve) => {
        const c = net.connect({ host: "127.0.0.1", port: s.ports.http });
        let got = "";
        c.on("data", (d: Buffer) => {
          got += d.toString("latin1");
          if (got.includes("\r\n\r\n")) c.end();
        });
        c.on("close", () => resolve(got));
        c.on("error", () => resolve(got));
        c.write("PRI * HTTP/2.1\r\n\r\nSM\r\n\r\n");
      });
      expect(odd.startsWith("HTTP/1.1 4")).toBe(true);
      const after = await curl(["--http1.1", "-H", "host: web.test", `http://127.0.0.1:${s.ports.http}/`]);
      expect(after.out).toBe("127.0.0.1");
    } finally {
      await s.shutdown({ delay: false });
    }
  });

  test("a shutdown while the front is up closes the front and both loopback servers: the port is free", async () => {
    const { s, config } = start({}, withGrpc());
    expect(s.plainListener).toBe("front");
    const c = new echoPackage.Echo(`127.0.0.1:${s.ports.http}`, grpc.credentials.createInsecure(), { "grpc.default_authority": "grpc.test" });
    expect((await unary(c, { text: "bye" })).err).toBeNull();
    c.close();
    await s.shutdown({ delay: false });
    await eventually(() => free(config.httpPort));
  });

  test("--http2=false: no h2c on the plain port, so a gRPC route puts no front before it", async () => {
    const { s } = start({ http2: false }, withGrpc());
    try {
      expect(s.plainListener).toBe("bun");
      const h1 = await curl(["--http1.1", "-H", "host: web.test", `http://127.0.0.1:${s.ports.http}/`]);
      expect(h1.out).toBe("127.0.0.1");
    } finally {
      await s.shutdown({ delay: false });
    }
  });
});
