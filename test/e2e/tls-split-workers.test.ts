// The HTTPS port split by SNI (serving/tls-split.ts) in the real process with --workers 2: each
// worker runs its own front on the port (SO_REUSEPORT spreads new connections over them), and
// in every worker a gRPC call to the gRPC host gets its trailers from node:http2, an ordinary
// host is answered by Bun.serve with the client's address kept, and a request for the gRPC host
// on an ordinary host's connection is 421 Misdirected Request (RFC 9110 §15.5.20).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect as netConnect } from "node:net";
import { connect as tlsConnect, type ConnectionOptions } from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { echoClient, startEchoServer, unary, type EchoServer } from "../grpc/server.ts";
import { startPortico, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";
import { eventually } from "../wait.ts";

const N = "nginx.ingress.kubernetes.io/";
const webPod = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => new Response(`xff=${req.headers.get("x-forwarded-for")}`) });
let echo: EchoServer;
let dir: string;
let p: Portico;

beforeAll(async () => {
  echo = await startEchoServer(undefined, "rpc");
  dir = mkdtempSync(join(tmpdir(), "portico-tls-split-"));
  const objs = [
    ingressClass(),
    service("shop", "web"),
    slice("shop", "web", [webPod.port as number]),
    service("shop", "rpc"),
    slice("shop", "rpc", [echo.port]),
    ingress("shop", "web", [{ host: "web.test", paths: [{ path: "/", service: "web" }] }], { annotations: { [`${N}ssl-redirect`]: "false" } }),
    ingress("shop", "rpc", [{ host: "rpc.test", paths: [{ path: "/", service: "rpc" }] }], { annotations: { [`${N}backend-protocol`]: "GRPC" } }),
  ];
  writeFileSync(join(dir, "all.yaml"), yamlDocs(objs as Record<string, unknown>[]));
  p = await startPortico(["--manifests", dir, "--access-log", "off", "--workers", "2", "--client-header-timeout", "1s"]);
});
afterAll(async () => {
  await p?.stop("SIGKILL");
  await echo?.stop();
  void webPod.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

/** One HTTP/1.1 GET over a new TLS connection naming `servername`, from `from`: status and body. */
function tlsGet(port: number, servername: string, host: string, from: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const opts: ConnectionOptions & { localAddress: string } = { host: "127.0.0.1", port, localAddress: from, servername, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"] };
    const s = tlsConnect(opts);
    const timer = setTimeout(() => (s.destroy(), reject(new Error("no answer in 10 s"))), 10_000);
    let raw = "";
    s.on("secureConnect", () => s.write(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`));
    s.on("data", (d: Buffer) => void (raw += d.toString("latin1")));
    s.on("error", (e) => (clearTimeout(timer), reject(e)));
    s.on("close", () => {
      clearTimeout(timer);
      resolve({ status: Number(raw.slice(9, 12)), body: raw.slice(raw.indexOf("\r\n\r\n") + 4) });
    });
  });
}

test("every worker splits the port: gRPC with trailers, ordinary hosts with the client's address, 421 for a misdirected request", async () => {
  const port = p.ports.https;
  await eventually(async () => (await tlsGet(port, "web.test", "web.test", "127.0.0.2")).status === 200, 10_000);
  // New connections each: SO_REUSEPORT spreads them over both workers' fronts.
  for (let i = 0; i < 8; i++) {
    const from = `127.0.0.${10 + i}`;
    expect(await tlsGet(port, "web.test", "web.test", from)).toEqual({ status: 200, body: `xff=${from}` });
    const mis = await tlsGet(port, "web.test", "rpc.test", from);
    expect(mis).toEqual({ status: 421, body: "misdirected request\n" });
    const c = echoClient(port, "rpc.test");
    const u = await unary(c, { text: `n${i}` });
    c.close();
    expect(u.err).toBeNull();
    expect(u.res?.text).toBe(`rpc:n${i}`);
    expect(u.trailers?.get("x-served-by")).toEqual(["rpc"]);
  }
});

/** Sends raw bytes to the HTTPS port; resolves when Portico closes the connection (or a 20 s guard, reported as not closed by it). */
function rawSession(port: number, chunks: Uint8Array[]): Promise<boolean> {
  return new Promise((resolve) => {
    const s = netConnect({ host: "127.0.0.1", port });
    let guard = false;
    const timer = setTimeout(() => ((guard = true), s.destroy()), 20_000);
    s.on("connect", () => {
      for (const c of chunks) s.write(c);
    });
    s.on("data", () => {});
    s.on("error", () => {});
    s.on("close", () => (clearTimeout(timer), resolve(!guard)));
  });
}

/** A TLS handshake record header and ClientHello header claiming `len` bytes in a record of `recordLen`. */
function helloHeader(len: number, recordLen: number): Uint8Array {
  return new Uint8Array([22, 3, 1, (recordLen >> 8) & 0xff, recordLen & 0xff, 1, (len >> 16) & 0xff, (len >> 8) & 0xff, len & 0xff]);
}

test("hostile first bytes on the split port are closed cleanly, and every worker keeps serving", async () => {
  const port = p.ports.https;
  // Not TLS: handed to node:http2 (no server name), whose TLS stack refuses it.
  expect(await rawSession(port, [new TextEncoder().encode("GET / HTTP/1.1\r\nHost: web.test\r\n\r\n")])).toBe(true);
  // Truncated: closed by the front at --client-header-timeout.
  expect(await rawSession(port, [helloHeader(500, 504), new Uint8Array(100)])).toBe(true);
  // More than the front holds for a ClientHello (tls/client-hello.ts MAX_BUFFERED_BYTES).
  expect(await rawSession(port, [helloHeader(1 << 20, 16_384), new Uint8Array(16_380)])).toBe(true);
  const tiny = [1, 0, 0x3e, 0x80, ...new Array<number>(5_000).fill(0)].map((b) => new Uint8Array([22, 3, 1, 0, 1, b]));
  expect(await rawSession(port, tiny)).toBe(true);
  for (let i = 0; i < 4; i++) expect(await tlsGet(port, "web.test", "web.test", "127.0.0.3")).toEqual({ status: 200, body: "xff=127.0.0.3" });
  expect(p.proc.exitCode).toBeNull();
});
