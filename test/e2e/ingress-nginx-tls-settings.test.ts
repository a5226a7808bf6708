// ingress-nginx's TLS settings of its own HTTPS listener (ConfigMap ssl-protocols, ssl-ciphers,
// ssl-ecdh-curve; nginx.tmpl's http block writes `ssl_protocols`, `ssl_ciphers` with
// `ssl_prefer_server_ciphers on`, and `ssl_ecdh_curve`; config.go's defaults are "TLSv1.2
// TLSv1.3" and "auto"), asserted as real handshakes against the real Portico process: a
// node:tls client offers only the versions, suites or groups a case chooses. Ports
// kubernetes/ingress-nginx test/e2e/settings/tls.go "setting cipher suite" and
// settings/ssl_ciphers.go. Both of Portico's HTTPS listeners are covered: Bun.serve, and
// node:http2's, which serves the hosts with a gRPC route (docs/design.md "HTTP/2 and gRPC").
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { listeningSockets } from "../tls/helpers.ts";
import { createCertificate } from "../tls/pki.ts";
import { eventually } from "../wait.ts";
import { allStarted, startBackend, startPortico, type Backend, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, tlsSecret, yamlDocs } from "./objects.ts";

const HOST = "settings-tls";
// tls.go: "Two ciphers supported by each of TLSv1.2 and TLSv1."
const TEST_CIPHERS = "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-SHA";
const HIGH_STRING = "HIGH:!aNULL:!MD5";
// `openssl ciphers 'HIGH:!aNULL:!MD5'` (OpenSSL 3.0), restricted to the TLS 1.2 suites Portico serves.
const HIGH_SUITES = [
  "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
  "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES128-SHA256", "ECDHE-RSA-AES128-SHA256",
  "ECDHE-ECDSA-AES256-SHA", "ECDHE-RSA-AES256-SHA", "ECDHE-ECDSA-AES128-SHA", "ECDHE-RSA-AES128-SHA",
  "AES256-GCM-SHA384", "AES128-GCM-SHA256", "AES256-SHA", "AES128-SHA",
];

let dir = "";
let echo: Backend;
let plain: Portico;
let tuned: Portico;
let tunedH2: Portico;
/** ConfigMap ssl-ciphers "HIGH:!aNULL:!MD5", nginx's own ssl_ciphers default, kept in many ConfigMaps. */
let highString: Portico;
/** Started without the TLS keys; the test edits its ConfigMap while it serves. */
let edited: Portico;
const writeEdited = (data: Record<string, string>) => {
  writeFileSync(join(dir, "cm.tmp"), yamlDocs([{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "ingress-nginx-controller", namespace: "ingress-nginx" }, data }]));
  renameSync(join(dir, "cm.tmp"), join(dir, "edited", "cm.yaml"));
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "portico-tls-settings-"));
  echo = startBackend("echo");
  // framework.CreateIngressTLSSecret: an RSA certificate, so the ECDHE-RSA suites apply.
  const cert = createCertificate({ subjectCN: HOST, sans: [HOST], keyAlgorithm: "rsa" });
  const base = [
    ingressClass(), service("web", "echo"), slice("web", "echo", [echo.port]), tlsSecret("web", "tls", cert.certPem, cert.keyPem),
    ingress("web", "tls", [{ host: HOST, paths: [{ path: "/", service: "echo" }] }], { tls: [{ hosts: [HOST], secretName: "tls" }] }),
  ];
  const configMap = {
    apiVersion: "v1", kind: "ConfigMap", metadata: { name: "ingress-nginx-controller", namespace: "ingress-nginx" },
    data: { "ssl-ciphers": TEST_CIPHERS, "ssl-protocols": "TLSv1.2", "ssl-ecdh-curve": "P-384" },
  };
  // A gRPC route on the host sends its connections to the node:http2 listener (the HTTPS port
  // split by SNI, serving/tls-split.ts).
  const grpc = ingress("web", "grpc", [{ host: HOST, paths: [{ path: "/grpc.Echo", service: "echo" }] }], {
    annotations: { "nginx.ingress.kubernetes.io/backend-protocol": "GRPC" },
  });
  const highConfigMap = { ...configMap, data: { "ssl-ciphers": HIGH_STRING } };
  for (const [name, objs] of [["plain", base], ["tuned", [...base, configMap]], ["tuned-h2", [...base, configMap, grpc]], ["high", [...base, highConfigMap]]] as const) {
    mkdirSync(join(dir, name));
    writeFileSync(join(dir, name, "all.yaml"), yamlDocs([...objs]));
  }
  mkdirSync(join(dir, "edited"));
  writeFileSync(join(dir, "edited", "all.yaml"), yamlDocs([...base]));
  writeEdited({});
  const cm = ["--nginx-configmap", "ingress-nginx/ingress-nginx-controller"];
  [plain, tuned, tunedH2, edited, highString] = await allStarted([
    startPortico(["--manifests", join(dir, "plain")]),
    // Two workers: the primary builds the entries and sends them over the wire to each.
    startPortico(["--manifests", join(dir, "tuned"), ...cm, "--workers", "2"]),
    startPortico(["--manifests", join(dir, "tuned-h2"), ...cm]),
    startPortico(["--manifests", join(dir, "edited"), ...cm, "--workers", "2"]),
    startPortico(["--manifests", join(dir, "high"), ...cm]),
  ]);
});

afterAll(async () => {
  await Promise.all([plain?.stop(), tuned?.stop(), tunedH2?.stop(), edited?.stop(), highString?.stop()]);
  echo?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Handshake {
  readonly ok: boolean;
  readonly version?: string;
  readonly cipher?: string;
  readonly status?: string;
}

/** A handshake with `p`'s HTTPS port offering `opts`, then one GET / over it: what was agreed and the status line. */
function handshake(p: Portico, opts: tls.ConnectionOptions = {}, host = HOST, path = "/"): Promise<Handshake> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let agreed: Handshake = { ok: false };
    const s = tls.connect({ host: "127.0.0.1", port: p.ports.https, servername: host, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"], ...opts }, () => {
      agreed = { ok: true, version: s.getProtocol() ?? "", cipher: s.getCipher().name };
      s.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    });
    s.on("data", (d: Buffer) => chunks.push(d));
    s.on("close", () => {
      const raw = Buffer.concat(chunks).toString("latin1");
      resolve(agreed.ok ? { ...agreed, status: raw.slice(0, raw.indexOf("\r\n")) } : agreed);
    });
    s.on("error", () => s.destroy());
  });
}

describe("default TLS settings (config.go: ssl-protocols \"TLSv1.2 TLSv1.3\")", () => {
  test("TLS 1.3 is negotiated and the request served", async () => {
    expect(await handshake(plain)).toEqual({ ok: true, version: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256", status: "HTTP/1.1 200 OK" });
  });
  test("TLS 1.0 and 1.1 are refused", async () => {
    expect((await handshake(plain, { minVersion: "TLSv1", maxVersion: "TLSv1" })).ok).toBe(false);
    expect((await handshake(plain, { minVersion: "TLSv1.1", maxVersion: "TLSv1.1" })).ok).toBe(false);
  });
  test("the server's suite order wins (nginx.tmpl: ssl_prefer_server_ciphers on)", async () => {
    // The default list puts ECDHE-RSA-AES128-GCM-SHA256 before -AES256-GCM-SHA384; the client
    // prefers the latter.
    const h = await handshake(plain, { maxVersion: "TLSv1.2", ciphers: "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES128-GCM-SHA256" });
    expect(h).toEqual({ ok: true, version: "TLSv1.2", cipher: "ECDHE-RSA-AES128-GCM-SHA256", status: "HTTP/1.1 200 OK" });
  });
});

for (const [name, get] of [["Bun.serve listener", () => tuned], ["node:http2 listener (the host's gRPC route, through the SNI split)", () => tunedH2]] as const) {
  describe(`settings/tls.go, ssl-ciphers ${TEST_CIPHERS}, ssl-protocols TLSv1.2, ssl-ecdh-curve P-384: ${name}`, () => {
    test("setting cipher suite", async () => {
      if (get() === tunedH2) await tunedH2.waitForLine(/HTTPS split by SNI/);
      // The Go client offers TLS 1.3 and its default suites: TLS 1.2 with the first listed suite.
      expect(await handshake(get())).toEqual({ ok: true, version: "TLSv1.2", cipher: "ECDHE-RSA-AES256-GCM-SHA384", status: "HTTP/1.1 200 OK" });
    });
    test("a client offering TLS 1.3 only is refused", async () => {
      expect((await handshake(get(), { minVersion: "TLSv1.3" })).ok).toBe(false);
    });
    test("a suite outside ssl-ciphers is refused; the second one listed is served", async () => {
      expect((await handshake(get(), { ciphers: "ECDHE-RSA-AES128-GCM-SHA256" })).ok).toBe(false);
      expect(await handshake(get(), { ciphers: "ECDHE-RSA-AES256-SHA" })).toEqual({ ok: true, version: "TLSv1.2", cipher: "ECDHE-RSA-AES256-SHA", status: "HTTP/1.1 200 OK" });
    });
    test("ssl-ecdh-curve: a client without P-384 is refused, one with it served", async () => {
      expect((await handshake(get(), { ecdhCurve: "X25519" })).ok).toBe(false);
      expect((await handshake(get(), { ecdhCurve: "P-384" })).status).toBe("HTTP/1.1 200 OK");
    });
  });
}

// nginx hands ssl_ciphers to OpenSSL (SSL_CTX_set_cipher_list), which reads it as a cipher
// string (openssl-ciphers(1)); Portico reads it the same way over the suites it serves.
describe(`ConfigMap ssl-ciphers ${HIGH_STRING}: the suites OpenSSL selects, in OpenSSL's order`, () => {
  test("RSA key exchange and CBC suites are served, as OpenSSL's HIGH has them", async () => {
    for (const suite of ["AES128-SHA", "AES256-GCM-SHA384", "ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES128-SHA256"]) {
      expect(await handshake(highString, { maxVersion: "TLSv1.2", ciphers: suite }), suite).toEqual({ ok: true, version: "TLSv1.2", cipher: suite, status: "HTTP/1.1 200 OK" });
    }
  });
  test("the server's order is OpenSSL's: AES-256-GCM before CHACHA20 before AES-128-GCM, ECDHE before RSA key exchange", async () => {
    const h = await handshake(highString, { maxVersion: "TLSv1.2", ciphers: "AES128-SHA:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES256-GCM-SHA384" });
    expect(h).toEqual({ ok: true, version: "TLSv1.2", cipher: "ECDHE-RSA-AES256-GCM-SHA384", status: "HTTP/1.1 200 OK" });
    const k = await handshake(highString, { maxVersion: "TLSv1.2", ciphers: "AES128-SHA:ECDHE-RSA-AES128-SHA" });
    expect(k).toEqual({ ok: true, version: "TLSv1.2", cipher: "ECDHE-RSA-AES128-SHA", status: "HTTP/1.1 200 OK" });
  });
  test("explain names the same list, from the ConfigMap (--tls-ciphers)", async () => {
    const q = new URLSearchParams({ host: HOST, path: "/", scheme: "https" });
    const res = await fetch(`${highString.admin}/debug/explain?${q}`);
    expect(res.status).toBe(200);
    const tlsOf = ((await res.json()) as { tls?: { ciphers: string[]; ciphersFrom: unknown } }).tls;
    expect({ ciphers: tlsOf?.ciphers, from: tlsOf?.ciphersFrom }).toEqual({ ciphers: HIGH_SUITES, from: { source: "tls-ciphers" } });
    expect(highString.lines.some((l) => /InvalidConfigKey/.test(l))).toBe(false);
  });
});

describe("settings/tls.go: the ConfigMap edited while serving (f.SetNginxConfigMapData, then the request)", () => {
  test("ssl-ciphers and ssl-protocols apply with no restart; a later edit back restores TLS 1.3", async () => {
    expect((await handshake(edited)).version).toBe("TLSv1.3");
    // A rotation starts a new listener beside the old one, which keeps accepting while it
    // drains (src/tls/listener.ts): a change is complete once the port is back to one
    // listening socket per worker, and not before.
    const settledListeners = listeningSockets(edited.ports.https);
    writeEdited({ "ssl-ciphers": TEST_CIPHERS, "ssl-protocols": "TLSv1.2" });
    // Every worker takes the new entries (each connection may land on any of them).
    const all = async (version: string) => {
      if (listeningSockets(edited.ports.https) !== settledListeners) return false;
      for (let i = 0; i < 8; i++) if ((await handshake(edited)).version !== version) return false;
      return listeningSockets(edited.ports.https) === settledListeners;
    };
    await eventually(() => all("TLSv1.2"), 15_000, "TLS 1.2 after the edit");
    expect(await handshake(edited)).toEqual({ ok: true, version: "TLSv1.2", cipher: "ECDHE-RSA-AES256-GCM-SHA384", status: "HTTP/1.1 200 OK" });
    expect(edited.lines.some((l) => /data plane change at the next restart/.test(l))).toBe(false);
    // A cipher string OpenSSL refuses (an "invalid command": nginx's configuration test fails
    // and its last good configuration stays): the key keeps its last good list.
    writeEdited({ "ssl-ciphers": "HIGH:!aNULL:%MD5", "ssl-protocols": "TLSv1.2" });
    const line = await edited.waitForLine(/ConfigMap key not applied.*ssl-ciphers=/);
    expect(line).toContain("InvalidConfigKey");
    expect(line).toContain("its last good value is kept");
    expect(await handshake(edited)).toEqual({ ok: true, version: "TLSv1.2", cipher: "ECDHE-RSA-AES256-GCM-SHA384", status: "HTTP/1.1 200 OK" });
    expect((await handshake(edited, { ciphers: "ECDHE-RSA-AES128-GCM-SHA256" })).ok).toBe(false);
    writeEdited({});
    await eventually(() => all("TLSv1.3"), 15_000, "TLS 1.3 after the keys are removed");
  });
});
