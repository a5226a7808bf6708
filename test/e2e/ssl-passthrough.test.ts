// --enable-ssl-passthrough through the real process (--manifests): ingress-nginx's TCP proxy
// (pkg/tcpproxy/tcp.go) reads the ClientHello, sends a connection whose SNI names a host with
// nginx.ingress.kubernetes.io/ssl-passthrough to that host's `/` backend untouched, and every
// other connection to nginx (nginx.go setupSSLProxy), which still sees the client's address
// (there by the PROXY protocol). Its e2e test (test/e2e/settings/ssl_passthrough.go): the
// annotated host is answered by the backend's own TLS server, a host without the annotation by
// nginx. Without the flag no proxy runs (nginx.go: setupSSLProxy only when EnableSSLPassthrough)
// and the annotation changes nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect as netConnect } from "node:net";
import { connect as tlsConnect, type ConnectionOptions } from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCertificate } from "../tls/pki.ts";
import { startPortico, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, tlsSecret, yamlDocs } from "./objects.ts";
import { eventually } from "../wait.ts";

const N = "nginx.ingress.kubernetes.io/";
// Larger than any socket buffer: the copy must hold back and resume (passthrough.ts send/flush).
const BIG = new Uint8Array(8 * 1024 * 1024).map((_, i) => (i * 7) & 0xff);
const passPem = createCertificate({ subjectCN: "pass-backend", sans: ["pass.test"] });
const webPem = createCertificate({ subjectCN: "portico-web", sans: ["web.test"] });

// The pod that terminates TLS itself: its own certificate, and it says what it saw.
const tlsPod = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  tls: { cert: passPem.certPem, key: passPem.keyPem },
  fetch: (req) => (new URL(req.url).pathname === "/big" ? new Response(BIG) : new Response(`pod saw ${new URL(req.url).pathname}`)),
});
// A plain HTTP pod behind a host Portico terminates: it echoes the client address headers.
const webPod = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: async (req) =>
    req.method === "POST"
      ? new Response(`got ${new Uint8Array(await req.arrayBuffer()).reduce((a, b) => (a + b) % 65_521, 0)}/${req.headers.get("content-length")}`)
      : new Response(`xff=${req.headers.get("x-forwarded-for")} xri=${req.headers.get("x-real-ip")}`),
});

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "portico-passthrough-"));
  const objs = [
    ingressClass(),
    service("argo", "pass"),
    slice("argo", "pass", [tlsPod.port as number]),
    service("shop", "web"),
    slice("shop", "web", [webPod.port as number]),
    tlsSecret("shop", "web-tls", webPem.certPem, webPem.keyPem),
    ingress("argo", "pass", [{ host: "pass.test", paths: [{ path: "/", service: "pass" }, { path: "/api", service: "pass" }] }], { annotations: { [`${N}ssl-passthrough`]: "true" } }),
    ingress("shop", "web", [{ host: "web.test", paths: [{ path: "/", service: "web" }] }], { tls: [{ hosts: ["web.test"], secretName: "web-tls" }] }),
  ];
  writeFileSync(join(dir, "all.yaml"), yamlDocs(objs as Record<string, unknown>[]));
});
afterAll(() => {
  void tlsPod.stop(true);
  void webPod.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

/**
 * One HTTP/1.1 GET over TLS with this SNI (none when null), from `from` (another loopback
 * address, so the test can tell the client's address from Portico's own loopback hop): the
 * certificate's CN and the answer's body.
 */
function tlsGet(port: number, servername: string | null, host: string, from = "127.0.0.2"): Promise<{ cn: string; body: string }> {
  return new Promise((resolve, reject) => {
    const opts: ConnectionOptions & { localAddress: string } = { host: "127.0.0.1", port, localAddress: from, rejectUnauthorized: false };
    if (servername !== null) opts.servername = servername;
    const s = tlsConnect(opts);
    const timer = setTimeout(() => (s.destroy(), reject(new Error("no answer in 10 s"))), 10_000);
    let raw = "";
    let cn = "";
    s.on("secureConnect", () => {
      cn = String(s.getPeerCertificate().subject?.CN ?? "");
      s.write(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    });
    s.on("data", (d: Buffer) => void (raw += d.toString("latin1")));
    s.on("error", (e) => (clearTimeout(timer), reject(e)));
    s.on("close", () => {
      clearTimeout(timer);
      resolve({ cn, body: raw.slice(raw.indexOf("\r\n\r\n") + 4) });
    });
  });
}

/** One raw exchange over TLS with this SNI: everything the server sent until it closed. */
function tlsRaw(port: number, servername: string, head: string, body?: Uint8Array): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: "127.0.0.1", port, servername, rejectUnauthorized: false });
    const timer = setTimeout(() => (s.destroy(), reject(new Error("no answer in 20 s"))), 20_000);
    const got: Buffer[] = [];
    s.on("secureConnect", () => {
      s.write(head);
      if (body) s.write(body);
    });
    s.on("data", (d: Buffer) => void got.push(d));
    s.on("error", (e) => (clearTimeout(timer), reject(e)));
    s.on("close", () => (clearTimeout(timer), resolve(Buffer.concat(got))));
  });
}

/** Sends raw bytes to the HTTPS port; resolves when Portico closes the connection (what it sent back). */
function rawSession(port: number, chunks: Uint8Array[]): Promise<{ closedByServer: boolean; got: number }> {
  return new Promise((resolve) => {
    const s = netConnect({ host: "127.0.0.1", port });
    let got = 0;
    // The test never closes it: only Portico can end this session (or the 20 s guard, reported as not closed by it).
    let guard = false;
    const timer = setTimeout(() => ((guard = true), s.destroy()), 20_000);
    s.on("connect", () => {
      for (const c of chunks) s.write(c);
    });
    s.on("data", (d: Buffer) => void (got += d.length));
    s.on("error", () => {});
    s.on("close", () => (clearTimeout(timer), resolve({ closedByServer: !guard, got })));
  });
}

/** A TLS record header and handshake header claiming a ClientHello of `len` bytes. */
function helloHeader(len: number, recordLen: number): Uint8Array {
  return new Uint8Array([22, 3, 1, (recordLen >> 8) & 0xff, recordLen & 0xff, 1, (len >> 16) & 0xff, (len >> 8) & 0xff, len & 0xff]);
}

describe("with --enable-ssl-passthrough", () => {
  let p: Portico;
  beforeAll(async () => {
    p = await startPortico(["--manifests", dir, "--access-log", "off", "--enable-ssl-passthrough", "--client-header-timeout", "1s"]);
  });
  afterAll(async () => {
    await p?.stop("SIGKILL");
  });

  test("the annotated host's TLS goes to the pod untouched: the pod's certificate, the pod's answer", async () => {
    await eventually(async () => (await tlsGet(p.ports.https, "pass.test", "pass.test").catch(() => ({ cn: "" }))).cn === "pass-backend", 10_000);
    expect(await tlsGet(p.ports.https, "pass.test", "pass.test")).toEqual({ cn: "pass-backend", body: "pod saw /" });
  });

  test("another host is terminated by Portico as before, and the pod sees the client's address, not Portico's loopback hop", async () => {
    await eventually(async () => (await tlsGet(p.ports.https, "web.test", "web.test")).cn === "portico-web", 10_000);
    expect(await tlsGet(p.ports.https, "web.test", "web.test", "127.0.0.2")).toEqual({ cn: "portico-web", body: "xff=127.0.0.2 xri=127.0.0.2" });
    expect(await tlsGet(p.ports.https, "web.test", "web.test", "127.0.0.3")).toEqual({ cn: "portico-web", body: "xff=127.0.0.3 xri=127.0.0.3" });
  });

  test("large bodies cross the front intact both ways: 8 MiB from a passed-through pod, 4 MiB up through the terminated path", async () => {
    const down = await tlsRaw(p.ports.https, "pass.test", `GET /big HTTP/1.1\r\nHost: pass.test\r\nConnection: close\r\n\r\n`);
    const body = down.subarray(down.indexOf("\r\n\r\n") + 4);
    expect(body.length).toBe(BIG.length);
    expect(Buffer.compare(body, Buffer.from(BIG))).toBe(0);
    const up = new Uint8Array(4 * 1024 * 1024).map((_, i) => (i * 13) & 0xff);
    const sum = up.reduce((a, b) => (a + b) % 65_521, 0);
    const head = `POST / HTTP/1.1\r\nHost: web.test\r\nContent-Length: ${up.length}\r\nConnection: close\r\n\r\n`;
    const answer = (await tlsRaw(p.ports.https, "web.test", head, up)).toString("latin1");
    expect(answer.slice(answer.indexOf("\r\n\r\n") + 4)).toBe(`got ${sum}/${up.length}`);
  });

  test("plain HTTP to the annotated host is proxied to the pod over HTTPS (template.go buildProxyPass: https:// for an SSLPassthrough backend)", async () => {
    const res = await fetch(`${p.http}/x`, { headers: { host: "pass.test" } });
    expect([res.status, await res.text()]).toEqual([200, "pod saw /x"]);
  });

  test("a path other than / of a passthrough host is named in a diagnostic (controller.go: Ignoring SSL Passthrough for location)", async () => {
    const line = await p.waitForLine(/"reason":"SslPassthroughPath"/);
    expect(JSON.parse(line).err).toContain('"/api" is served only over plain HTTP');
  });

  test("hostile ClientHellos are closed cleanly and the port keeps serving", async () => {
    const https = p.ports.https;
    // Not TLS at all: handed to the terminating listener, which refuses it.
    expect((await rawSession(https, [new TextEncoder().encode("GET / HTTP/1.1\r\nHost: web.test\r\n\r\n")])).closedByServer).toBe(true);
    // Garbage that looks like a handshake record of the wrong version.
    expect((await rawSession(https, [new Uint8Array([22, 9, 9, 0, 5, 1, 2, 3, 4, 5])])).closedByServer).toBe(true);
    // Truncated: a header promising more than ever comes; closed at --client-header-timeout.
    expect((await rawSession(https, [helloHeader(500, 504), new Uint8Array(100)])).closedByServer).toBe(true);
    // Huge: a ClientHello claiming 1 MB, and then more bytes than Portico holds for one.
    expect((await rawSession(https, [helloHeader(1 << 20, 16_384), new Uint8Array(16_380)])).closedByServer).toBe(true);
    // Thousands of one-byte records (RFC 8446 §5.1 allows fragmenting): more bytes than a ClientHello may take.
    const tiny = [1, 0, 0x3e, 0x80, ...new Array<number>(5_000).fill(0)].map((b) => new Uint8Array([22, 3, 1, 0, 1, b]));
    expect((await rawSession(https, tiny)).closedByServer).toBe(true);
    // No SNI: terminated with Portico's default certificate (the pod is never asked).
    const noSni = await tlsGet(https, null, "web.test");
    expect(noSni.cn).not.toBe("pass-backend");
    // Still serving both kinds.
    expect(await tlsGet(https, "pass.test", "pass.test")).toEqual({ cn: "pass-backend", body: "pod saw /" });
    expect(await tlsGet(https, "web.test", "web.test")).toEqual({ cn: "portico-web", body: "xff=127.0.0.2 xri=127.0.0.2" });
    expect(p.proc.exitCode).toBeNull();
  });
});

describe("with --enable-ssl-passthrough, --workers 2 and a gRPC route (the terminating listener split by SNI)", () => {
  let p: Portico;
  let grpcDir: string;
  beforeAll(async () => {
    // A gRPC route on one host splits the terminating listener by SNI (serving/tls-split.ts):
    // the front sends web.test to the loopback Bun.serve and rpc.test to node:http2, and each
    // listener's peers must name its own loopback port, or the client address would be lost.
    grpcDir = mkdtempSync(join(tmpdir(), "portico-passthrough-grpc-"));
    const grpc = ingress("shop", "rpc", [{ host: "rpc.test", paths: [{ path: "/", service: "web" }] }], { annotations: { [`${N}backend-protocol`]: "GRPC" } });
    writeFileSync(join(grpcDir, "all.yaml"), `${readFileSync(join(dir, "all.yaml"), "utf8")}\n---\n${yamlDocs([grpc as Record<string, unknown>])}`);
    p = await startPortico(["--manifests", grpcDir, "--access-log", "off", "--enable-ssl-passthrough", "--workers", "2"]);
  });
  afterAll(async () => {
    await p?.stop("SIGKILL");
    rmSync(grpcDir, { recursive: true, force: true });
  });

  test("every worker passes the annotated host through and keeps the client's address for the others", async () => {
    await eventually(async () => (await tlsGet(p.ports.https, "web.test", "web.test")).cn === "portico-web", 10_000);
    // New connections each: SO_REUSEPORT spreads them over both workers' fronts.
    for (let i = 0; i < 8; i++) {
      expect(await tlsGet(p.ports.https, "pass.test", "pass.test")).toEqual({ cn: "pass-backend", body: "pod saw /" });
      expect(await tlsGet(p.ports.https, "web.test", "web.test", `127.0.0.${10 + i}`)).toEqual({ cn: "portico-web", body: `xff=127.0.0.${10 + i} xri=127.0.0.${10 + i}` });
    }
  });
});

describe("without --enable-ssl-passthrough", () => {
  test("the annotation is ignored with a diagnostic, and Portico terminates the host's TLS itself", async () => {
    const p = await startPortico(["--manifests", dir, "--access-log", "off"]);
    try {
      const line = await p.waitForLine(/ssl-passthrough is ignored/);
      expect(JSON.parse(line)).toMatchObject({ namespace: "argo", name: "pass", reason: "UnsupportedAnnotation" });
      // Terminated by Portico (its default certificate), then sent to the pod over HTTPS, as
      // ingress-nginx does for a backend marked SSLPassthrough with or without the flag.
      const got = await tlsGet(p.ports.https, "pass.test", "pass.test");
      expect(got.cn).not.toBe("pass-backend");
      expect(got.body).toBe("pod saw /");
    } finally {
      await p.stop("SIGKILL");
    }
  });
});
