// Explain's `upstreamTls` (the TLS Portico speaks to an HTTPS pod) and the Server field of
// --server-header=none, held to what a real listener does: each request is explained, then
// sent to the proxy's handler on a real listener in front of TLS pods on 127.0.0.1 that record
// what each handshake carried (SNI, the client certificate, the version), and a raw-socket pod
// that answers with a Server field of its own.
//
// ingress-nginx: proxyssl/main.go reads proxy-ssl-secret, -verify, -verify-depth, -name,
// -server-name, -protocols; nginx.tmpl writes proxy_ssl_* into the location and proxies to
// `https://upstream_balancer` for backend-protocol HTTPS only (a plain location ignores
// them); without proxy-ssl-verify nginx does not check the pod's certificate. server-tokens
// false: nginx's proxy module hides the pod's Server and `more_clear_headers Server` clears
// nginx's own (nginx.tmpl).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import tls from "node:tls";
import { compile, Compiler } from "../../src/compile/compile.ts";
import { explain } from "../../src/compile/explain.ts";
import { silentLogger } from "../../src/log/logger.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import type { Snapshot } from "../../src/store/types.ts";
import { lookup } from "../../src/table/lookup.ts";
import type { RouteTable } from "../../src/table/types.ts";
import { loadFixture } from "../compile/snapshot.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "../e2e/objects.ts";
import { createCertificate, type MintedCertificate } from "../tls/pki.ts";
import { OPENSSL_DEFAULT } from "../tls/openssl-default.ts";
import { rawRequest, statusLine, testConfig } from "./helpers.ts";
import { rawBackend, type RawBackend } from "./raw.ts";

const NS = "par3";
const N = "nginx.ingress.kubernetes.io/";
const POD_NAME = `pod.${NS}.svc`;
const ca = createCertificate({ subjectCN: "Pod CA", isCA: true });
const issued = (cn: string, o: { sans?: string[]; client?: boolean } = {}) =>
  createCertificate({ subjectCN: cn, sans: o.sans, extKeyUsage: o.client ? ["clientAuth"] : ["serverAuth"], issuer: { cert: ca.certPem, key: ca.keyPem } });
const podCert = issued("pod", { sans: [POD_NAME] });
const clientCert = issued("portico-client", { client: true });

interface Seen { readonly sni: string | false; readonly cn: string | null; readonly protocol: string | null }
const pods = new Map<string, { server: tls.Server; port: number; seen: Seen[] }>();
let plain: RawBackend;
let listener: ReturnType<typeof startHttpListener>;
let snapshot: Snapshot;
let table: RouteTable;
const cfg = testConfig({ serverHeader: "none" });

/** A TLS pod answering 200, recording each request's handshake; with `requireClient` a client certificate of `ca` is needed. */
async function startPod(name: string, cert: MintedCertificate, requireClient: boolean): Promise<void> {
  const seen: Seen[] = [];
  const server = tls.createServer({ cert: cert.certPem, key: cert.keyPem, ca: [ca.certPem], requestCert: requireClient, rejectUnauthorized: requireClient }, (s) => {
    s.on("error", () => {});
    s.on("data", () => {
      const peer = s.getPeerCertificate();
      seen.push({ sni: (s as unknown as { servername: string | false }).servername, cn: peer?.subject?.CN ? String(peer.subject.CN) : null, protocol: s.getProtocol() });
      s.end("HTTP/1.1 200 OK\r\ncontent-length: 2\r\nserver: pod/1\r\nconnection: close\r\n\r\nok");
    });
  });
  server.on("tlsClientError", () => {});
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  pods.set(name, { server, port: (server.address() as { port: number }).port, seen });
}

const b64 = (s: string) => Buffer.from(s).toString("base64");

beforeAll(async () => {
  await startPod("verified", podCert, true);
  await startPod("misnamed", podCert, false);
  await startPod("unchecked", podCert, false);
  plain = await rawBackend(() => "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nserver: pod/1\r\nconnection: close\r\n\r\nok");
  const secret = { apiVersion: "v1", kind: "Secret", type: "Opaque", metadata: { name: "upstream", namespace: NS }, data: { "tls.crt": b64(clientCert.certPem), "tls.key": b64(clientCert.keyPem), "ca.crt": b64(ca.certPem) } };
  const svc = (name: string, port: number) => [service(NS, name), slice(NS, name, [port])];
  const web = (name: string, host: string, svcName: string, annotations: Record<string, string>) =>
    ingress(NS, name, [{ host, paths: [{ path: "/", service: svcName }] }], { annotations: Object.fromEntries(Object.entries(annotations).map(([k, v]) => [`${N}${k}`, v])) });
  const https = { "backend-protocol": "HTTPS" };
  const ssl = { "proxy-ssl-secret": `${NS}/upstream`, "proxy-ssl-verify": "on", "proxy-ssl-server-name": "on" };
  snapshot = loadFixture(
    yamlDocs([
      ingressClass(),
      secret,
      ...svc("verified", pods.get("verified")!.port),
      ...svc("misnamed", pods.get("misnamed")!.port),
      ...svc("unchecked", pods.get("unchecked")!.port),
      ...svc("plain", plain.port),
      web("verified", "verified.test", "verified", { ...https, ...ssl, "proxy-ssl-name": POD_NAME, "proxy-ssl-protocols": "TLSv1.3" }),
      // The name checked is not the pod's: nginx's proxy_ssl_verify fails the connection (502).
      web("misnamed", "misnamed.test", "misnamed", { ...https, ...ssl, "proxy-ssl-name": "other.name" }),
      // backend-protocol HTTPS without proxy-ssl-*: nothing checked, no client certificate.
      web("unchecked", "unchecked.test", "unchecked", https),
      // proxy-ssl-* on a plain HTTP backend: not used.
      web("plainssl", "plainssl.test", "plain", { ...ssl, "proxy-ssl-name": POD_NAME }),
    ]),
  ).snapshot;
  table = compile(snapshot, cfg).table;
  const handler = createProxyHandler({ config: cfg, table: () => table, lookup, log: silentLogger, scheme: "http" });
  listener = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
});

afterAll(async () => {
  await listener?.stop(true);
  for (const p of pods.values()) await new Promise<void>((r) => p.server.close(() => r()));
  await plain?.stop();
});

async function send(host: string): Promise<{ status: number; server: string | null }> {
  const raw = await rawRequest(listener.port as number, `GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`, 10_000);
  const head = raw.slice(0, raw.indexOf("\r\n\r\n"));
  return { status: statusLine(raw), server: /\r\nserver: ([^\r]*)/i.exec(head)?.[1] ?? null };
}

const ask = (host: string) => explain(snapshot, cfg, { host, path: "/", scheme: "http", client: "127.0.0.1" }, new Compiler(cfg)).response;

describe("explain's upstreamTls is the TLS the pod sees", () => {
  test("proxy-ssl-* verified, with SNI, a client certificate and TLS 1.3 only: the pod's handshake carries each", async () => {
    const r = ask("verified.test");
    expect(r.kind).toBe("proxied");
    expect(r.upstreamTls).toEqual({ secret: `${NS}/upstream`, verify: true, depth: 1, name: POD_NAME, sni: POD_NAME, clientCertificate: true, ciphers: OPENSSL_DEFAULT, protocols: ["TLSv1.3"] });
    const seen = pods.get("verified")!.seen;
    const before = seen.length;
    expect((await send("verified.test")).status).toBe(200);
    const hs = seen.at(-1)!;
    expect(seen.length).toBe(before + 1);
    expect(hs.sni).toBe(r.upstreamTls!.sni as string);
    expect(hs.cn !== null).toBe(r.upstreamTls!.clientCertificate);
    expect(r.upstreamTls!.protocols).toContain(hs.protocol as "TLSv1.3");
  });

  test("the name explain says is checked is the one checked: not the pod's, so 502", async () => {
    const r = ask("misnamed.test");
    expect(r.upstreamTls).toMatchObject({ verify: true, name: "other.name", protocols: ["TLSv1.2"] });
    const real = await send("misnamed.test");
    // podCert names only POD_NAME (RFC 6125 §6.4.1).
    expect(real.status).toBe(r.upstreamTls!.name === POD_NAME ? 200 : 502);
    expect(pods.get("misnamed")!.seen).toHaveLength(0);
  });

  test("backend-protocol HTTPS without proxy-ssl-*: the certificate is not checked, no client certificate, SNI the backend's name", async () => {
    const r = ask("unchecked.test");
    expect(r.upstreamTls).toMatchObject({ secret: null, verify: false, name: null, clientCertificate: false, ciphers: null, protocols: null });
    const seen = pods.get("unchecked")!.seen;
    expect((await send("unchecked.test")).status).toBe(200);
    const hs = seen.at(-1)!;
    expect(hs.cn).toBeNull();
    expect(r.upstreamTls!.sni).not.toBeNull();
    expect(hs.sni).toBe(r.upstreamTls!.sni ?? false);
  });

  test("proxy-ssl-* on a plain HTTP backend is not used, and explain says so", async () => {
    const r = ask("plainssl.test");
    expect(r.kind).toBe("proxied");
    expect(r.upstreamTls).toBeUndefined();
    expect(r.notes.some((n) => n.startsWith("proxy-ssl-* is not used:"))).toBe(true);
    const before = plain.hits.length;
    expect((await send("plainssl.test")).status).toBe(200);
    expect(plain.hits.length).toBe(before + 1);
    expect(plain.hits.at(-1)!.line).toBe("GET / HTTP/1.1");
  });
});

describe("--server-header=none (server-tokens false): explain's Server is the answer's", () => {
  test("a pod's Server is removed, and Portico's own answer has none", async () => {
    for (const host of ["plainssl.test", "nobody.test"]) {
      const r = ask(host);
      expect(r.headers?.server, host).toBeNull();
      const real = await send(host);
      expect(real.status, host).toBe(host === "nobody.test" ? 404 : 200);
      expect(real.server, host).toBe(r.headers!.server as null);
    }
  });
});
