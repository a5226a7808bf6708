// Which spec.tls Secret a rule host serves, through a real Portico process (--manifests,
// --default-ssl-certificate) and real TLS handshakes, as ingress-nginx's extractTLSSecretName
// (internal/ingress/controller/controller.go) picks it for createServers:
//   1. a spec.tls entry whose `hosts` lists the host (compared lowercased) gives its secretName;
//   2. otherwise the first entry, with a secretName, whose Secret's certificate names the host
//      (x509 `cert.Certificate.VerifyHostname(host)`: DNS SANs, `*.` for one first label, no CN).
// The Ingress asked is the first one, oldest first and canaries skipped, with a rule for the
// host and a non-empty spec.tls (createServers: "only add a certificate if the server does not
// have one previously configured"). A host given a certificate so is a TLS host: with
// ssl-redirect's default `true`, plain HTTP gets 308 to https (lua_ingress.lua
// redirect_to_https: `ssl_redirect and certificate_configured_for_current_request()`).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { peerCertificate } from "../tls/helpers.ts";
import { namedBackend, type RawBackend } from "../proxy/raw.ts";
import { createCertificate } from "../tls/pki.ts";
import { get, startPortico, waitReady, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, tlsSecret, yamlDocs } from "./objects.ts";

const NS = "tls-name";
const defaultCert = createCertificate({ subjectCN: "default", sans: ["default.invalid"] });
const appCert = createCertificate({ subjectCN: "app", sans: ["app.test"] });
const otherCert = createCertificate({ subjectCN: "other", sans: ["other.test"] });
const wildCert = createCertificate({ subjectCN: "wild", sans: ["*.multi.test"] });
const namesB = createCertificate({ subjectCN: "names-b", sans: ["b.test"] });
const listsB = createCertificate({ subjectCN: "lists-b", sans: ["b.test", "also.b.test"] });
const cOld = createCertificate({ subjectCN: "c-old", sans: ["c.test"] });
const cNew = createCertificate({ subjectCN: "c-new", sans: ["c.test"] });
const fCert = createCertificate({ subjectCN: "f", sans: ["f.test"] });
const gOnly = createCertificate({ subjectCN: "g-only", sans: ["g.test"] });
const gRules = createCertificate({ subjectCN: "g-rules", sans: ["g.test"] });
// Only an IP SAN and the CN: VerifyHostname does not read the CN, so the second pass skips it.
const cnOnly = createCertificate({ subjectCN: "cn.test", sans: ["10.0.0.1"] });

let dir = "";
let p: Portico;
let echo: RawBackend;

type Tls = { hosts?: string[]; secretName?: string }[];
function ing(name: string, host: string, tlsEntries: Tls, created = "2024-01-01T00:00:00Z"): Record<string, unknown> {
  const o = ingress(NS, name, [{ host, paths: [{ path: "/", service: "echo" }] }]) as { metadata: Record<string, unknown>; spec: Record<string, unknown> };
  o.metadata.creationTimestamp = created;
  o.spec.tls = tlsEntries;
  return o;
}

beforeAll(async () => {
  echo = await namedBackend("echo");
  dir = mkdtempSync(join(tmpdir(), "portico-tls-name-"));
  writeFileSync(join(dir, "all.yaml"), yamlDocs([
    ingressClass(), service(NS, "echo"), slice(NS, "echo", [echo.port]),
    tlsSecret(NS, "default", defaultCert.certPem, defaultCert.keyPem),
    tlsSecret(NS, "app", appCert.certPem, appCert.keyPem),
    tlsSecret(NS, "other", otherCert.certPem, otherCert.keyPem),
    tlsSecret(NS, "wild", wildCert.certPem, wildCert.keyPem),
    tlsSecret(NS, "names-b", namesB.certPem, namesB.keyPem),
    tlsSecret(NS, "lists-b", listsB.certPem, listsB.keyPem),
    tlsSecret(NS, "c-old", cOld.certPem, cOld.keyPem),
    tlsSecret(NS, "c-new", cNew.certPem, cNew.keyPem),
    tlsSecret(NS, "cn-only", cnOnly.certPem, cnOnly.keyPem),
    tlsSecret(NS, "f", fCert.certPem, fCert.keyPem),
    tlsSecret(NS, "g-only", gOnly.certPem, gOnly.keyPem),
    tlsSecret(NS, "g-rules", gRules.certPem, gRules.keyPem),
    // The chart shape: spec.tls names a Secret and no hosts.
    ing("chart", "app.test", [{ secretName: "app" }]),
    // Second pass, entries in order: "other" does not name a.multi.test, "wild" does.
    ing("multi", "a.multi.test", [{ secretName: "other" }, { secretName: "wild" }]),
    // The first pass comes first: the entry listing b.test wins over an earlier one naming it.
    ing("listed", "b.test", [{ secretName: "names-b" }, { hosts: ["b.test"], secretName: "lists-b" }]),
    // Two Ingresses for c.test: the oldest one's spec.tls decides.
    ing("c-new", "c.test", [{ secretName: "c-new" }], "2024-06-01T00:00:00Z"),
    ing("c-old", "c.test", [{ secretName: "c-old" }], "2023-01-01T00:00:00Z"),
    // A certificate naming the host by its CN only is not taken by the second pass.
    ing("cn", "cn.test", [{ secretName: "cn-only" }]),
    // spec.tls for another host only: nothing lists or names d.test.
    ing("elsewhere", "d.test", [{ hosts: ["elsewhere.test"], secretName: "other" }]),
    // f.test: the older Ingress with rules for it has a spec.tls that neither lists nor names
    // it; a newer one lists it. createServers reads only the older one: the default certificate.
    ing("f-old", "f.test", [{ hosts: ["elsewhere.test"], secretName: "other" }], "2023-01-01T00:00:00Z"),
    ing("f-new", "f.test", [{ hosts: ["f.test"], secretName: "f" }], "2024-06-01T00:00:00Z"),
    // g.test: an older Ingress without rules lists it; the one with the rules lists it too and
    // decides (createServers builds servers from rules only).
    { ...ing("g-only", "unused.test", [{ hosts: ["g.test"], secretName: "g-only" }], "2023-01-01T00:00:00Z"), spec: { ingressClassName: "portico", tls: [{ hosts: ["g.test"], secretName: "g-only" }] } },
    ing("g-rules", "g.test", [{ hosts: ["g.test"], secretName: "g-rules" }], "2024-06-01T00:00:00Z"),
    // No spec.tls at all: not a TLS host.
    ing("plain", "e.test", []),
  ]));
  p = await startPortico(["--manifests", dir, "--default-ssl-certificate", `${NS}/default`, "--access-log", "off"]);
  await waitReady(p);
});

afterAll(async () => {
  await p?.stop();
  await echo?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The leaf certificate's fingerprint the HTTPS port answers this SNI with. */
const servedFor = async (servername: string): Promise<string> => (await peerCertificate(p.ports.https, servername)).fingerprint256;
const fp = (pem: string) => new X509Certificate(pem).fingerprint256;
const plain = async (host: string, path: string) => {
  const r = await get(p.http, host, path);
  return { status: r.status, location: r.headers.get("location") };
};
const explainCert = async (host: string) =>
  ((await (await fetch(`${p.admin}/debug/explain?host=${host}&path=/&scheme=https`)).json()) as { certificate: unknown }).certificate;

describe("extractTLSSecretName: spec.tls without hosts", () => {
  test("tls: [{secretName: app}] serves app's certificate for the rule host it names", async () => {
    expect(await servedFor("app.test")).toBe(fp(appCert.certPem));
  });

  test("and the host is a TLS host: plain HTTP gets ssl-redirect's 308", async () => {
    // lua_ingress.lua: `https://<host><request_uri>`, the trailing "/" cut, no port (defaults).
    expect(await plain("app.test", "/docs/")).toEqual({ status: 308, location: "https://app.test/docs" });
  });

  test("the first entry whose certificate names the host, in spec.tls order", async () => {
    expect(await servedFor("a.multi.test")).toBe(fp(wildCert.certPem));
    expect(await plain("a.multi.test", "/x")).toEqual({ status: 308, location: "https://a.multi.test/x" });
  });

  test("an entry listing the host wins over an earlier one naming it", async () => {
    expect(await servedFor("b.test")).toBe(fp(listsB.certPem));
  });

  test("when two Ingresses share a host, the oldest one's spec.tls decides", async () => {
    expect(await servedFor("c.test")).toBe(fp(cOld.certPem));
  });

  test("the oldest Ingress with rules for the host and a spec.tls decides, even when a newer one lists it", async () => {
    expect(await servedFor("f.test")).toBe(fp(defaultCert.certPem));
    expect(await plain("f.test", "/x")).toEqual({ status: 308, location: "https://f.test/x" });
    expect(await explainCert("f.test")).toEqual({ via: "default", host: "", secret: `${NS}/default`, ingress: `${NS}/f-old`, hasPem: true, matchedBy: "none" });
  });

  test("an Ingress without rules for the host does not decide it, though older and listing it", async () => {
    expect(await servedFor("g.test")).toBe(fp(gRules.certPem));
  });

  test("nothing lists or names the host (a CN-only certificate, another host's entry): the default certificate, and still the 308", async () => {
    // createServers: extractTLSSecretName returned "", so `servers[host].SSLCert =
    // n.getDefaultSSLCertificate()`, a certificate configured for the host all the same.
    for (const host of ["cn.test", "d.test"]) {
      expect(await servedFor(host)).toBe(fp(defaultCert.certPem));
      expect(await plain(host, "/x")).toEqual({ status: 308, location: `https://${host}/x` });
    }
  });

  test("an Ingress without spec.tls gives no certificate and no redirect", async () => {
    expect(await servedFor("e.test")).toBe(fp(defaultCert.certPem));
    expect((await plain("e.test", "/x")).status).toBe(200);
  });

  test("explain names the Secret and why: no entry lists the host, its certificate names it", async () => {
    expect(await explainCert("app.test")).toEqual({ via: "exact", host: "app.test", secret: `${NS}/app`, ingress: `${NS}/chart`, hasPem: true, matchedBy: "certificate" });
    expect(await explainCert("c.test")).toEqual({ via: "exact", host: "c.test", secret: `${NS}/c-old`, ingress: `${NS}/c-old`, hasPem: true, matchedBy: "certificate" });
    // Listed: no matchedBy.
    expect(await explainCert("b.test")).toEqual({ via: "exact", host: "b.test", secret: `${NS}/lists-b`, ingress: `${NS}/listed`, hasPem: true });
    expect(await explainCert("d.test")).toEqual({ via: "default", host: "", secret: `${NS}/default`, ingress: `${NS}/elsewhere`, hasPem: true, matchedBy: "none" });
    expect(await explainCert("e.test")).toEqual({ via: "default", host: "", secret: `${NS}/default`, ingress: "", hasPem: true });
  });
});
