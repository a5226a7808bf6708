// The per-Ingress annotations ssl-ciphers and ssl-prefer-server-ciphers, asserted as real
// handshakes against the real Portico process: a node:tls client offers only the TLS 1.2
// suites a case chooses. ingress-nginx writes them into the host's server block
// (internal/ingress/annotations/sslcipher/main.go; nginx.tmpl `ssl_ciphers` and
// `ssl_prefer_server_ciphers` under `server`), the first Ingress of the host that sets each
// deciding (controller.go createServers). Ports kubernetes/ingress-nginx
// test/e2e/annotations/sslciphers.go. Both HTTPS listeners are covered: Bun.serve with two
// workers (the entries go over the wire), and node:http2's, which serves the hosts with a gRPC
// route (docs/design.md "HTTP/2 and gRPC": the SNI split).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { createCertificate } from "../tls/pki.ts";
import { eventually } from "../wait.ts";
import { allStarted, startBackend, startPortico, type Backend, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, tlsSecret, yamlDocs } from "./objects.ts";

type Obj = ReturnType<typeof ingress>;

const AES128 = "ECDHE-RSA-AES128-GCM-SHA256";
const AES256 = "ECDHE-RSA-AES256-GCM-SHA384";
const AES128_CBC = "ECDHE-RSA-AES128-SHA";
const RSA_KX = "AES128-SHA";
const CHACHA = "ECDHE-RSA-CHACHA20-POLY1305";
const HOSTS = ["bogus.test", "own.test", "other.test", "shared.test", "client-order.test", "server-order.test", "expr-off.test", "expr-on.test", "nocert.test", "gcm.test", "default.test", "refused.test"];

let dir = "";
let echo: Backend;
let bunListener: Portico;
let h2Listener: Portico;
/** Started with live.test's list; the test edits the Ingress while it serves. */
let edited: Portico;
let liveObjects: (list: string | null) => Obj[];
const writeLive = (list: string | null) => {
  writeFileSync(join(dir, "live", "all.tmp"), yamlDocs(liveObjects(list)));
  renameSync(join(dir, "live", "all.tmp"), join(dir, "live", "all.yaml"));
};

const annotated = (name: string, host: string, annotations: Record<string, string>, created: string, tlsHost = true): Obj => {
  const o = ingress("web", name, [{ host, paths: [{ path: "/", service: "echo" }] }], {
    annotations,
    ...(tlsHost ? { tls: [{ hosts: [host], secretName: "tls" }] } : {}),
  });
  return { ...o, metadata: { ...(o.metadata as object), creationTimestamp: created } };
};
const ciphers = (list: string) => ({ "nginx.ingress.kubernetes.io/ssl-ciphers": list });
const prefer = (on: string) => ({ "nginx.ingress.kubernetes.io/ssl-prefer-server-ciphers": on });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "portico-ssl-ciphers-"));
  echo = startBackend("echo");
  // RSA, so the ECDHE-RSA suites apply; one certificate names every host.
  const cert = createCertificate({ subjectCN: "own.test", sans: HOSTS, keyAlgorithm: "rsa" });
  const t0 = "2026-01-01T00:00:00Z";
  const t1 = "2026-01-02T00:00:00Z";
  const objs: Obj[] = [
    ingressClass(), service("web", "echo"), slice("web", "echo", [echo.port]), tlsSecret("web", "tls", cert.certPem, cert.keyPem),
    annotated("own", "own.test", ciphers(AES256), t0),
    annotated("other", "other.test", {}, t0),
    // A word OpenSSL does not know selects nothing and is skipped (openssl-ciphers(1)); the rest serves.
    annotated("bogus", "bogus.test", ciphers(`${AES256}:BOGUS-CIPHER`), t0),
    // OpenSSL cipher strings, read as OpenSSL 3 reads them over the suites Portico serves.
    annotated("gcm", "gcm.test", ciphers("ECDHE+AESGCM:!SHA1"), t0),
    annotated("default", "default.test", ciphers("DEFAULT"), t0),
    // A string OpenSSL refuses ("invalid command": nginx's configuration test would fail):
    // InvalidAnnotation, and the listener's list serves.
    annotated("refused", "refused.test", ciphers("HIGH:!aNULL:%MD5"), t0),
    // No spec.tls: the default certificate (whatever its key type) with the host's own list.
    annotated("nocert", "nocert.test", ciphers("ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES256-GCM-SHA384"), t0, false),
    // Two Ingresses of one host: the older one's list counts (createServers), whatever the names.
    annotated("z-older", "shared.test", ciphers(AES256), t0),
    annotated("a-newer", "shared.test", ciphers(AES128), t1),
    annotated("client-order", "client-order.test", { ...ciphers(`${AES256}:${AES128}`), ...prefer("false") }, t0),
    annotated("server-order", "server-order.test", { ...ciphers(`${AES256}:${AES128}`), ...prefer("true") }, t0),
    // sslciphers.go's own values: every suite Portico serves (EXPORT56, RC4, SSLv2 and EXP are
    // words OpenSSL 3 lacks; @SECLEVEL=0 keeps all), in OpenSSL's order.
    annotated("expr-off", "expr-off.test", { ...ciphers("ALL:!aNULL:!EXPORT56:RC4+RSA:+HIGH:+MEDIUM:+LOW:+SSLv2:+EXP"), ...prefer("false") }, t0),
    annotated("expr-on", "expr-on.test", { ...ciphers("ALL:!aNULL:!EXPORT56:RC4+RSA@STRENGTH:+HIGH@SECLEVEL=0:+MEDIUM:+LOW:+SSLv2:+EXP"), ...prefer("true") }, t0),
  ];
  // A gRPC path on every host sends their connections to node:http2 (the HTTPS port split by
  // SNI, serving/tls-split.ts); it sets no ssl-ciphers, so it decides nothing here.
  const grpc = HOSTS.map((host) =>
    ingress("web", `grpc-${host}`, [{ host, paths: [{ path: "/grpc.Echo", service: "echo" }] }], {
      annotations: { "nginx.ingress.kubernetes.io/backend-protocol": "GRPC" },
    }),
  );
  for (const [name, all] of [["bun", objs], ["h2", [...objs, ...grpc]]] as const) {
    mkdirSync(join(dir, name));
    writeFileSync(join(dir, name, "all.yaml"), yamlDocs([...all]));
  }
  liveObjects = (list) => [
    ingressClass(), service("web", "echo"), slice("web", "echo", [echo.port]), tlsSecret("web", "tls", cert.certPem, cert.keyPem),
    annotated("live", "own.test", list === null ? {} : ciphers(list), t0),
  ];
  mkdirSync(join(dir, "live"));
  writeLive(AES256);
  [bunListener, h2Listener, edited] = await allStarted([
    startPortico(["--manifests", join(dir, "bun"), "--workers", "2"]),
    startPortico(["--manifests", join(dir, "h2")]),
    startPortico(["--manifests", join(dir, "live")]),
  ]);
  await h2Listener.waitForLine(/HTTPS split by SNI/);
});

afterAll(async () => {
  await Promise.all([bunListener?.stop(), h2Listener?.stop(), edited?.stop()]);
  echo?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Handshake {
  readonly ok: boolean;
  readonly cipher?: string;
  readonly status?: string;
}

/** A TLS 1.2 handshake for `host` offering `suites` in that order, then one GET /: the suite agreed and the status line. */
function handshake(p: Portico, host: string, suites: string): Promise<Handshake> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let agreed: Handshake = { ok: false };
    const s = tls.connect({ host: "127.0.0.1", port: p.ports.https, servername: host, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"], maxVersion: "TLSv1.2", ciphers: suites }, () => {
      agreed = { ok: true, cipher: s.getCipher().name };
      s.write(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    });
    s.on("data", (d: Buffer) => chunks.push(d));
    s.on("close", () => {
      const raw = Buffer.concat(chunks).toString("latin1");
      resolve(agreed.ok ? { ...agreed, status: raw.slice(0, raw.indexOf("\r\n")) } : agreed);
    });
    s.on("error", () => s.destroy());
  });
}

const OK = (cipher: string): Handshake => ({ ok: true, cipher, status: "HTTP/1.1 200 OK" });

for (const [name, get] of [["Bun.serve listener, two workers", () => bunListener], ["node:http2 listener (the hosts' gRPC routes, through the SNI split)", () => h2Listener]] as const) {
  describe(`per-host ssl-ciphers and ssl-prefer-server-ciphers: ${name}`, () => {
    test("a host with its own list refuses a suite another host of the listener accepts", async () => {
      expect(await handshake(get(), "other.test", AES128)).toEqual(OK(AES128));
      expect((await handshake(get(), "own.test", AES128)).ok).toBe(false);
      expect(await handshake(get(), "own.test", AES256)).toEqual(OK(AES256));
    });
    test("a word OpenSSL lacks is skipped, as OpenSSL skips it: the rest of the list serves the host", async () => {
      expect((await handshake(get(), "bogus.test", AES128)).ok).toBe(false);
      expect(await handshake(get(), "bogus.test", `${AES128}:${AES256}`)).toEqual(OK(AES256));
    });
    test("ECDHE+AESGCM:!SHA1: ECDHE with AES-GCM only, AES-256 first (OpenSSL's order)", async () => {
      for (const refused of [CHACHA, AES128_CBC, "AES128-GCM-SHA256"]) expect((await handshake(get(), "gcm.test", refused)).ok, refused).toBe(false);
      expect(await handshake(get(), "gcm.test", `${AES128}:${AES256}:${CHACHA}`)).toEqual(OK(AES256));
      expect(await handshake(get(), "gcm.test", AES128)).toEqual(OK(AES128));
    });
    test("DEFAULT: OpenSSL's default list, RSA key exchange and CBC included, AES-256-GCM first", async () => {
      expect(await handshake(get(), "default.test", RSA_KX)).toEqual(OK(RSA_KX));
      expect(await handshake(get(), "default.test", `${RSA_KX}:${AES128_CBC}:${CHACHA}:${AES128}:${AES256}`)).toEqual(OK(AES256));
      // The listener's list (ECDHE with AES-GCM or CHACHA20) refuses both.
      expect((await handshake(get(), "other.test", `${RSA_KX}:${AES128_CBC}`)).ok).toBe(false);
    });
    test("a string OpenSSL refuses is not applied: the listener's list serves the host", async () => {
      expect(await handshake(get(), "refused.test", `${AES256}:${AES128}`)).toEqual(OK(AES128));
      expect((await handshake(get(), "refused.test", RSA_KX)).ok).toBe(false);
    });
    test("a host on the default certificate gets its own list too", async () => {
      const both128 = `${AES128}:ECDHE-ECDSA-AES128-GCM-SHA256`;
      expect((await handshake(get(), "nocert.test", both128)).ok).toBe(false);
      expect((await handshake(get(), "nocert.test", `${AES256}:ECDHE-ECDSA-AES256-GCM-SHA384`)).status).toBe("HTTP/1.1 200 OK");
      // The same client on a host without a list of its own (the default entry) is served.
      expect((await handshake(get(), "unknown.test", both128)).ok).toBe(true);
    });
    test("the oldest Ingress of the host that sets ssl-ciphers decides", async () => {
      expect((await handshake(get(), "shared.test", AES128)).ok).toBe(false);
      expect(await handshake(get(), "shared.test", AES256)).toEqual(OK(AES256));
    });
    test("the host list's order picks the suite (ssl_prefer_server_ciphers on); false cannot apply per host and the server's order stays", async () => {
      expect(await handshake(get(), "server-order.test", `${AES128}:${AES256}`)).toEqual(OK(AES256));
      expect(await handshake(get(), "client-order.test", `${AES128}:${AES256}`)).toEqual(OK(AES256));
    });
    // The Go tests read the server block's text, then expect 200 over HTTPS. Here the string
    // applies: RSA key exchange and CBC suites are served (the listener's list has neither), and
    // OpenSSL's order picks AES-256-GCM where the listener's picks AES-128-GCM.
    test("sslciphers.go should change ssl ciphers: 200 over HTTPS with the string's suites", async () => {
      expect(await handshake(get(), "expr-off.test", `${AES128}:${AES256}`)).toEqual(OK(AES256));
      expect(await handshake(get(), "expr-off.test", RSA_KX)).toEqual(OK(RSA_KX));
    });
    test("sslciphers.go should keep ssl ciphers: 200 over HTTPS with the string's suites", async () => {
      expect(await handshake(get(), "expr-on.test", `${AES128}:${AES256}`)).toEqual(OK(AES256));
      expect(await handshake(get(), "expr-on.test", AES128_CBC)).toEqual(OK(AES128_CBC));
    });
  });
}

test("a cipher string OpenSSL refuses and ssl-prefer-server-ciphers false are reported", async () => {
  const line = await bunListener.waitForLine(/ssl-ciphers.*HIGH:!aNULL:%MD5/);
  expect(line).toContain("InvalidAnnotation");
  expect(line).toContain("at 13: ingress-nginx takes letters, digits");
  const prefer = await bunListener.waitForLine(/client-order.*ssl-prefer-server-ciphers/);
  expect(prefer).toContain("InvalidAnnotation");
  expect(prefer).toContain("false cannot be applied per host");
  // Three: refused's list, and the false of expr-off and client-order. The strings of expr-off,
  // expr-on, bogus, gcm and default apply.
  let text = "";
  await eventually(async () => {
    text = await (await fetch(`${bunListener.admin}/metrics`)).text();
    return /^portico_diagnostics\{reason="InvalidAnnotation"\} 3$/m.test(text);
  }, 15_000, "three InvalidAnnotation diagnostics");
  expect(text).toMatch(/^portico_diagnostics\{reason="InvalidAnnotation"\} 3$/m);
});

test("an edit of ssl-ciphers applies while serving: the listener takes the new entries as it takes new certificates", async () => {
  expect((await handshake(edited, "own.test", AES128)).ok).toBe(false);
  // Every handshake of a round must agree: a draining listener keeps accepting for a while.
  const all = async (ok: boolean) => {
    for (let i = 0; i < 6; i++) if ((await handshake(edited, "own.test", AES128)).ok !== ok) return false;
    return true;
  };
  writeLive(null);
  await eventually(() => all(true), 15_000, "the listener's list after the annotation is removed");
  writeLive(AES256);
  await eventually(() => all(false), 15_000, "the host's list again");
  expect(await handshake(edited, "own.test", AES256)).toEqual(OK(AES256));
});
