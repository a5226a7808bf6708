// The HTTPS port split by SNI (serving/tls-split.ts, docs/design.md "HTTP/2 and gRPC"), through
// serveTraffic as a process runs it: while some hosts have a gRPC route, a front reads each
// ClientHello and sends the connections naming those hosts (exact or wildcard, as the table's
// host lookup selects) to node:http2, which sends the trailers gRPC needs, and every other to
// Bun.serve. Which listener answered is visible: an h2 request on Bun.serve is logged as "h1"
// (Bun shows no protocol; node:http2's records say "h2"), and Bun.serve's side answers a
// request for a gRPC host 421 Misdirected Request (RFC 9110 §15.5.20), where node:http2 serves
// every host.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as grpc from "@grpc/grpc-js";
import http2 from "node:http2";
import { connect as netConnect } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { createInstruments } from "../../src/admin/instruments.ts";
import { Registry } from "../../src/admin/registry.ts";
import type { Config } from "../../src/config/types.ts";
import type { AccessRecord } from "../../src/log/access.ts";
import { createLogger, silentLogger, type Logger } from "../../src/log/logger.ts";
import { createHttpsListener, type HttpsListenerOptions } from "../../src/serving/https.ts";
import { serveTraffic, type Serving } from "../../src/serving/serve.ts";
import { createTlsBuilder } from "../../src/serving/tls.ts";
import { buildTable } from "../../src/table/build.ts";
import type { RouteTable } from "../../src/table/types.ts";
import { freePort } from "../e2e/harness.ts";
import { curl } from "../http2/helpers.ts";
import { makeBackend, makeRoute, makeTable, testConfig, testGatewayPorts, type RouteSpec } from "../proxy/helpers.ts";
import { type RawBackend, type RawRequest } from "../proxy/raw.ts";
import { xffBackend } from "./xff-backend.ts";
import { eventually } from "../wait.ts";
import { bidiExchange, clientStream, collect, echoPackage, startEchoServer, unary, type EchoServer } from "../grpc/server.ts";
import { listeningSockets, peerCertificate } from "../tls/helpers.ts";
import { createCertificate } from "../tls/pki.ts";
import { GATEWAY_NS, gatewayTable } from "../table/gateway-grpc.ts";

// biome-ignore lint: grpc-js clients are typed at run time.
type Any = any;

/** Another loopback address than the listener's: the backend must see it, not the front's. */
const CLIENT = "127.0.0.2";

let echo: EchoServer;
let web: RawBackend;
/** Requests to slow.test wait here until the test answers them. */
const held: RawRequest[] = [];

const ordinary = (): RouteSpec[] => [
  { host: "web.test", backend: makeBackend([web.port]) },
  { host: "slow.test", backend: makeBackend([web.port]) },
];
const grpcRoutes = (): RouteSpec[] => [
  { host: "grpc.test", backend: makeBackend([echo.port], { scheme: "grpc" }) },
  // A wildcard host: `*.wild.test` covers one first label (lookup.ts selectHost).
  { host: "*.wild.test", backend: makeBackend([echo.port], { scheme: "grpc" }) },
];
const withGrpc = () => makeTable([...ordinary(), ...grpcRoutes()]);

beforeAll(async () => {
  echo = await startEchoServer(undefined, "plain");
  web = await xffBackend(held);
});
afterAll(async () => {
  await echo.stop();
  await web.stop();
});

interface Running {
  readonly s: Serving;
  readonly records: AccessRecord[];
  readonly registry: Registry;
  setTable(t: RouteTable): void;
}

function start(t: RouteTable, over: Partial<Config> = {}, log: Logger = silentLogger): Running {
  let table = t;
  const records: AccessRecord[] = [];
  const config = testConfig({ httpPort: freePort(), httpsPort: freePort(), tlsCiphers: "ECDHE-ECDSA-AES128-GCM-SHA256", ...over });
  const registry = new Registry();
  const s = serveTraffic({
    config, log, inst: createInstruments(registry, { version: "t" }), table: () => table,
    tls: createTlsBuilder(config, silentLogger).build([]), ports: "alone", onRequest: (r) => records.push(r),
  });
  return { s, records, registry, setTable: (next) => ((table = next), s.tableChanged()) };
}

/** curl over HTTPS with `sni` in the ClientHello (by --resolve), from CLIENT, the Host `host`. */
function tlsCurl(port: number, sni: string, host: string, version: "--http1.1" | "--http2", path = "/") {
  return curl(["-k", version, "--interface", CLIENT, "--resolve", `${sni}:${port}:127.0.0.1`, "-H", `host: ${host}`, "-w", " %{http_code} %{http_version}", `https://${sni}:${port}${path}`]);
}

/** A grpc-js client whose ClientHello names `sni`, its calls' :authority `authority`. */
function grpcClient(port: number, sni: string, authority = sni): Any {
  // Portico's certificates are the generated default here: not verified, the name still sent as SNI.
  const creds = grpc.credentials.createSsl(null, null, null, { rejectUnauthorized: false, checkServerIdentity: () => undefined } as grpc.VerifyOptions);
  return new echoPackage.Echo(`127.0.0.1:${port}`, creds, { "grpc.ssl_target_name_override": sni, "grpc.default_authority": authority });
}

const lastFor = (records: AccessRecord[], host: string) => records.filter((r) => r.host === host).at(-1);

/**
 * A gRPC call for grpc.test on a connection whose SNI named web.test (so Bun.serve holds it):
 * UNAVAILABLE with the reason, the status clients retry on a new connection, and never relayed.
 */
async function expectCoalescedCallRetryable(port: number): Promise<void> {
  const calls = echo.seen.length;
  const c = grpcClient(port, "web.test", "grpc.test");
  const u = await unary(c, { text: "coalesced" });
  c.close();
  expect(u.err?.code).toBe(grpc.status.UNAVAILABLE);
  expect(u.err?.details).toBe("misdirected request: retry on a new connection");
  expect(echo.seen.length).toBe(calls);
}

describe("a gRPC route on some hosts: the HTTPS port split by SNI", () => {
  let r: Running;
  beforeAll(() => {
    r = start(withGrpc());
  });
  afterAll(async () => {
    await r.s.shutdown({ delay: false });
  });

  test("gRPC on the gRPC hosts (exact and wildcard): the four call kinds' answers and the trailers, through the front to node:http2", async () => {
    expect(r.s.httpsListener).toBe("split");
    for (const host of ["grpc.test", "a.wild.test"]) {
      const c = grpcClient(r.s.ports.https, host);
      const u = await unary(c, { text: "hi", n: 7 }, { metadata: { "x-trace": "abc" } });
      expect(u.err).toBeNull();
      expect(u.res).toMatchObject({ text: "plain:hi", n: 7 });
      expect(u.trailers?.get("x-served-by")).toEqual(["plain"]);
      const seen = echo.seen.at(-1)!;
      expect(seen.metadata["x-trace"]).toBe("abc");
      // The client's address kept through the front (X-Forwarded-For, as on any request).
      expect(seen.metadata["x-forwarded-for"]).toBe("127.0.0.1");
      const ss = await collect(c.ServerStream({ text: "s", n: 3 }));
      expect(ss.status.code).toBe(grpc.status.OK);
      expect(ss.msgs.map((m) => m.text)).toEqual(["s-0", "s-1", "s-2"]);
      expect(await clientStream(c, ["a", "b"])).toMatchObject({ text: "a,b", n: 2 });
      expect(await bidiExchange(c, ["x", "y"])).toEqual({ replies: ["bidi:x", "bidi:y"], code: grpc.status.OK });
      const failed = await unary(c, { text: "nope", action: "fail" });
      expect(failed.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(failed.err?.details).toBe("refused nope");
      c.close();
      expect(lastFor(r.records, host)?.protocol).toBe("h2");
    }
  });

  test("an ordinary host over HTTP/1.1 and h2 is served by Bun.serve, the client's address kept", async () => {
    const port = r.s.ports.https;
    const h1 = await tlsCurl(port, "web.test", "web.test", "--http1.1");
    expect(h1.out).toBe(`${CLIENT} 200 1.1`);
    const h2 = await tlsCurl(port, "web.test", "web.test", "--http2");
    expect(h2.out).toBe(`${CLIENT} 200 2`);
    // Bun.serve shows no protocol: its h2 request is logged "h1"; node:http2 would say "h2".
    expect(lastFor(r.records, "web.test")?.protocol).toBe("h1");
  });

  test("a request for a gRPC host on a connection to Bun.serve (coalesced, or Host ≠ SNI) is 421; a gRPC call there is UNAVAILABLE", async () => {
    const port = r.s.ports.https;
    for (const v of ["--http1.1", "--http2"] as const) {
      const got = await tlsCurl(port, "web.test", "grpc.test", v);
      expect(got.out).toBe(`misdirected request\n 421 ${v === "--http2" ? "2" : "1.1"}`);
      // The wildcard host too, by the same lookup.
      expect((await tlsCurl(port, "web.test", "b.wild.test", v)).out).toStartWith("misdirected request\n 421");
    }
    expect(lastFor(r.records, "grpc.test")?.status).toBe(421);
    // A plain 421 is UNKNOWN to a gRPC client (gRPC's doc/http-grpc-status-mapping.md); the
    // call gets the status clients retry, with the reason.
    await expectCoalescedCallRetryable(port);
  });

  test("node:http2 serves every host: an ordinary Host on a gRPC host's connection, and a connection without SNI", async () => {
    const port = r.s.ports.https;
    const viaGrpcSni = await tlsCurl(port, "grpc.test", "web.test", "--http2");
    expect(viaGrpcSni.out).toBe(`${CLIENT} 200 2`);
    expect(lastFor(r.records, "web.test")?.protocol).toBe("h2");
    // By address: no server_name in the ClientHello (RFC 6066 §3 sends none for an IP literal).
    const noSni = await curl(["-k", "--http2", "--interface", CLIENT, "-H", "host: web.test", "-w", " %{http_code}", `https://127.0.0.1:${port}/`]);
    expect(noSni.out).toBe(`${CLIENT} 200`);
    expect(lastFor(r.records, "web.test")?.protocol).toBe("h2");
  });
});

// Gateway API: a GRPCRoute's effective hostnames (its hostnames intersected with its
// listener's, as the compiler keys the table) are the hosts sent to node:http2; an HTTPRoute's
// host on the same Gateway and port stays on Bun.serve (table/listener-needs.ts).
describe("a GRPCRoute beside an HTTPRoute on a Gateway's HTTPS listeners: the port split by the GRPCRoute's hostnames", () => {
  let r: Running;
  beforeAll(() => {
    r = start(
      gatewayTable({
        listeners: [{ name: "https" }, { name: "wild", hostname: "*.rpc.test" }],
        services: { web: web.port, echo: echo.port },
        routes: [
          { kind: "HTTPRoute", name: "web", listener: "https", hostnames: ["web.test"], service: "web" },
          { kind: "GRPCRoute", name: "rpc", listener: "https", hostnames: ["grpc.test"], service: "echo" },
          // No hostnames of its own: the listener's `*.rpc.test` (a `*.` label is one or more labels).
          { kind: "GRPCRoute", name: "wild", listener: "wild", service: "echo" },
        ],
      }),
    );
  });
  afterAll(async () => {
    await r.s.shutdown({ delay: false });
  });

  test("gRPC on the GRPCRoute's hosts through node:http2, the HTTPRoute's host on Bun.serve, and 421 for a gRPC host asked of Bun.serve", async () => {
    expect(r.s.httpsListener).toBe("split");
    const port = r.s.ports.https;
    for (const host of ["grpc.test", "a.rpc.test", "a.b.rpc.test"]) {
      const c = grpcClient(port, host);
      const u = await unary(c, { text: host });
      const ss = await collect(c.ServerStream({ text: "s", n: 2 }));
      c.close();
      expect(u.err).toBeNull();
      expect(u.res?.text).toBe(`plain:${host}`);
      // Trailers: only node:http2 sends them (Bun.serve cannot).
      expect(u.trailers?.get("x-served-by")).toEqual(["plain"]);
      expect(ss.status.code).toBe(grpc.status.OK);
      expect(ss.msgs.map((m) => m.text)).toEqual(["s-0", "s-1"]);
      expect(lastFor(r.records, host)?.protocol).toBe("h2");
    }
    // The HTTPRoute's host over h2 and HTTP/1.1: Bun.serve, which logs its h2 request "h1".
    expect((await tlsCurl(port, "web.test", "web.test", "--http2")).out).toBe(`${CLIENT} 200 2`);
    expect(lastFor(r.records, "web.test")?.protocol).toBe("h1");
    expect((await tlsCurl(port, "web.test", "web.test", "--http1.1")).out).toBe(`${CLIENT} 200 1.1`);
    // A GRPCRoute host on that connection: 421 (RFC 9110 §15.5.20), a gRPC call UNAVAILABLE.
    for (const host of ["grpc.test", "a.rpc.test"]) {
      expect((await tlsCurl(port, "web.test", host, "--http2")).out).toBe("misdirected request\n 421 2");
      expect((await tlsCurl(port, "web.test", host, "--http1.1")).out).toBe("misdirected request\n 421 1.1");
    }
    await expectCoalescedCallRetryable(port);
  });
});

test("hand-over both ways: the gRPC route appears and goes, with requests in flight on each side", async () => {
  const r = start(makeTable(ordinary()));
  try {
    expect(r.s.httpsListener).toBe("bun");
    const port = r.s.ports.https;
    // In flight on Bun.serve alone: a request held at the backend.
    let before = held.length;
    const slow1 = tlsCurl(port, "slow.test", "slow.test", "--http2", "/held1");
    await eventually(() => held.length > before);
    r.setTable(withGrpc());
    expect(r.s.httpsListener).toBe("split");
    // New connections: gRPC through the front to node:http2, an ordinary host to Bun.serve.
    const c = grpcClient(port, "grpc.test");
    // Until the outgoing Bun.serve stops accepting (its drain, docs/design.md "HTTP/2 and
    // gRPC"), the kernel may still give it a new connection: a call there is UNAVAILABLE
    // ("listener changing over, retry"), never a wrong answer.
    const answers = new Set<string>();
    await eventually(async () => {
      const u = await unary(c, { text: "after" });
      answers.add(u.err === null ? `ok ${u.res?.text}` : `${u.err.code} ${u.err.details}`);
      return u.err === null;
    });
    expect([...answers].filter((a) => a !== "ok plain:after" && a !== `${grpc.status.UNAVAILABLE} listener changing over, retry`)).toEqual([]);
    expect((await tlsCurl(port, "web.test", "web.test", "--http1.1")).out).toBe(`${CLIENT} 200 1.1`);
    // Once the outgoing Bun.serve stops accepting, an ordinary host's h2 is the split's Bun.serve
    // (logged "h1") and a gRPC host on that connection is misdirected.
    await eventually(async () => (await tlsCurl(port, "web.test", "grpc.test", "--http2")).out.endsWith(" 421 2"));
    expect((await tlsCurl(port, "web.test", "web.test", "--http2")).out).toBe(`${CLIENT} 200 2`);
    expect(lastFor(r.records, "web.test")?.protocol).toBe("h1");
    held.at(-1)!.socket.write("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfirst");
    expect((await slow1).out).toBe("first 200 2");

    // In flight through the split: a gRPC call on node:http2 and a request held on Bun.serve.
    before = held.length;
    const slow2 = tlsCurl(port, "slow.test", "slow.test", "--http1.1", "/held2");
    await eventually(() => held.length > before);
    const calls = echo.seen.length;
    const call = unary(c, { text: "late", delayMs: 400 });
    await eventually(() => echo.seen.length > calls);
    r.setTable(makeTable(ordinary()));
    expect(r.s.httpsListener).toBe("bun");
    expect((await tlsCurl(port, "web.test", "web.test", "--http2")).out).toBe(`${CLIENT} 200 2`);
    held.at(-1)!.socket.write("HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nsecond");
    expect((await slow2).out).toBe("second 200 1.1");
    const late = await call;
    expect(late.err).toBeNull();
    expect(late.res?.text).toBe("plain:late");
    c.close();
    // The front and its two loopback listeners are gone once their connections are.
    await r.s.settled();
    expect((await tlsCurl(port, "web.test", "web.test", "--http1.1")).out).toBe(`${CLIENT} 200 1.1`);
  } finally {
    await r.s.shutdown({ delay: false });
  }
});

test("a host Bun.serve serves gains a gRPC route: its open HTTP/2 connection is closed gracefully, the next one reaches node:http2", async () => {
  const later = (grpcToo: boolean) => makeTable([...ordinary(), ...grpcRoutes(), { host: "later.test", backend: makeBackend(grpcToo ? [echo.port] : [web.port], grpcToo ? { scheme: "grpc" } : {}) }]);
  const r = start(later(false));
  const port = r.s.ports.https;
  const s = http2.connect(`https://127.0.0.1:${port}`, { servername: "later.test", rejectUnauthorized: false });
  s.on("error", () => {});
  let goaway = false;
  let closed = false;
  s.on("goaway", () => (goaway = true));
  s.on("close", () => (closed = true));
  try {
    expect(r.s.httpsListener).toBe("split");
    const first = await new Promise<number>((resolve, reject) => {
      const q = s.request({ ":path": "/", ":authority": "later.test" });
      q.on("response", (h) => resolve(Number(h[":status"])));
      q.on("error", reject);
      q.resume();
    });
    expect(first).toBe(200);
    expect(lastFor(r.records, "later.test")?.protocol).toBe("h1"); // Bun.serve's side
    r.setTable(later(true));
    // The Bun.serve side is renewed: the previous one drains and sends GOAWAY (RFC 9113 §6.8).
    await eventually(() => goaway && closed, 10_000);
    const c = grpcClient(port, "later.test");
    const u = await unary(c, { text: "moved" });
    c.close();
    expect(u.err).toBeNull();
    expect(u.res?.text).toBe("plain:moved");
    expect(u.trailers?.get("x-served-by")).toEqual(["plain"]);
  } finally {
    s.destroy();
    await r.s.shutdown({ delay: false });
  }
});

test("hand-over both ways under a stream of new connections: no request fails", async () => {
  const r = start(makeTable(ordinary()));
  let running = true;
  let ok = 0;
  let retried = 0;
  const seen: string[] = [];
  const port = r.s.ports.https;
  const loop = (async () => {
    while (running) {
      const got = await tlsCurl(port, "web.test", "web.test", "--http2");
      if (got.out === `${CLIENT} 200 2`) ok++;
      else if (/GOAWAY, error=0, last_stream=0/.test(got.err) || /Connection reset by peer|SSL_ERROR_SYSCALL/.test(got.err)) {
        // A listener (or the front) stopped in the instant it accepted this connection: the
        // kernel resets what is left in a closing listener's queue, or Bun sends GOAWAY with
        // last stream 0; the request was never processed (RFC 9113 §6.8) and may be sent again.
        retried++;
      } else seen.push(`${got.out} ${got.err.trim().split("\n").at(-1)}`);
    }
  })();
  try {
    await eventually(() => ok >= 2, 20_000);
    r.setTable(withGrpc());
    expect(r.s.httpsListener).toBe("split");
    let before = ok;
    await eventually(() => ok >= before + 3, 20_000);
    await r.s.settled();
    r.setTable(makeTable(ordinary()));
    expect(r.s.httpsListener).toBe("bun");
    before = ok;
    await eventually(() => ok >= before + 3, 20_000);
    await r.s.settled();
  } finally {
    running = false;
    await loop;
    await r.s.shutdown({ delay: false });
  }
  expect(seen).toEqual([]);
  expect(retried).toBeLessThanOrEqual(4);
});

test("--enable-ssl-passthrough and the split share one front: passed-through hosts, gRPC hosts and ordinary hosts each reach theirs", async () => {
  const pem = createCertificate({ subjectCN: "pass.test", sans: ["pass.test"] });
  const pod = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: pem.certPem, key: pem.keyPem }, fetch: () => new Response("pod") });
  const pass = { ...makeRoute({ host: "pass.test", backend: makeBackend([pod.port as number]) }), sslPassthrough: true as const };
  const t = buildTable([pass, ...[...ordinary(), ...grpcRoutes()].map(makeRoute)], null);
  const r = start(t, { enableSslPassthrough: true });
  try {
    expect(r.s.httpsListener).toBe("split");
    const port = r.s.ports.https;
    expect((await tlsCurl(port, "pass.test", "pass.test", "--http1.1")).out).toBe("pod 200 1.1");
    const c = grpcClient(port, "grpc.test");
    const u = await unary(c, { text: "pt" });
    c.close();
    expect(u.res?.text).toBe("plain:pt");
    expect(u.trailers?.get("x-served-by")).toEqual(["plain"]);
    expect((await tlsCurl(port, "web.test", "web.test", "--http2")).out).toBe(`${CLIENT} 200 2`);
    expect(lastFor(r.records, "web.test")?.protocol).toBe("h1");
    expect((await tlsCurl(port, "web.test", "grpc.test", "--http2")).out).toStartWith("misdirected request\n 421");
  } finally {
    await r.s.shutdown({ delay: false });
    pod.stop(true);
  }
});

test("a certificate change while the port is split is one rotation: portico_tls_rotations_total goes up by exactly 1, one log line", async () => {
  const lines: string[] = [];
  const r = start(withGrpc(), {}, createLogger({ level: "info", format: "json", write: (l) => void lines.push(l) }));
  const rotatedLines = () => lines.filter((l) => JSON.parse(l).msg === "TLS certificates rotated").length;
  try {
    expect(r.s.httpsListener).toBe("split");
    const config = testConfig({ tlsCiphers: "ECDHE-ECDSA-AES128-GCM-SHA256" });
    const rotations = () => Number(/^portico_tls_rotations_total (\d+)$/m.exec(r.registry.expose())?.[1] ?? "NaN");
    const before = rotations();
    const pem = createCertificate({ subjectCN: "rotated", sans: ["web.test", "grpc.test"] });
    const bind = (host: string) => ({ host, secret: "web/tls", cert: pem.certPem, key: pem.keyPem, version: "1", ingress: "web/main" });
    const built = createTlsBuilder(config, silentLogger).build([bind("web.test"), bind("grpc.test")]);
    r.s.setTls(built.entries, built.fingerprint);
    // Both loopback listeners serve the new certificate (each rotates its own servers) ...
    await eventually(async () => (await peerCertificate(r.s.ports.https, "web.test")).cn === "rotated", 10_000, "Bun.serve's side rotated");
    await eventually(async () => (await peerCertificate(r.s.ports.https, "grpc.test")).cn === "rotated", 10_000, "node:http2's side rotated");
    await r.s.settled();
    // ... but the port's certificates changed once: counted once, logged once.
    expect(rotations() - before).toBe(1);
    expect(rotatedLines()).toBe(1);
  } finally {
    await r.s.shutdown({ delay: false });
  }
});

test("behind an outer front (--enable-ssl-passthrough, --use-proxy-protocol): hand-overs split, node, split, bun, node all succeed, each reported port one that listens", async () => {
  let table = withGrpc();
  // Only handshakes here: TLS ends in the listener the front would pipe to.
  const handler = (() => ({ fetch: () => new Response("ok") })) as unknown as HttpsListenerOptions["handler"];
  const l = createHttpsListener({
    config: { http2: true, http3: false, clientHeaderTimeoutMs: 60_000 }, log: silentLogger, hostname: "127.0.0.1", port: 0, handler,
    draining: () => false, drainMs: 50, split: { table: () => table, front: null },
  });
  const pem = createCertificate({ subjectCN: "front", sans: ["web.test", "grpc.test"] });
  const bind = (host: string) => ({ host, secret: "web/tls", cert: pem.certPem, key: pem.keyPem, version: "1", ingress: "web/main" });
  const built = createTlsBuilder(testConfig({ tlsCiphers: "ECDHE-ECDSA-AES128-GCM-SHA256" }), silentLogger).build([bind("web.test"), bind("grpc.test")]);
  const seen = new Set<number>();
  const blockers: { stop(closeActive?: boolean): void }[] = [];
  try {
    const everyHost = () => makeTable(ordinary(), { backend: makeBackend([echo.port], { scheme: "grpc" }) });
    for (const [t, kind] of [[withGrpc(), "split"], [everyHost(), "node"], [withGrpc(), "split"], [makeTable(ordinary()), "bun"], [everyHost(), "node"]] as const) {
      table = t;
      l.useListener(kind);
      // A Secret change after the hand-over (serve.ts setTls): the listener notes its port again.
      l.update(built.entries, built.fingerprint);
      expect(l.kind).toBe(kind);
      // A port of its own, shared with none of the listeners still draining: nothing ties the
      // next listener to a previous loopback port.
      expect(listeningSockets(l.port)).toBe(1);
      await l.settled();
      // Where the front sends each name, and the port reported, listen now.
      for (const name of ["web.test", "grpc.test"]) {
        expect((await peerCertificate(l.innerPort(name), name)).cn).toBe("front");
        seen.add(l.innerPort(name));
      }
      expect(listeningSockets(l.port)).toBeGreaterThan(0);
      seen.add(l.port);
      // A loopback port released since is anyone's: another program takes it here, so a later
      // hand-over that bound it again would fail (EADDRINUSE).
      for (const p of seen) {
        if (listeningSockets(p) > 0) continue;
        try {
          blockers.push(Bun.listen({ hostname: "127.0.0.1", port: p, socket: { data() {} } }));
        } catch {
          // Taken already (a connection of this test in TIME_WAIT): the kernel holds it anyway.
        }
      }
    }
  } finally {
    await l.stop(true);
    for (const b of blockers) b.stop(true);
  }
});

/** A PROXY v1 header naming `source`, then one HTTP/1.1 GET over TLS naming `sni`: status and body. */
function proxiedGet(port: number, source: string, sni: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const raw = netConnect({ host: "127.0.0.1", port });
    raw.on("error", reject);
    raw.on("connect", () => {
      raw.write(`PROXY TCP4 ${source} 127.0.0.1 40000 443\r\n`);
      const s = tlsConnect({ socket: raw, servername: sni, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"] });
      let got = "";
      s.on("secureConnect", () => s.write(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`));
      s.on("data", (d: Buffer) => void (got += d.toString("latin1")));
      s.on("error", reject);
      s.on("close", () => resolve({ status: Number(got.slice(9, 12)), body: got.slice(got.indexOf("\r\n\r\n") + 4) }));
    });
  });
}

test("--use-proxy-protocol and the split share one front: each side sees the client the PROXY header names", async () => {
  const r = start(withGrpc(), { useProxyProtocol: true, proxyProtocolTrusted: ["127.0.0.0/8"] });
  try {
    expect(r.s.httpsListener).toBe("split");
    const port = r.s.ports.https;
    // Bun.serve's side (a gRPC host there is misdirected) and node:http2's, each keyed by its own loopback port.
    expect(await proxiedGet(port, "203.0.113.7", "web.test", "web.test")).toEqual({ status: 200, body: "203.0.113.7" });
    expect((await proxiedGet(port, "203.0.113.8", "web.test", "grpc.test")).status).toBe(421);
    expect(await proxiedGet(port, "203.0.113.9", "grpc.test", "web.test")).toEqual({ status: 200, body: "203.0.113.9" });
  } finally {
    await r.s.shutdown({ delay: false });
  }
});

// --gateway-ports: a Gateway's own HTTPS port is fitted to its own table as the shared port is
// (serving/gateway-ports.ts), so a GRPCRoute there splits that port by SNI too.
describe("a Gateway's own HTTPS port (--gateway-ports) with a GRPCRoute beside an HTTPRoute: split by SNI", () => {
  const ownPortTable = (port: number): RouteTable => {
    const routes = gatewayTable({
      listeners: [{ name: "https" }],
      services: { web: web.port, echo: echo.port },
      routes: [
        { kind: "HTTPRoute", name: "web", listener: "https", hostnames: ["web.test"], service: "web" },
        { kind: "GRPCRoute", name: "rpc", listener: "https", hostnames: ["grpc.test"], service: "echo" },
      ],
    }).gateway!;
    return Object.freeze({ ...makeTable([]), gatewayPorts: new Map([[port, { gateway: `${GATEWAY_NS}/split`, declared: 443, https: true, routes }]]) });
  };
  const cert = createCertificate({ subjectCN: "own", sans: ["web.test", "grpc.test"] });

  for (const proxyProtocol of [false, true]) {
    test(proxyProtocol ? "behind its --use-proxy-protocol front: the front reads the ClientHello after the PROXY header" : "with the split's own front", async () => {
      const config = testConfig({ tlsCiphers: "ECDHE-ECDSA-AES128-GCM-SHA256", ...(proxyProtocol ? { useProxyProtocol: true, proxyProtocolTrusted: ["127.0.0.0/8"] } : {}) });
      const port = freePort();
      const table = ownPortTable(port);
      const tls = { entries: [{ cert: cert.certPem, key: cert.keyPem, ciphers: config.tlsCiphers, secureOptions: 0 }], fingerprint: "own" };
      const l = testGatewayPorts(config, () => table, () => tls);
      try {
        l.fit(table);
        expect(l.ports.get(port)).toEqual({ https: true });
        if (proxyProtocol) {
          // Bun.serve's side answers a gRPC host 421 (only it does); node:http2's serves every host.
          expect(await proxiedGet(port, "203.0.113.7", "web.test", "web.test")).toEqual({ status: 200, body: "203.0.113.7" });
          expect((await proxiedGet(port, "203.0.113.8", "web.test", "grpc.test")).status).toBe(421);
          expect(await proxiedGet(port, "203.0.113.9", "grpc.test", "web.test")).toEqual({ status: 200, body: "203.0.113.9" });
          return;
        }
        const c = grpcClient(port, "grpc.test");
        const u = await unary(c, { text: "own" });
        c.close();
        expect(u.err).toBeNull();
        expect(u.res?.text).toBe("plain:own");
        expect(u.trailers?.get("x-served-by")).toEqual(["plain"]);
        expect((await tlsCurl(port, "web.test", "web.test", "--http2")).out).toBe(`${CLIENT} 200 2`);
        expect((await tlsCurl(port, "web.test", "grpc.test", "--http2")).out).toBe("misdirected request\n 421 2");
        expect((await tlsCurl(port, "grpc.test", "web.test", "--http2")).out).toBe(`${CLIENT} 200 2`);
      } finally {
        await l.stop(true);
      }
    });
  }
});

test("no gRPC route: Bun.serve binds the HTTPS port itself, no front", async () => {
  const r = start(makeTable(ordinary()));
  try {
    expect(r.s.httpsListener).toBe("bun");
    expect((await tlsCurl(r.s.ports.https, "web.test", "web.test", "--http2")).out).toBe(`${CLIENT} 200 2`);
  } finally {
    await r.s.shutdown({ delay: false });
  }
});

test("a gRPC default backend: every host needs node:http2, so node:http2 takes the whole port (no front)", async () => {
  const r = start(makeTable(ordinary(), { backend: makeBackend([echo.port], { scheme: "grpc" }) }));
  try {
    expect(r.s.httpsListener).toBe("node");
    expect((await tlsCurl(r.s.ports.https, "web.test", "web.test", "--http2")).out).toBe(`${CLIENT} 200 2`);
    expect(lastFor(r.records, "web.test")?.protocol).toBe("h2");
  } finally {
    await r.s.shutdown({ delay: false });
  }
});
