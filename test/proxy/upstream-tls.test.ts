// proxy-ssl-* (ingress-nginx test/e2e/annotations/proxyssl.go, whose cases assert nginx.conf
// text: ported as behaviour, against a real TLS pod on 127.0.0.1 that requires a client
// certificate and records what each handshake carried). Defaults and validation:
// internal/ingress/annotations/proxyssl/main.go; nginx's $proxy_host is `upstream_balancer`
// (nginx.tmpl proxy_pass), the name checked when proxy-ssl-name is unset.
import { afterAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import net from "node:net";
import tls from "node:tls";
import { parseAnnotations } from "../../src/compile/annotations.ts";
import { resolveAccess } from "../../src/compile/access.ts";
import { resolveUpstreamTls } from "../../src/compile/upstream-tls.ts";
import type { Ingress, Secret } from "../../src/model/schemas.ts";
import type { RouteOptions } from "../../src/table/types.ts";
import { createCertificate, type MintedCertificate } from "../tls/pki.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { makeBackend, makeTable, startProxy } from "./helpers.ts";
import { compile } from "../../src/compile/compile.ts";
import { loadFixture } from "../compile/snapshot.ts";
import { allRoutes } from "../../src/table/routes.ts";

const NS = "proxyssl";
const ca = createCertificate({ subjectCN: "Pod CA", isCA: true });
const otherCa = createCertificate({ subjectCN: "Other CA", isCA: true });
const issued = (cn: string, by: MintedCertificate, o: { sans?: string[]; client?: boolean; rsa?: boolean } = {}) =>
  createCertificate({ subjectCN: cn, sans: o.sans, extKeyUsage: o.client ? ["clientAuth"] : ["serverAuth"], issuer: { cert: by.certPem, key: by.keyPem }, ...(o.rsa ? { keyAlgorithm: "rsa" as const } : {}) });
const podCert = issued("pod", ca, { sans: ["pod.proxyssl.svc"] });
const one = issued("client-one", ca, { client: true });
const two = issued("client-two", ca, { client: true });

interface Seen { sni: string | false; cn: string | undefined; protocol: string | null; cipher: string | undefined }
/** One entry per request a pod received, with what the connection it came on carried. */
const seen: Seen[] = [];
const sockets = new Set<tls.TLSSocket>();
const pods: tls.Server[] = [];

/** A TLS pod on 127.0.0.1 answering 200 "ok"; with `requireClient`, a handshake without a certificate issued by `ca` fails. */
async function startPod(cert: MintedCertificate, requireClient: boolean, chain = "", extra: tls.TlsOptions = {}): Promise<number> {
  const pod = tls.createServer({ cert: cert.certPem + chain, key: cert.keyPem, ca: [ca.certPem], requestCert: requireClient, rejectUnauthorized: requireClient, ...extra }, (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => {});
    s.on("data", () => {
      seen.push({ sni: (s as unknown as { servername: string | false }).servername, cn: String(s.getPeerCertificate()?.subject?.CN ?? "") || undefined, protocol: s.getProtocol(), cipher: s.getCipher()?.name });
      s.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    });
  });
  pod.on("tlsClientError", () => {});
  pods.push(pod);
  await new Promise<void>((r) => pod.listen(0, "127.0.0.1", r));
  return (pod.address() as { port: number }).port;
}
const podPort = await startPod(podCert, true);
// Pods that ask for no client certificate: only the proxy's verification can refuse them.
const openPort = await startPod(podCert, false);
// A pod with an RSA certificate that speaks TLS 1.2 with RSA key exchange and AES128-SHA only.
const rsaKxPort = await startPod(issued("rsa pod", ca, { sans: ["pod.proxyssl.svc"], rsa: true }), false, "", { ciphers: "AES128-SHA", maxVersion: "TLSv1.2" });
/** WebSocket pods: answer an upgrade with 101 (RFC 6455 section 4.2.2), recording the connection in `seen`. */
async function startWsPod(requireClient: boolean): Promise<number> {
  const pod = tls.createServer({ cert: podCert.certPem, key: podCert.keyPem, ca: [ca.certPem], requestCert: requireClient, rejectUnauthorized: requireClient }, (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => {});
    s.once("data", (d: Buffer) => {
      seen.push({ sni: (s as unknown as { servername: string | false }).servername, cn: String(s.getPeerCertificate()?.subject?.CN ?? "") || undefined, protocol: s.getProtocol(), cipher: s.getCipher()?.name });
      const key = /\r\nsec-websocket-key:[ \t]*([^\r]*)\r\n/i.exec(d.toString("latin1"))?.[1]?.trim() ?? "";
      const accept = createHash("sha1").update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest("base64");
      s.write(`HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: ${accept}\r\n\r\n`);
    });
  });
  pod.on("tlsClientError", () => {});
  pods.push(pod);
  await new Promise<void>((r) => pod.listen(0, "127.0.0.1", r));
  return (pod.address() as { port: number }).port;
}
const wsOpenPort = await startWsPod(false);
const wsClientPort = await startWsPod(true);
const i1 = createCertificate({ subjectCN: "Intermediate 1", isCA: true, issuer: { cert: ca.certPem, key: ca.keyPem } });
const i2 = createCertificate({ subjectCN: "Intermediate 2", isCA: true, issuer: { cert: i1.certPem, key: i1.keyPem } });
// pod (level 0) -> Intermediate 2 (1) -> Intermediate 1 (2) -> Pod CA (3): OpenSSL verify depth 2 at least.
const deepPort = await startPod(issued("deep pod", i2, { sans: ["pod.proxyssl.svc"] }), false);

const secret = (name: string, c: MintedCertificate | null, caPem: string | null): Secret =>
  ({
    metadata: { name, namespace: NS }, type: "Opaque",
    data: {
      ...(c ? { "tls.crt": Buffer.from(c.certPem).toString("base64"), "tls.key": Buffer.from(c.keyPem).toString("base64") } : {}),
      ...(caPem ? { "ca.crt": Buffer.from(caPem).toString("base64") } : {}),
    },
  }) as Secret;
const SECRETS = new Map<string, Secret>([
  [`${NS}/one`, secret("one", one, ca.certPem)],
  [`${NS}/two`, secret("two", two, ca.certPem)],
  [`${NS}/other-ca`, secret("other-ca", one, otherCa.certPem)],
  [`${NS}/chain`, secret("chain", one, [ca.certPem, i1.certPem, i2.certPem].join(""))],
  [`${NS}/no-ca`, secret("no-ca", one, null)],
]);

function optionsOf(annotations: Record<string, string>): RouteOptions {
  const ing = { metadata: { name: "app", namespace: NS, annotations }, spec: { rules: [] } } as unknown as Ingress;
  const u = resolveUpstreamTls(parseAnnotations(annotations), ing, SECRETS);
  return resolveAccess(u.annotations, ing, SECRETS, DEFAULT_COMPILE_CONFIG).annotations.options;
}
const ann = (o: Record<string, string>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [`nginx.ingress.kubernetes.io/${k}`, v]));

const routes: [string, Record<string, string>, number?][] = [
  ["plain.test", {}],
  ["secret.test", { "proxy-ssl-secret": `${NS}/one` }],
  ["secret-two.test", { "proxy-ssl-secret": `${NS}/two` }],
  ["verify.test", { "proxy-ssl-secret": `${NS}/one`, "proxy-ssl-verify": "on", "proxy-ssl-verify-depth": "2", "proxy-ssl-server-name": "on", "proxy-ssl-name": "pod.proxyssl.svc" }],
  ["verify-default-name.test", { "proxy-ssl-secret": `${NS}/one`, "proxy-ssl-verify": "on", "proxy-ssl-verify-depth": "2", "proxy-ssl-server-name": "on" }, openPort],
  ["verify-other-ca.test", { "proxy-ssl-secret": `${NS}/other-ca`, "proxy-ssl-verify": "on", "proxy-ssl-name": "pod.proxyssl.svc" }, openPort],
  ["verify-off-other-ca.test", { "proxy-ssl-secret": `${NS}/other-ca`, "proxy-ssl-name": "pod.proxyssl.svc" }, openPort],
  ["depth-1.test", { "proxy-ssl-secret": `${NS}/chain`, "proxy-ssl-verify": "on", "proxy-ssl-name": "pod.proxyssl.svc" }, deepPort],
  ["depth-2.test", { "proxy-ssl-secret": `${NS}/chain`, "proxy-ssl-verify": "on", "proxy-ssl-verify-depth": "2", "proxy-ssl-name": "pod.proxyssl.svc" }, deepPort],
  ["verify-no-ca.test", { "proxy-ssl-secret": `${NS}/no-ca`, "proxy-ssl-verify": "on" }, openPort],
  ["ciphers.test", { "proxy-ssl-secret": `${NS}/one`, "proxy-ssl-ciphers": "HIGH:!AES" }],
  ["ciphers-rsa-kx.test", { "proxy-ssl-secret": `${NS}/one`, "proxy-ssl-ciphers": "HIGH:!TLSv1:!ECDHE" }, rsaKxPort],
  ["protocols.test", { "proxy-ssl-secret": `${NS}/one`, "proxy-ssl-protocols": "TLSv1.2 TLSv1.3" }],
  ["missing.test", { "proxy-ssl-secret": `${NS}/absent` }],
  ["no-namespace.test", { "proxy-ssl-secret": "one" }],
  ["ws-untrusted.test", { "proxy-ssl-secret": `${NS}/other-ca`, "proxy-ssl-verify": "on", "proxy-ssl-name": "pod.proxyssl.svc" }, wsOpenPort],
  ["ws-verify.test", { "proxy-ssl-secret": `${NS}/one`, "proxy-ssl-verify": "on", "proxy-ssl-name": "pod.proxyssl.svc", "proxy-ssl-server-name": "on" }, wsOpenPort],
  ["ws-wrong-name.test", { "proxy-ssl-secret": `${NS}/one`, "proxy-ssl-verify": "on" }, wsOpenPort],
  ["ws-client.test", { "proxy-ssl-secret": `${NS}/one` }, wsClientPort],
  ["ws-plain.test", {}, wsClientPort],
];
const backendOf = (port: number) => makeBackend([port], { scheme: "https", serverName: "svc.proxyssl.svc" });
const proxy = startProxy(makeTable(routes.map(([host, a, port]) => ({ host, backend: backendOf(port ?? podPort), options: optionsOf(ann(a)) }))));
afterAll(async () => {
  await proxy.stop();
  const closed = pods.map((pod) => new Promise((r) => pod.close(r)));
  for (const s of sockets) s.destroy();
  await Promise.all(closed);
});

async function get(host: string): Promise<{ status: number; seen: Seen | undefined }> {
  const before = seen.length;
  const r = await fetch(`${proxy.url}/`, { headers: { host } });
  await r.arrayBuffer();
  return { status: r.status, seen: seen.length > before ? seen[seen.length - 1] : undefined };
}

test("without proxy-ssl-secret the pod that requires a client certificate refuses the handshake: 502", async () => {
  expect((await get("plain.test")).status).toBe(502);
});

// proxyssl.go "should set valid proxy-ssl-secret": the Secret's certificate is presented,
// TLSv1.2 only (the default proxy_ssl_protocols), verify off, no SNI (proxy_ssl_server_name off).
test("proxy-ssl-secret: the client certificate is presented over TLSv1.2, without SNI, the pod unverified", async () => {
  const r = await get("secret.test");
  expect(r.status).toBe(200);
  expect(r.seen).toEqual({ sni: false, cn: "client-one", protocol: "TLSv1.2", cipher: expect.any(String) });
});

// proxyssl.go "proxy-ssl-verify to on, proxy-ssl-verify-depth to 2, and proxy-ssl-server-name to on".
test("proxy-ssl-verify on with proxy-ssl-name: verified, and the name is sent as SNI", async () => {
  const r = await get("verify.test");
  expect(r.status).toBe(200);
  expect(r.seen?.sni).toBe("pod.proxyssl.svc");
  expect(r.seen?.cn).toBe("client-one");
});

test("proxy-ssl-verify on without proxy-ssl-name checks `upstream_balancer` ($proxy_host), which the pod's certificate does not carry: 502", async () => {
  expect((await get("verify-default-name.test")).status).toBe(502);
});

test("proxy-ssl-verify on with a ca.crt that did not issue the pod's certificate: 502; off: 200", async () => {
  expect((await get("verify-other-ca.test")).status).toBe(502);
  expect((await get("verify-off-other-ca.test")).status).toBe(200);
});

test("proxy-ssl-verify-depth: a chain of two intermediates under ca.crt's root needs depth 2 (502 at the default 1)", async () => {
  expect((await get("depth-1.test")).status).toBe(502);
  expect((await get("depth-2.test")).status).toBe(200);
});

test("proxy-ssl-verify on with a Secret without ca.crt is refused (503), never served unverified", async () => {
  expect((await get("verify-no-ca.test")).status).toBe(503);
});

// proxyssl.go "proxy-ssl-ciphers to HIGH:!AES" (with the default TLSv1.2, where the list applies).
test("proxy-ssl-ciphers HIGH:!AES: the pod sees a TLSv1.2 cipher without AES", async () => {
  const r = await get("ciphers.test");
  expect(r.status).toBe(200);
  expect(r.seen?.protocol).toBe("TLSv1.2");
  expect(r.seen?.cipher).toBe("ECDHE-ECDSA-CHACHA20-POLY1305");
});

// proxy-ssl-ciphers is read as OpenSSL reads a cipher string (nginx's proxy_ssl_ciphers goes to
// SSL_CTX_set_cipher_list): TLSv1 selects the suites whose lowest version is TLS 1.0 (the ECDHE
// CBC ones), so AES128-SHA (SSLv3) stays offered. BoringSSL's own reading of TLSv1 is SSLv3's
// suites (ssl/ssl_cipher.cc kCipherAliases), which would remove it and fail the handshake.
test("proxy-ssl-ciphers HIGH:!TLSv1:!ECDHE: OpenSSL's reading, so the RSA key exchange pod is reached with AES128-SHA", async () => {
  const r = await get("ciphers-rsa-kx.test");
  expect(r.status).toBe(200);
  expect(r.seen).toMatchObject({ protocol: "TLSv1.2", cipher: "AES128-SHA" });
});

// proxyssl.go "proxy-ssl-protocols": TLSv1.2 TLSv1.3 lets the pod choose TLSv1.3.
test("proxy-ssl-protocols TLSv1.2 TLSv1.3: TLSv1.3 is negotiated", async () => {
  const r = await get("protocols.test");
  expect(r.status).toBe(200);
  expect(r.seen?.protocol).toBe("TLSv1.3");
});

test("a connection made with one Secret's certificate is not reused for a route with another's", async () => {
  const got: (string | undefined)[] = [];
  for (const host of ["secret.test", "secret-two.test", "secret.test", "secret-two.test"]) {
    const r = await get(host);
    expect(r.status).toBe(200);
    got.push(r.seen?.cn);
  }
  // Each request arrived on a connection that presented its own route's certificate.
  expect(got).toEqual(["client-one", "client-two", "client-one", "client-two"]);
});

/** The status of a WebSocket upgrade through the proxy (read up to the end of the answer's head), and what the pod saw. */
async function upgrade(host: string): Promise<{ status: number; seen: Seen | undefined }> {
  const before = seen.length;
  const head = await new Promise<string>((resolve) => {
    let got = "";
    const sock = net.connect(Number(new URL(proxy.url).port), "127.0.0.1", () =>
      sock.write(`GET /ws HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`),
    );
    const done = () => (sock.destroy(), resolve(got));
    sock.on("data", (d: Buffer) => {
      got += d.toString("latin1");
      if (got.includes("\r\n\r\n")) done();
    });
    sock.on("close", done);
    sock.on("error", done);
  });
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), seen: seen.length > before ? seen[seen.length - 1] : undefined };
}

// The WebSocket path connects with the same proxy-ssl-* as a request does (nginx proxies the
// upgrade through the same location, so proxy_ssl_* apply to it alike).
describe("WebSocket upgrades to a TLS pod", () => {
  test("verify on with a ca.crt that did not issue the pod's certificate: 502, the pod never gets the upgrade", async () => {
    expect(await upgrade("ws-untrusted.test")).toEqual({ status: 502, seen: undefined });
  });

  test("verify on with proxy-ssl-name: the pod's certificate verifies, the name is the SNI: 101", async () => {
    const r = await upgrade("ws-verify.test");
    expect(r.status).toBe(101);
    expect(r.seen?.sni).toBe("pod.proxyssl.svc");
  });

  test("verify on without proxy-ssl-name checks `upstream_balancer`, which the pod's certificate does not carry: 502", async () => {
    expect(await upgrade("ws-wrong-name.test")).toEqual({ status: 502, seen: undefined });
  });

  test("a pod requiring a client certificate gets the Secret's: 101; without proxy-ssl-secret its handshake is refused: 502", async () => {
    const r = await upgrade("ws-client.test");
    expect(r.status).toBe(101);
    expect(r.seen?.cn).toBe("client-one");
    expect((await upgrade("ws-plain.test")).status).toBe(502);
  });
});

test("a missing Secret, or one not written namespace/name, denies the location: 503 (proxyssl/main.go LocationDenied)", async () => {
  expect((await get("missing.test")).status).toBe(503);
  expect((await get("no-namespace.test")).status).toBe(503);
});

// proxyssl.go "proxy-ssl-location-only flag should change the nginx config server part": with
// the key false (ingress-nginx's default) the first Ingress's proxy-ssl-* with a CA is written
// into the server block too (controller.go createServers), so a location of the host without
// its own proxy-ssl-* inherits it; with true only the Ingress's own locations have it. Shown as
// what a second Ingress's path presents to a pod that requires a client certificate.
describe("proxy-ssl-location-only", () => {
  function compiled(locationOnly: boolean, hostPolicyScope: "all" | "namespace" = "all", otherNs = NS, otherAnn: Record<string, string> = {}) {
    const b64 = (t: string) => Buffer.from(t).toString("base64");
    const ing = (name: string, created: string, ann: Record<string, string>, path: string, ns = NS) => `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ${name}, namespace: ${ns}, creationTimestamp: "${created}", annotations: ${JSON.stringify(ann)}}
spec:
  ingressClassName: portico
  rules: [{host: proxyssl.com, http: {paths: [{path: ${path}, pathType: Prefix, backend: {service: {name: echo, port: {number: 80}}}}]}}]`;
    const svc = (ns: string) => [
      `apiVersion: v1
kind: Service
metadata: {name: echo, namespace: ${ns}}
spec: {ports: [{name: https, port: 80}]}`,
      `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: echo-x, namespace: ${ns}, labels: {kubernetes.io/service-name: echo}}
addressType: IPv4
ports: [{name: https, port: ${podPort}}]
endpoints: [{addresses: ["127.0.0.1"], conditions: {ready: true}}]`,
    ];
    const fx = loadFixture(
      [
        ...svc(NS),
        ...(otherNs === NS ? [] : svc(otherNs)),
        `apiVersion: v1
kind: Secret
metadata: {name: secrettwo, namespace: ${otherNs}}
type: Opaque
data: {tls.crt: ${b64(two.certPem)}, tls.key: ${b64(two.keyPem)}, ca.crt: ${b64(ca.certPem)}}`,
        `apiVersion: v1
kind: Secret
metadata: {name: secretone, namespace: ${NS}}
type: Opaque
data: {tls.crt: ${b64(one.certPem)}, tls.key: ${b64(one.keyPem)}, ca.crt: ${b64(ca.certPem)}}`,
        ing("bar", "2026-01-01T00:00:00Z", ann({ "proxy-ssl-secret": `${NS}/secretone`, "backend-protocol": "HTTPS", "proxy-ssl-verify": "on", "proxy-ssl-server-name": "on", "proxy-ssl-name": "pod.proxyssl.svc" }), "/bar"),
        ing("other", "2026-02-01T00:00:00Z", ann({ "backend-protocol": "HTTPS", ...otherAnn }), "/other", otherNs),
      ].join("\n---\n"),
    );
    return compile(fx.snapshot, { ...DEFAULT_COMPILE_CONFIG, proxySslLocationOnly: locationOnly, hostPolicyScope });
  }

  async function status(locationOnly: boolean, path: string, scope: "all" | "namespace" = "all", otherNs = NS): Promise<{ status: number; cn: string | undefined }> {
    const p = startProxy(compiled(locationOnly, scope, otherNs).table);
    try {
      const before = seen.length;
      const r = await fetch(`${p.url}${path}`, { headers: { host: "proxyssl.com" } });
      await r.arrayBuffer();
      return { status: r.status, cn: seen.length > before ? seen[seen.length - 1]?.cn : undefined };
    } finally {
      await p.stop();
    }
  }

  test("false (the default): the other Ingress's path presents the first Ingress's certificate", async () => {
    expect(await status(false, "/bar")).toEqual({ status: 200, cn: "client-one" });
    expect(await status(false, "/other")).toEqual({ status: 200, cn: "client-one" });
  });

  test("true: only the Ingress's own path presents it; the other's handshake is refused by the pod (502)", async () => {
    expect(await status(true, "/bar")).toEqual({ status: 200, cn: "client-one" });
    expect(await status(true, "/other")).toEqual({ status: 502, cn: undefined });
  });

  // --host-policy-scope=namespace (docs/design.md "Host-wide policies"): the server-level
  // proxy-ssl-* is a host-wide policy of the owner's namespace. Another namespace's path on the
  // same host must not present the owner's client certificate (nor be verified with its CA).
  test("namespace scope: another namespace's path does not inherit the owner's proxy-ssl-*; it is named in HostPolicyIgnored only when it sets its own", () => {
    const r = compiled(false, "namespace", "tenant-b");
    const route = (path: string) => allRoutes(r.table).find((x) => x.host === "proxyssl.com" && x.path === path);
    expect(route("/bar")?.options.upstreamTls?.secret).toBe(`${NS}/secretone`);
    expect(route("/other")?.options.upstreamTls ?? null).toBeNull();
    // Same namespace (namespace scope): still inherited, as ingress-nginx's server block.
    const same = compiled(false, "namespace");
    expect(allRoutes(same.table).find((x) => x.path === "/other")?.options.upstreamTls?.secret).toBe(`${NS}/secretone`);
    // `all` keeps ingress-nginx's inheritance across namespaces.
    const all = compiled(false, "all", "tenant-b");
    expect(allRoutes(all.table).find((x) => x.path === "/other")?.options.upstreamTls?.secret).toBe(`${NS}/secretone`);
    expect(r.diagnostics.filter((d) => d.reason === "HostPolicyIgnored")).toEqual([]);
    // The other namespace's own proxy-ssl-secret with a CA: its paths keep it, its server-wide
    // part is ignored, and the diagnostic says so.
    const own = compiled(false, "namespace", "tenant-b", { "proxy-ssl-secret": "tenant-b/secrettwo" });
    expect(allRoutes(own.table).find((x) => x.path === "/other")?.options.upstreamTls?.secret).toBe("tenant-b/secrettwo");
    const d = own.diagnostics.find((x) => x.reason === "HostPolicyIgnored" && x.name === "other");
    expect(d?.message).toContain("nginx.ingress.kubernetes.io/proxy-ssl-secret (for the host's other paths; its own keep it) is ignored on host proxyssl.com");
  });

  test("namespace scope through a real proxy: the other namespace's path reaches the pod without the owner's certificate (502); `all` presents it", async () => {
    expect(await status(false, "/bar", "namespace", "tenant-b")).toEqual({ status: 200, cn: "client-one" });
    expect(await status(false, "/other", "namespace", "tenant-b")).toEqual({ status: 502, cn: undefined });
    expect(await status(false, "/other", "all", "tenant-b")).toEqual({ status: 200, cn: "client-one" });
  });
});
