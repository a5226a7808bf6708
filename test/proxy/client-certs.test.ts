// Client certificates (auth-tls-*) and SNI versus Host, through real TLS handshakes on the
// node:http2 listener, with route options built by parseAnnotations + resolveAccess exactly as
// the compiler builds them, and a raw-socket backend that keeps each header block it received.
// Expectations: ingress-nginx's nginx.tmpl SERVER block (ssl_verify_client, ssl_verify_depth,
// error_page 495 496, proxy_set_header ssl-client-*), annotations/authtls/main.go, and nginx's
// ngx_http_request.c (400 for 495/496, 421 when the SNI names another host).
import { afterEach, describe, expect, test } from "bun:test";
import tls from "node:tls";
import { parseAnnotations } from "../../src/compile/annotations.ts";
import { resolveAccess } from "../../src/compile/access.ts";
import type { Ingress, Secret } from "../../src/model/schemas.ts";
import type { RouteOptions } from "../../src/table/types.ts";
import { startTlsProxy } from "../http2/helpers.ts";
import { createCertificate, type MintedCertificate } from "../tls/pki.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { compile } from "../../src/compile/compile.ts";
import { loadFixture } from "../compile/snapshot.ts";
import { makeBackend, makeTable, testConfig } from "./helpers.ts";
import { rawBackend } from "./raw.ts";
import { createInstruments } from "../../src/admin/instruments.ts";
import { Registry } from "../../src/admin/registry.ts";
import { silentLogger } from "../../src/log/logger.ts";
import { serveTraffic } from "../../src/serving/serve.ts";
import { createTlsBuilder } from "../../src/serving/tls.ts";
import { freePort } from "../e2e/harness.ts";
import { rawH2 } from "../http2/frames.ts";
import { eventually } from "../wait.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import { lookup } from "../../src/table/lookup.ts";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

const N = "nginx.ingress.kubernetes.io/";
const DAY = 86_400_000;

const ca = createCertificate({ subjectCN: "Client CA", isCA: true });
const otherCa = createCertificate({ subjectCN: "Other CA", isCA: true });
const inter = createCertificate({ subjectCN: "Intermediate", isCA: true, issuer: { cert: ca.certPem, key: ca.keyPem } });
const client = (cn: string, issuer: MintedCertificate, o: { notBefore?: Date; notAfter?: Date } = {}) =>
  createCertificate({ subjectCN: cn, extKeyUsage: ["clientAuth"], issuer: { cert: issuer.certPem, key: issuer.keyPem }, ...o });
const good = client("alice", ca);
const foreign = client("mallory", otherCa);
const expired = client("old", ca, { notBefore: new Date(Date.now() - 10 * DAY), notAfter: new Date(Date.now() - DAY) });
const deep = client("deep", inter);
const selfSigned = createCertificate({ subjectCN: "self", extKeyUsage: ["clientAuth"] });

const caSecret = (pem: string, name = "client-ca"): Secret =>
  ({ metadata: { name, namespace: "shop" }, type: "Opaque", data: { "ca.crt": Buffer.from(pem).toString("base64") } }) as Secret;

function optionsOf(annotations: Record<string, string>, secrets: Secret[] = [caSecret(ca.certPem)]): RouteOptions {
  const ing = { metadata: { name: "app", namespace: "shop", annotations }, spec: { rules: [] } } as unknown as Ingress;
  const map = new Map(secrets.map((s) => [`${s.metadata.namespace}/${s.metadata.name}`, s]));
  return resolveAccess(parseAnnotations(annotations), ing, map, DEFAULT_COMPILE_CONFIG).annotations.options;
}

/** A raw-socket backend that logs each request as received and answers 200 "ok"; stopped after the test. */
async function okBackend() {
  const b = await rawBackend();
  cleanup.push(() => b.stop());
  return b;
}

/** mtls.test with these annotations, open.test without any, both on one backend. */
async function start(annotations: Record<string, string>, secrets?: Secret[]) {
  const backend = await okBackend();
  const b = makeBackend([backend.port]);
  const table = makeTable([
    { host: "mtls.test", backend: b, options: optionsOf(annotations, secrets), tls: true },
    { host: "open.test", backend: b, tls: true },
  ]);
  const proxy = startTlsProxy(table, { hosts: ["mtls.test", "open.test"] });
  cleanup.push(() => proxy.stop());
  return { port: proxy.port, backend };
}

/** One HTTP/1.1 request over a raw tls.connect: SNI (or none), Host and client certificate chosen freely. */
function request(port: number, o: { sni?: string; host: string; cert?: MintedCertificate; chain?: string; headers?: string; path?: string }): Promise<{ status: number; head: string }> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({
      host: "127.0.0.1", port, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"],
      ...(o.sni === undefined ? {} : { servername: o.sni }),
      ...(o.cert === undefined ? {} : { cert: o.cert.certPem + (o.chain ?? ""), key: o.cert.keyPem }),
    });
    let data = "";
    s.on("secureConnect", () => s.write(`GET ${o.path ?? "/p"} HTTP/1.1\r\nHost: ${o.host}\r\n${o.headers ?? ""}Connection: close\r\n\r\n`));
    s.on("data", (d) => (data += d.toString("latin1")));
    s.on("end", () => resolve({ status: Number(data.slice(9, 12)), head: data }));
    s.on("error", reject);
  });
}

const header = (head: string | undefined, name: string): string | null => {
  for (const line of (head ?? "").split("\r\n")) {
    const i = line.indexOf(":");
    if (i > 0 && line.slice(0, i).toLowerCase() === name) return line.slice(i + 1).trim();
  }
  return null;
};

const SECRET = { [`${N}auth-tls-secret`]: "client-ca" };

describe("auth-tls-verify-client on (the default)", () => {
  test("a certificate from the CA: 200, and the ssl-client-* fields reach the backend", async () => {
    const { port, backend } = await start({ ...SECRET, [`${N}auth-tls-pass-certificate-to-upstream`]: "true" });
    const r = await request(port, { sni: "mtls.test", host: "mtls.test", cert: good });
    expect(r.status).toBe(200);
    const h = backend.heads().at(-1);
    expect(header(h, "ssl-client-verify")).toBe("SUCCESS");
    expect(header(h, "ssl-client-subject-dn")).toBe("CN=alice");
    expect(header(h, "ssl-client-issuer-dn")).toBe("CN=Client CA");
    // $ssl_client_escaped_cert: the PEM, every byte but unreserved ones as %XX.
    expect(decodeURIComponent(header(h, "ssl-client-cert") ?? "")).toBe(new (await import("node:crypto")).X509Certificate(good.certPem).toString());
    expect(header(h, "ssl-client-cert")).toStartWith("-----BEGIN%20CERTIFICATE-----%0A");
  });

  test("spoofed ssl-client-* fields from the client are replaced or removed", async () => {
    const { port, backend } = await start(SECRET);
    const spoof = "ssl-client-verify: SUCCESS\r\nssl-client-subject-dn: CN=admin\r\nssl-client-cert: forged\r\n";
    const r = await request(port, { sni: "mtls.test", host: "mtls.test", cert: good, headers: spoof });
    expect(r.status).toBe(200);
    const h = backend.heads().at(-1);
    expect(header(h, "ssl-client-subject-dn")).toBe("CN=alice");
    expect(header(h, "ssl-client-cert")).toBeNull(); // pass-certificate is off
  });

  test("hostile certificates: each 400, nothing reaches the backend", async () => {
    const { port, backend } = await start(SECRET);
    const cases: [string, Parameters<typeof request>[1], string][] = [
      ["no certificate", { sni: "mtls.test", host: "mtls.test" }, "No required SSL certificate was sent"],
      ["another CA", { sni: "mtls.test", host: "mtls.test", cert: foreign }, "The SSL certificate error"],
      ["expired", { sni: "mtls.test", host: "mtls.test", cert: expired }, "The SSL certificate error"],
      ["self-signed", { sni: "mtls.test", host: "mtls.test", cert: selfSigned }, "The SSL certificate error"],
      // depth 1: the leaf's issuer must be in ca.crt; through an intermediate needs 2.
      ["chain deeper than verify-depth", { sni: "mtls.test", host: "mtls.test", cert: deep, chain: inter.certPem }, "The SSL certificate error"],
      ["intermediate not sent", { sni: "mtls.test", host: "mtls.test", cert: deep }, "The SSL certificate error"],
      // A client certificate of the right CA on a connection without SNI counts as none: nginx
      // negotiated it with the default server, which asks for no certificate.
      ["no SNI at all", { host: "mtls.test", cert: good }, "No required SSL certificate was sent"],
    ];
    for (const [name, o, body] of cases) {
      const r = await request(port, o);
      expect({ name, status: r.status }).toEqual({ name, status: 400 });
      expect(r.head).toContain(body);
    }
    expect(backend.heads()).toHaveLength(0);
  });

  test("verify-depth 2 accepts the chain through an intermediate", async () => {
    const { port, backend } = await start({ ...SECRET, [`${N}auth-tls-verify-depth`]: "2" });
    expect((await request(port, { sni: "mtls.test", host: "mtls.test", cert: deep, chain: inter.certPem })).status).toBe(200);
    expect(header(backend.heads().at(-1), "ssl-client-issuer-dn")).toBe("CN=Intermediate");
    expect((await request(port, { sni: "mtls.test", host: "mtls.test", cert: foreign })).status).toBe(400);
  });

  test("auth-tls-error-page: a failure is a 302 there instead of the 400", async () => {
    const { port } = await start({ ...SECRET, [`${N}auth-tls-error-page`]: "https://login.example.com/cert" });
    const r = await request(port, { sni: "mtls.test", host: "mtls.test", cert: foreign });
    expect(r.status).toBe(302);
    expect(header(r.head, "location")).toBe("https://login.example.com/cert");
  });
});

describe("SNI versus Host", () => {
  test("SNI of another host with the Host of the client-certificate host: 421, even with a good certificate", async () => {
    const { port, backend } = await start(SECRET);
    const r = await request(port, { sni: "open.test", host: "mtls.test", cert: good });
    expect(r.status).toBe(421);
    expect(backend.heads()).toHaveLength(0);
  });

  test("SNI of the client-certificate host with the Host of a host without rules: served as ingress-nginx does, no ssl-client-* fields", async () => {
    // nginx checks the server the Host selects (ngx_http_set_virtual_server); open.test asks
    // for no certificate, so a request for it loses nothing by arriving on this connection.
    const { port, backend } = await start(SECRET);
    const r = await request(port, { sni: "mtls.test", host: "open.test", cert: good });
    expect(r.status).toBe(200);
    expect(header(backend.heads().at(-1), "ssl-client-verify")).toBeNull();
  });

  test("SNI and Host differing only in case are no mismatch", async () => {
    const { port } = await start(SECRET);
    expect((await request(port, { sni: "MTLS.test", host: "mtls.TEST", cert: good })).status).toBe(200);
  });

  test("HTTP/2 connection reuse: a stream for the client-certificate host on a connection for another name is 421", async () => {
    const { port } = await start(SECRET);
    const http2 = await import("node:http2");
    const s = http2.connect(`https://127.0.0.1:${port}`, { servername: "open.test", rejectUnauthorized: false, cert: good.certPem, key: good.keyPem });
    cleanup.push(() => s.close());
    const status = await new Promise<number>((resolve, reject) => {
      const req = s.request({ ":path": "/p", ":authority": "mtls.test" });
      req.on("response", (h) => resolve(Number(h[":status"])));
      req.on("error", reject);
      req.end();
    });
    expect(status).toBe(421);
  });
});

describe("optional modes", () => {
  test("optional: no certificate passes as NONE, a foreign one is 400, a good one SUCCESS", async () => {
    const { port, backend } = await start({ ...SECRET, [`${N}auth-tls-verify-client`]: "optional" });
    expect((await request(port, { sni: "mtls.test", host: "mtls.test" })).status).toBe(200);
    expect(header(backend.heads().at(-1), "ssl-client-verify")).toBe("NONE");
    expect((await request(port, { sni: "mtls.test", host: "mtls.test", cert: foreign })).status).toBe(400);
    expect((await request(port, { sni: "mtls.test", host: "mtls.test", cert: good })).status).toBe(200);
    expect(header(backend.heads().at(-1), "ssl-client-verify")).toBe("SUCCESS");
  });

  test("optional_no_ca: an untrusted issuer passes as FAILED:reason, an expired certificate does not", async () => {
    const { port, backend } = await start({ ...SECRET, [`${N}auth-tls-verify-client`]: "optional_no_ca" });
    expect((await request(port, { sni: "mtls.test", host: "mtls.test", cert: foreign })).status).toBe(200);
    expect(header(backend.heads().at(-1), "ssl-client-verify")).toBe("FAILED:unable to verify the first certificate");
    expect(header(backend.heads().at(-1), "ssl-client-subject-dn")).toBe("CN=mallory");
    expect((await request(port, { sni: "mtls.test", host: "mtls.test", cert: expired })).status).toBe(400);
  });
});

// ingress-nginx's test/e2e/annotations/authtls.go, the auth-tls-match-cn cases: nginx.tmpl's
// server block writes `if ( $ssl_client_s_dn !~ "<value>" ) { return 403 "client certificate
// unauthorized"; }`, the value (CN= included) an unanchored, case-sensitive PCRE against the
// subject in RFC 2253 form.
describe("auth-tls-match-cn", () => {
  const MATCH = `${N}auth-tls-match-cn`;
  test("should return 403 using auth-tls-match-cn with no matching CN from client", async () => {
    const { port, backend } = await start({ ...SECRET, [MATCH]: "CN=notgonnamatch" });
    const r = await request(port, { sni: "mtls.test", host: "mtls.test", cert: good });
    expect(r.status).toBe(403);
    // The body is nginx's `return 403` text (this listener sends it chunked).
    expect(r.head).toContain("\r\nclient certificate unauthorized\r\n");
    expect(header(r.head, "content-type")).toBe("text/plain; charset=utf-8");
    expect(backend.heads()).toHaveLength(0);
  });

  test("should return 200 using auth-tls-match-cn with matching CN from client", async () => {
    const { port, backend } = await start({ ...SECRET, [MATCH]: "CN=alice" });
    expect((await request(port, { sni: "mtls.test", host: "mtls.test", cert: good })).status).toBe(200);
    expect(header(backend.heads().at(-1), "ssl-client-subject-dn")).toBe("CN=alice");
  });

  test("should reload the nginx config when auth-tls-match-cn is updated (each value on its own proxy)", async () => {
    const before = await start({ ...SECRET, [MATCH]: "CN=notvalid" });
    expect((await request(before.port, { sni: "mtls.test", host: "mtls.test", cert: good })).status).toBe(403);
    const after = await start({ ...SECRET, [MATCH]: "CN=alice" });
    expect((await request(after.port, { sni: "mtls.test", host: "mtls.test", cert: good })).status).toBe(200);
  });

  test("should return 200 using auth-tls-match-cn where atleast one of the regex options matches CN from client", async () => {
    const { port } = await start({ ...SECRET, [MATCH]: "CN=(itwillmatch|withthenextoption|alice)" });
    expect((await request(port, { sni: "mtls.test", host: "mtls.test", cert: good })).status).toBe(200);
  });

  test("unanchored and case-sensitive, as nginx's !~; no certificate (optional) is an empty subject", async () => {
    const { port } = await start({ ...SECRET, [MATCH]: "CN=ali", [`${N}auth-tls-verify-client`]: "optional" });
    expect((await request(port, { sni: "mtls.test", host: "mtls.test", cert: good })).status).toBe(200);
    expect((await request(port, { sni: "mtls.test", host: "mtls.test" })).status).toBe(403);
    const upper = await start({ ...SECRET, [MATCH]: "CN=ALICE" });
    expect((await request(upper.port, { sni: "mtls.test", host: "mtls.test", cert: good })).status).toBe(403);
    // A certificate that fails verification is still 400 first (ngx_http_process_request).
    expect((await request(upper.port, { sni: "mtls.test", host: "mtls.test", cert: foreign })).status).toBe(400);
  });

  test("plain HTTP: the server block's `if` answers 403 before the HTTPS redirect (empty subject)", async () => {
    const plainHttp = async (annotations: Record<string, string>) => {
      const backend = await okBackend();
      const table = makeTable([{ host: "mtls.test", backend: makeBackend([backend.port]), options: optionsOf(annotations), tls: true }]);
      const handler = createProxyHandler({ config: testConfig(), table: () => table, lookup, log: silentLogger, scheme: "http" });
      const server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
      cleanup.push(() => server.stop(true));
      const res = await fetch(`http://127.0.0.1:${server.port}/p`, { headers: { host: "mtls.test" }, redirect: "manual" });
      return { status: res.status, body: await res.text(), location: res.headers.get("location") };
    };
    expect(await plainHttp({ ...SECRET, [MATCH]: "CN=alice" })).toEqual({ status: 403, body: "client certificate unauthorized", location: null });
    // A pattern that matches the empty subject lets the request on to the HTTPS redirect.
    expect(await plainHttp({ ...SECRET, [MATCH]: "CN=alice|^$", [`${N}auth-tls-verify-client`]: "optional" })).toEqual({ status: 308, body: "", location: "https://mtls.test/p" });
  });

  test("a value without CN= or a pattern the linear-time engine refuses: 503 on every path", async () => {
    for (const value of ["alice", "CN=(a)\\1", "CN=(?<=x)alice"]) {
      const { port, backend } = await start({ ...SECRET, [MATCH]: value });
      expect((await request(port, { sni: "mtls.test", host: "mtls.test", cert: good })).status).toBe(503);
      expect(backend.heads()).toHaveLength(0);
    }
  });
});

describe("the CA Secret", () => {
  test("missing, without ca.crt, or not PEM: 403 for every request (ingress-nginx's AuthTLSError)", async () => {
    for (const secrets of [[], [{ ...caSecret(""), data: { other: "eA==" } } as Secret], [caSecret("not a certificate")]]) {
      const { port, backend } = await start(SECRET, secrets);
      expect((await request(port, { sni: "mtls.test", host: "mtls.test", cert: good })).status).toBe(403);
      expect(backend.heads()).toHaveLength(0);
    }
  });

  test("auth-tls-* without auth-tls-secret: 503 (ingress-nginx serves the Ingress unchecked)", async () => {
    const { port, backend } = await start({ [`${N}auth-tls-verify-client`]: "optional" });
    expect((await request(port, { sni: "mtls.test", host: "mtls.test", cert: good })).status).toBe(503);
    expect(backend.heads()).toHaveLength(0);
  });

  test("another namespace's Secret: 403, as ingress-nginx's AuthTLSError (its location-denied error also sets the server's)", async () => {
    const { port, backend } = await start({ [`${N}auth-tls-secret`]: "other/client-ca" });
    expect((await request(port, { sni: "mtls.test", host: "mtls.test", cert: good })).status).toBe(403);
    expect(backend.heads()).toHaveLength(0);
  });

  test("a CA Secret that is replaced applies: the old CA's client is refused", async () => {
    const { port } = await start(SECRET, [caSecret(otherCa.certPem)]);
    expect((await request(port, { sni: "mtls.test", host: "mtls.test", cert: good })).status).toBe(400);
    expect((await request(port, { sni: "mtls.test", host: "mtls.test", cert: foreign })).status).toBe(200);
  });
});

describe("the policy covers the whole host, as ingress-nginx's server block", () => {
  // Two Ingresses on one host, compiled by the compiler: only the older one sets auth-tls-*.
  // ingress-nginx puts ssl_verify_client on the server, so the younger one's path needs a
  // certificate too; before, it was served without one.
  function compiled(backendPort: number) {
    const ca64 = Buffer.from(ca.certPem).toString("base64");
    const ing = (name: string, created: string, ann: Record<string, string>, host: string | null, path: string) => `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ${name}, namespace: shop, creationTimestamp: "${created}", annotations: ${JSON.stringify(ann)}}
spec:
  ingressClassName: portico
  rules: [{${host === null ? "" : `host: ${host}, `}http: {paths: [{path: ${path}, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}]`;
    const fx = loadFixture(
      [
        `apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {ports: [{name: http, port: 80}]}`,
        `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-x, namespace: shop, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: ${backendPort}}]
endpoints: [{addresses: ["127.0.0.1"], conditions: {ready: true}}]`,
        `apiVersion: v1
kind: Secret
metadata: {name: client-ca, namespace: shop}
type: Opaque
data: {ca.crt: ${ca64}}`,
        ing("secure", "2026-01-01T00:00:00Z", SECRET, "mtls.test", "/secure"),
        ing("later", "2026-02-01T00:00:00Z", {}, "mtls.test", "/p"),
        ing("hostless-secure", "2026-01-01T00:00:00Z", SECRET, null, "/secure"),
        ing("hostless-later", "2026-02-01T00:00:00Z", {}, null, "/p"),
      ].join("\n---\n"),
    );
    return compile(fx.snapshot, DEFAULT_COMPILE_CONFIG);
  }

  test("the second Ingress's path: 400 without a certificate, 400 with another CA's, 200 with the CA's", async () => {
    const backend = await okBackend();
    const r = compiled(backend.port);
    expect(r.diagnostics.filter((d) => d.reason === "HostClientCertificates").map((d) => d.name).sort()).toEqual(["hostless-later", "later"]);
    const proxy = startTlsProxy(r.table, { hosts: ["mtls.test", "open.test"] });
    cleanup.push(() => proxy.stop());
    const none = await request(proxy.port, { sni: "mtls.test", host: "mtls.test" });
    expect(none.status).toBe(400);
    expect(none.head).toContain("No required SSL certificate was sent");
    expect((await request(proxy.port, { sni: "mtls.test", host: "mtls.test", cert: foreign })).status).toBe(400);
    expect(backend.heads()).toHaveLength(0);
    expect((await request(proxy.port, { sni: "mtls.test", host: "mtls.test", cert: good })).status).toBe(200);
    expect(header(backend.heads().at(-1), "ssl-client-verify")).toBe("SUCCESS");
  });

  test("a hostless rule: the hostless policy covers the other Ingress's hostless path for any Host", async () => {
    const backend = await okBackend();
    const proxy = startTlsProxy(compiled(backend.port).table, { hosts: ["mtls.test", "open.test"] });
    cleanup.push(() => proxy.stop());
    expect((await request(proxy.port, { sni: "open.test", host: "open.test" })).status).toBe(400);
    expect(backend.heads()).toHaveLength(0);
    expect((await request(proxy.port, { sni: "open.test", host: "open.test", cert: good })).status).toBe(200);
  });
});

describe("the handshake asks for a certificate only while a route reads one", () => {
  /**
   * What openssl s_client saw: it prints "Requested Signature Algorithms" only when the server
   * sent a CertificateRequest (it prints "No client certificate CA names sent" either way).
   */
  async function askedForCertificate(port: number, sni: string | null): Promise<boolean> {
    const p = Bun.spawn(["openssl", "s_client", "-connect", `127.0.0.1:${port}`, ...(sni === null ? ["-noservername"] : ["-servername", sni])], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const out = await new Response(p.stdout).text();
    await p.exited;
    if (!out.includes("BEGIN CERTIFICATE") && !out.includes("Server certificate")) throw new Error(`no TLS handshake: ${out.slice(0, 200)}`);
    return out.includes("Requested Signature Algorithms");
  }

  test("serveTraffic: none without client-certificate routes (at start-up and after a table swap), asked for while one is live; a rotation keeps it", async () => {
    const backend = await okBackend();
    const b = makeBackend([backend.port]);
    const plain = makeTable([{ host: "open.test", backend: b, tls: true }]);
    const withCerts = makeTable([
      { host: "mtls.test", backend: b, options: optionsOf(SECRET), tls: true },
      { host: "open.test", backend: b, tls: true },
    ]);
    // verify-client off reads no certificate: no reason to ask.
    const off = makeTable([{ host: "mtls.test", backend: b, options: optionsOf({ ...SECRET, [`${N}auth-tls-verify-client`]: "off" }), tls: true }]);
    let table = plain;
    const config = testConfig({ httpPort: freePort(), httpsPort: freePort(), tlsCiphers: "ECDHE-ECDSA-AES128-GCM-SHA256", http2: true });
    const builder = createTlsBuilder(config, silentLogger);
    const serving = serveTraffic({ config, log: silentLogger, inst: createInstruments(new Registry(), { version: "t" }), table: () => table, tls: builder.build([]), ports: "alone" });
    cleanup.push(() => serving.shutdown({ delay: false }));
    const port = serving.ports.https;

    expect(await askedForCertificate(port, "mtls.test")).toBe(false);
    expect(await askedForCertificate(port, null)).toBe(false);
    // A client holding a certificate sends none when not asked: the request carries none.
    expect((await request(port, { sni: "open.test", host: "open.test", cert: good })).status).toBe(200);

    table = withCerts;
    serving.tableChanged();
    // A route reading certificates moves the port to node:http2 (serving/https.ts); until the
    // outgoing Bun.serve server has drained, SO_REUSEPORT may give it a new connection.
    await serving.settled();
    expect(await askedForCertificate(port, "mtls.test")).toBe(true);
    expect(await askedForCertificate(port, null)).toBe(true);
    expect((await request(port, { sni: "mtls.test", host: "mtls.test", cert: good })).status).toBe(200);
    expect((await request(port, { sni: "mtls.test", host: "mtls.test" })).status).toBe(400);

    // A certificate rotation swaps the server's context: the verify mode stays.
    serving.setTls(builder.build([]).entries, "rotated");
    await serving.settled();
    expect(await askedForCertificate(port, "mtls.test")).toBe(true);

    table = off;
    serving.tableChanged();
    await serving.settled();
    expect(await askedForCertificate(port, "mtls.test")).toBe(false);
    table = plain;
    serving.tableChanged();
    await serving.settled();
    expect(await askedForCertificate(port, "open.test")).toBe(false);
  });

  test("serveTraffic started with a client-certificate route asks from the first handshake", async () => {
    const backend = await okBackend();
    const table = makeTable([{ host: "mtls.test", backend: makeBackend([backend.port]), options: optionsOf(SECRET), tls: true }]);
    const config = testConfig({ httpPort: freePort(), httpsPort: freePort(), tlsCiphers: "ECDHE-ECDSA-AES128-GCM-SHA256", http2: true });
    const serving = serveTraffic({ config, log: silentLogger, inst: createInstruments(new Registry(), { version: "t" }), table: () => table, tls: createTlsBuilder(config, silentLogger).build([]), ports: "alone" });
    cleanup.push(() => serving.shutdown({ delay: false }));
    expect(await askedForCertificate(serving.ports.https, "mtls.test")).toBe(true);
  });

  test("serveTraffic splits the port by SNI: the client-certificate host on node:http2 (asked, checked), an ordinary host on Bun.serve (never asked), the former's Host there 421 and never forwarded", async () => {
    const backend = await okBackend();
    const b = makeBackend([backend.port]);
    const table = makeTable([
      { host: "mtls.test", backend: b, options: optionsOf(SECRET), tls: true },
      { host: "open.test", backend: b, tls: true },
    ]);
    const config = testConfig({ httpPort: freePort(), httpsPort: freePort(), tlsCiphers: "ECDHE-ECDSA-AES128-GCM-SHA256", http2: true });
    const serving = serveTraffic({ config, log: silentLogger, inst: createInstruments(new Registry(), { version: "t" }), table: () => table, tls: createTlsBuilder(config, silentLogger).build([]), ports: "alone" });
    cleanup.push(() => serving.shutdown({ delay: false }));
    const port = serving.ports.https;
    expect(serving.httpsListener).toBe("split");
    expect(await askedForCertificate(port, "mtls.test")).toBe(true);
    // No SNI goes to node:http2, which serves every host: asked there too.
    expect(await askedForCertificate(port, null)).toBe(true);
    // Browsers holding certificates get no picker on the other hosts.
    expect(await askedForCertificate(port, "open.test")).toBe(false);
    const ok = await request(port, { sni: "mtls.test", host: "mtls.test", cert: good });
    expect(ok.status).toBe(200);
    expect(header(backend.heads().at(-1), "ssl-client-verify")).toBe("SUCCESS");
    expect((await request(port, { sni: "mtls.test", host: "mtls.test" })).status).toBe(400);
    // Fails closed: on Bun.serve's side, which shows no certificate, the host is misdirected.
    const forwarded = backend.heads().length;
    expect((await request(port, { sni: "open.test", host: "mtls.test", cert: good })).status).toBe(421);
    expect(backend.heads().length).toBe(forwarded);
    expect((await request(port, { sni: "open.test", host: "open.test" })).status).toBe(200);
  });

  test("turning it on sends GOAWAY to HTTP/2 connections made before, which carry no certificate", async () => {
    const backend = await okBackend();
    const b = makeBackend([backend.port]);
    const proxy = startTlsProxy(makeTable([{ host: "open.test", backend: b, tls: true }]), { hosts: ["mtls.test", "open.test"] });
    cleanup.push(() => proxy.stop());
    const c = await rawH2(proxy.port, "open.test");
    cleanup.push(() => c.close());
    await eventually(() => c.frames.length > 0); // the server's SETTINGS: the session is up
    expect(c.goaway()).toBeNull();
    proxy.setTable(makeTable([{ host: "mtls.test", backend: b, options: optionsOf(SECRET), tls: true }, { host: "open.test", backend: b, tls: true }]));
    expect(proxy.listener.requestsClientCertificates).toBe(true);
    await eventually(() => c.goaway() !== null);
    expect(c.goaway()).toBe(0); // NO_ERROR: a graceful close, the client reconnects
  });
});

describe("before the server block's own answers", () => {
  test("app-root redirects only a client the certificate check lets through (nginx checks it before any phase)", async () => {
    // nginx.tmpl SERVER: ssl_verify_client applies when the request is read
    // (ngx_http_process_request), the `if ($uri = /) { return 302 ... }` of app-root runs in
    // the server's rewrite phase after it: no certificate, 400, not the redirect.
    const { port, backend } = await start({ ...SECRET, [`${N}app-root`]: "/app" });
    const none = await request(port, { sni: "mtls.test", host: "mtls.test", path: "/" });
    expect(none.status).toBe(400);
    const ok = await request(port, { sni: "mtls.test", host: "mtls.test", cert: good, path: "/" });
    expect(ok.status).toBe(302);
    expect(header(ok.head, "location")).toBe("https://mtls.test/app");
    expect(backend.heads()).toEqual([]);
  });

  test("a CA that cannot be used answers 403 ahead of app-root (nginx.tmpl SERVER: AuthTLSError's `return 403` comes first)", async () => {
    const { port, backend } = await start({ ...SECRET, [`${N}app-root`]: "/app" }, []);
    const r = await request(port, { sni: "mtls.test", host: "mtls.test", cert: good, path: "/" });
    expect(r.status).toBe(403);
    expect(backend.heads()).toEqual([]);
  });
});
