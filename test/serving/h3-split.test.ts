// --http3 while the HTTPS port is split by SNI (serving/tls-split.ts, docs/design.md "HTTP/2 and
// gRPC"): an HTTP/3-only Bun.serve holds the public UDP port beside the split's TCP front, with
// the same certificates and the Bun.serve side's handler. Through serveTraffic as a process
// runs it; Bun's own fetch (`protocol: "http3"`) is the QUIC client, as in one-listener.test.ts.
// Loopback only, bounded counts and waits.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInstruments } from "../../src/admin/instruments.ts";
import { Registry } from "../../src/admin/registry.ts";
import type { Config } from "../../src/config/types.ts";
import { createLogger, silentLogger, type Logger } from "../../src/log/logger.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { serveOptions } from "../../src/proxy/pipeline/listener.ts";
import { createHttpsListener } from "../../src/serving/https.ts";
import { serveTraffic, type Serving } from "../../src/serving/serve.ts";
import { createTlsBuilder } from "../../src/serving/tls.ts";
import type { TlsEntry } from "../../src/tls/sni.ts";
import { lookup } from "../../src/table/lookup.ts";
import type { RouteTable } from "../../src/table/types.ts";
import { freePort } from "../e2e/harness.ts";
import { curl } from "../http2/helpers.ts";
import { startEchoServer, type EchoServer } from "../grpc/server.ts";
import { makeBackend, makeTable, testConfig } from "../proxy/helpers.ts";
import { rawBackend, type RawBackend } from "../proxy/raw.ts";
import { createCertificate } from "../tls/pki.ts";
import { eventually } from "../wait.ts";

let echo: EchoServer;
let web: RawBackend;
beforeAll(async () => {
  echo = await startEchoServer(undefined, "plain");
  // The route's answer names the request's path, so an answer proves it went through the route.
  web = await rawBackend((req) => {
    const body = `web ${req.line.split(" ")[1]}`;
    return `HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
  });
});
afterAll(async () => {
  await echo.stop();
  await web.stop();
});

const ordinary = () => ({ host: "web.test", backend: makeBackend([web.port]) });
const grpcRoute = () => ({ host: "grpc.test", backend: makeBackend([echo.port], { scheme: "grpc" as const }) });
const split = () => makeTable([ordinary(), grpcRoute()]);
const bunOnly = () => makeTable([ordinary()]);
// A gRPC default backend answers every host: node:http2 alone holds the port (everyHostNeedsNode).
const nodeOnly = () => makeTable([ordinary(), grpcRoute()], { backend: makeBackend([echo.port], { scheme: "grpc" as const }) });

interface Running {
  readonly s: Serving;
  readonly errors: string[];
  setTable(t: RouteTable): void;
}

function start(t: RouteTable, over: Partial<Config> = {}): Running {
  let table = t;
  const errors: string[] = [];
  const log: Logger = createLogger({
    level: "error", format: "json",
    write: (l) => void errors.push(l),
  });
  const config = testConfig({ httpPort: freePort(), httpsPort: freePort(), tlsCiphers: "ECDHE-ECDSA-AES128-GCM-SHA256", http3: true, ...over });
  const s = serveTraffic({
    config, log, inst: createInstruments(new Registry(), { version: "t" }), table: () => table,
    tls: createTlsBuilder(config, log).build([]), ports: "alone",
  });
  return { s, errors, setTable: (next) => ((table = next), s.tableChanged()) };
}

/** One request over HTTP/3 (QUIC) to 127.0.0.1, Host `host`; certificates not verified. */
function h3(port: number, host: string, path = "/", init: RequestInit = {}): Promise<Response> {
  return fetch(`https://127.0.0.1:${port}${path}`, {
    ...init, protocol: "http3", headers: { host, ...(init.headers as Record<string, string> | undefined) },
    tls: { rejectUnauthorized: false }, signal: AbortSignal.timeout(4_000),
  } as RequestInit);
}

async function h3Answer(port: number, host: string, path = "/"): Promise<string> {
  const r = await h3(port, host, path);
  return `${r.status} ${await r.text()}`;
}

/** An answer over TCP, its SNI `sni` and Host `host`: the status line, then the header block and body as curl writes them. */
async function tcpHead(port: number, sni: string, host: string, version: "--http1.1" | "--http2", path = "/"): Promise<{ status: number; altSvc: string | null; body: string }> {
  const got = await curl(["-k", version, "-D", "-", "--resolve", `${sni}:${port}:127.0.0.1`, "-H", `host: ${host}`, `https://${sni}:${port}${path}`]);
  const end = got.out.indexOf("\r\n\r\n");
  const head = got.out.slice(0, end);
  const status = Number(/^HTTP\/[\d.]+ (\d{3})/.exec(head)?.[1] ?? "NaN");
  const alt = head.split("\r\n").filter((l) => /^alt-svc:/i.test(l)).map((l) => l.slice(l.indexOf(":") + 1).trim());
  return { status, altSvc: alt.length === 0 ? null : alt.join(", "), body: got.out.slice(end + 4) };
}

test("split by SNI with --http3: an ordinary host answers over QUIC and is advertised on its TCP answers; a gRPC host is not, and over QUIC gets the Bun.serve side's 421", async () => {
  const r = start(split());
  const port = r.s.ports.https;
  try {
    expect(r.s.httpsListener).toBe("split");
    expect(await h3Answer(port, "web.test", "/over-h3")).toBe("200 web /over-h3");

    // The Bun.serve side (SNI web.test) advertises the public port, never its loopback one
    // (RFC 7838 §3: the value Bun.serve itself writes when it owns both ports).
    for (const v of ["--http1.1", "--http2"] as const) {
      const a = await tcpHead(port, "web.test", "web.test", v, "/tcp");
      expect(a).toEqual({ status: 200, altSvc: `h3=":${port}"; ma=86400`, body: "web /tcp" });
      // Its 421 for the gRPC host (Host other than the SNI) tells no one to move there.
      const mis = await tcpHead(port, "web.test", "grpc.test", v);
      expect(mis).toEqual({ status: 421, altSvc: null, body: "misdirected request\n" });
    }
    // node:http2's side (SNI grpc.test) advertises nothing: a gRPC host stays on TCP.
    const g = await tcpHead(port, "grpc.test", "grpc.test", "--http2");
    expect(g.status).not.toBe(421);
    expect(g.altSvc).toBeNull();
    // A client without SNI goes to node:http2 as well, which advertises nothing for any host.
    const noSni = await curl(["-k", "--http2", "-D", "-", "-o", "/dev/null", "-H", "host: web.test", `https://127.0.0.1:${port}/`]);
    expect(noSni.out).toStartWith("HTTP/2 200");
    expect(noSni.out.toLowerCase()).not.toContain("alt-svc");

    // Over QUIC the gRPC host gets what the Bun.serve side answers it (RFC 9110 §15.5.20) ...
    expect(await h3Answer(port, "grpc.test")).toBe("421 misdirected request\n");
    // ... and a gRPC call the Trailers-Only UNAVAILABLE clients retry on, never relayed.
    const calls = echo.seen.length;
    const call = await h3(port, "grpc.test", "/echo.Echo/Unary", { method: "POST", headers: { "content-type": "application/grpc", te: "trailers" }, body: new Uint8Array(5) });
    expect(call.status).toBe(200);
    expect(call.headers.get("grpc-status")).toBe("14");
    expect(call.headers.get("grpc-message")).toBe("misdirected request: retry on a new connection");
    await call.arrayBuffer();
    expect(echo.seen.length).toBe(calls);
    expect(r.errors).toEqual([]);
  } finally {
    await r.s.shutdown({ delay: false });
  }
  // Stopped on shutdown: the UDP port is free for a listener without SO_REUSEPORT.
  const probe = Bun.serve({ hostname: "127.0.0.1", port, tls: createTlsBuilder(testConfig({ tlsCiphers: "ECDHE-ECDSA-AES128-GCM-SHA256" }), silentLogger).build([]).entries as TlsEntry[], http1: false, http3: true, fetch: () => new Response("probe") } as unknown as Parameters<typeof Bun.serve>[0]);
  await probe.stop(true);
});

test("a certificate change while split is served over QUIC too", async () => {
  const dir = join(tmpdir(), `portico-h3split-${process.pid}`);
  const ca = createCertificate({ subjectCN: "h3 test CA", isCA: true });
  const leaf = createCertificate({ subjectCN: "rotated", sans: ["127.0.0.1", "web.test"], issuer: { cert: ca.certPem, key: ca.keyPem } });
  writeFileSync(`${dir}-ca.pem`, ca.certPem);
  const r = start(split());
  const port = r.s.ports.https;
  // Bun's HTTP/3 client verifies only against its trust store (it refuses `ca` and
  // `serverName` in `tls`): a child process trusts the test CA through NODE_EXTRA_CA_CERTS.
  const verified = async (): Promise<string> => {
    const code = `const r = await fetch("https://127.0.0.1:${port}/verified", { protocol: "http3", headers: { host: "web.test" }, signal: AbortSignal.timeout(4000) }).then(async (r) => r.status + " " + await r.text(), (e) => "failed " + e.name); console.log(r)`;
    const p = Bun.spawn([process.execPath, "-e", code], { env: { ...process.env, NODE_EXTRA_CA_CERTS: `${dir}-ca.pem` }, stdout: "pipe", stderr: "ignore" });
    const [out] = await Promise.all([new Response(p.stdout).text(), p.exited]);
    return out.trim();
  };
  try {
    expect(r.s.httpsListener).toBe("split");
    // The control: the generated default certificate is not trusted.
    expect(await verified()).toStartWith("failed");
    const built = createTlsBuilder(testConfig({ tlsCiphers: "ECDHE-ECDSA-AES128-GCM-SHA256" }), silentLogger).build([]);
    // The default entry (no server name: the client connects by address) now the CA's leaf.
    const entries = built.entries.map((e, i) => (i === 0 ? { ...e, cert: leaf.certPem, key: leaf.keyPem } : e));
    r.s.setTls(entries, `${built.fingerprint}+rotated`);
    await eventually(async () => (await verified()) === "200 web /verified", 20_000, "QUIC serves the new certificate");
    await r.s.settled();
    expect(await verified()).toBe("200 web /verified");
    expect(r.errors).toEqual([]);
  } finally {
    await r.s.shutdown({ delay: false });
    rmSync(`${dir}-ca.pem`, { force: true });
  }
});

test("hand-overs keep QUIC served while Bun.serve serves any host: split → Bun.serve → split → node:http2 (none) → split", async () => {
  const r = start(split());
  const port = r.s.ports.https;
  const answers = (path: string) => async () => (await h3Answer(port, "web.test", path)) === `200 web ${path}`;
  try {
    expect(r.s.httpsListener).toBe("split");
    expect(await h3Answer(port, "web.test", "/split")).toBe("200 web /split");

    // The gRPC route goes: Bun.serve alone takes the port, its own QUIC beside the split's.
    r.setTable(bunOnly());
    expect(r.s.httpsListener).toBe("bun");
    await eventually(answers("/bun"), 15_000, "QUIC after the hand-over to Bun.serve");
    await r.s.settled();
    expect(await h3Answer(port, "web.test", "/bun")).toBe("200 web /bun");
    // Bun.serve advertises it itself now.
    expect((await tcpHead(port, "web.test", "web.test", "--http1.1")).altSvc).toBe(`h3=":${port}"; ma=86400`);

    // It comes back: split again, the split's QUIC listener joining Bun.serve's UDP port.
    r.setTable(split());
    expect(r.s.httpsListener).toBe("split");
    await eventually(answers("/split-again"), 15_000, "QUIC after the hand-over back to the split");
    await r.s.settled();
    expect(await h3Answer(port, "web.test", "/split-again")).toBe("200 web /split-again");
    expect(await h3Answer(port, "grpc.test")).toBe("421 misdirected request\n");

    // Every host needs node:http2: no QUIC at all (QUIC has no Bun.serve host to serve).
    r.setTable(nodeOnly());
    expect(r.s.httpsListener).toBe("node");
    await r.s.settled();
    await expect(h3(port, "web.test", "/node")).rejects.toThrow();
    expect((await tcpHead(port, "web.test", "web.test", "--http1.1", "/node")).altSvc).toBeNull();

    r.setTable(split());
    expect(r.s.httpsListener).toBe("split");
    await eventually(answers("/split-third"), 15_000, "QUIC after the hand-over from node:http2 to the split");
    expect(r.errors).toEqual([]);
  } finally {
    await r.s.shutdown({ delay: false });
  }
});

test("a split started on port 0 serves QUIC and advertises it on the port number its front bound", async () => {
  const table = split();
  const handler = createProxyHandler({ config: testConfig(), table: () => table, lookup, log: silentLogger, scheme: "https" });
  const l = createHttpsListener({
    config: { http2: true, http3: true, clientHeaderTimeoutMs: 60_000 }, log: silentLogger, hostname: "127.0.0.1", port: 0,
    handler: () => serveOptions(handler), draining: () => false, split: { table: () => table, front: { helloTimeoutMs: 5_000, connectTimeoutMs: 5_000 } },
  });
  l.useListener("split");
  const tls = createTlsBuilder(testConfig({ tlsCiphers: "ECDHE-ECDSA-AES128-GCM-SHA256" }), silentLogger).build([]);
  l.update(tls.entries, tls.fingerprint);
  try {
    expect(l.kind).toBe("split");
    expect(await h3Answer(l.port, "web.test", "/zero")).toBe("200 web /zero");
    expect((await tcpHead(l.port, "web.test", "web.test", "--http1.1")).altSvc).toBe(`h3=":${l.port}"; ma=86400`);
  } finally {
    await l.stop(true);
  }
});
