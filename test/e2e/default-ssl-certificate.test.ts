// ingress-nginx's test/e2e/settings/default_ssl_certificate.go, through a real Portico process
// (--manifests, --default-ssl-certificate) and real TLS handshakes: which certificate a host's
// SNI is answered with. ingress-nginx's createServers (internal/ingress/controller/
// controller.go) keeps a host's TLS Secret only when its certificate names the host
// (x509 VerifyHostname, then certificate.go verifyHostname: the DNS SANs, or the CN when there
// are none); otherwise it logs "Using default certificate" and serves the default one.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { peerCertificate } from "../tls/helpers.ts";
import { namedBackend, type RawBackend } from "../proxy/raw.ts";
import { createCertificate } from "../tls/pki.ts";
import { eventually } from "../wait.ts";
import { freeRange } from "../gateway/base-harness.ts";
import { startPortico, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, tlsSecret, yamlDocs } from "./objects.ts";

const NS = "default-ssl-certificate";
// The Go test's default certificate names "*"; a real wildcard here, which does not cover "foo".
const defaultCert = createCertificate({ subjectCN: "default", sans: ["*.default.test"] });
const notFoo = createCertificate({ subjectCN: "not.foo", sans: ["not.foo"] });
const goodCert = createCertificate({ subjectCN: "good.foo", sans: ["good.foo"] });
// A certificate whose only SAN is an address: Go's verifyHostname reads the CN then.
const cnOnly = createCertificate({ subjectCN: "cn.foo", sans: ["10.0.0.1"] });
const wildcardOther = createCertificate({ subjectCN: "x", sans: ["*.bar.test"] });

let dir = "";
let p: Portico;
let echo: RawBackend;

beforeAll(async () => {
  echo = await namedBackend("echo");
  dir = mkdtempSync(join(tmpdir(), "portico-default-cert-"));
  const host = (name: string, h: string, secretName: string) =>
    ingress(NS, name, [{ host: h, paths: [{ path: "/", service: "echo" }] }], { tls: [{ hosts: [h], secretName }] });
  writeFileSync(join(dir, "all.yaml"), yamlDocs([
    ingressClass(), service(NS, "echo"), slice(NS, "echo", [echo.port]),
    tlsSecret(NS, "my-custom-cert", defaultCert.certPem, defaultCert.keyPem),
    tlsSecret(NS, "foo", notFoo.certPem, notFoo.keyPem),
    tlsSecret(NS, "good", goodCert.certPem, goodCert.keyPem),
    tlsSecret(NS, "cn-only", cnOnly.certPem, cnOnly.keyPem),
    tlsSecret(NS, "other-wildcard", wildcardOther.certPem, wildcardOther.keyPem),
    host("foo", "foo", "foo"),
    host("good", "good.foo", "good"),
    host("cn-only", "cn.foo", "cn-only"),
    host("wild", "a.bar.test", "other-wildcard"),
    host("wild-miss", "a.b.bar.test", "other-wildcard"),
  ]));
  p = await startPortico(["--manifests", dir, "--default-ssl-certificate", `${NS}/my-custom-cert`]);
});

afterAll(async () => {
  await p?.stop();
  await echo?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The leaf certificate (PEM-decoded fingerprint) the HTTPS port answers this SNI with. */
const servedFor = async (servername: string): Promise<string> => (await peerCertificate(p.ports.https, servername)).fingerprint256;
const fp = (pem: string) => new X509Certificate(pem).fingerprint256;

describe("settings/default_ssl_certificate.go", () => {
  test("uses default ssl certificate for host based ingress when configured certificate does not match host", async () => {
    expect(await servedFor("foo")).toBe(fp(defaultCert.certPem));
  });

  test("a certificate that names the host is served (SAN, or the CN when there is no DNS SAN)", async () => {
    expect(await servedFor("good.foo")).toBe(fp(goodCert.certPem));
    expect(await servedFor("cn.foo")).toBe(fp(cnOnly.certPem));
  });

  test("a wildcard SAN covers one label: *.bar.test serves a.bar.test, not a.b.bar.test", async () => {
    expect(await servedFor("a.bar.test")).toBe(fp(wildcardOther.certPem));
    expect(await servedFor("a.b.bar.test")).toBe(fp(defaultCert.certPem));
  });

  test("explain names the certificate served: the default one, and the Secret passed over", async () => {
    const ask = async (host: string) => (await (await fetch(`${p.admin}/debug/explain?host=${host}&path=/&scheme=https`)).json()) as { certificate: unknown };
    expect((await ask("foo")).certificate).toEqual({ via: "default", host: "", secret: `${NS}/my-custom-cert`, ingress: "", hasPem: true, notNaming: `${NS}/foo` });
    expect((await ask("good.foo")).certificate).toEqual({ via: "exact", host: "good.foo", secret: `${NS}/good`, ingress: `${NS}/good`, hasPem: true });
    expect((await ask("a.b.bar.test")).certificate).toMatchObject({ via: "default", notNaming: `${NS}/other-wildcard` });
  });

  test("each mismatch is a diagnostic (InvalidCertificate: foo and a.b.bar.test)", async () => {
    let text = "";
    await eventually(async () => {
      text = await (await fetch(`${p.admin}/metrics`)).text();
      return text.includes('portico_diagnostics{reason="InvalidCertificate"}');
    }, 15_000, "the InvalidCertificate diagnostics");
    expect(text).toContain('portico_diagnostics{reason="InvalidCertificate"} 2\n');
  });
});

// With --gateway-ports a Gateway's HTTPS port answers a name none of its listeners binds with
// --default-ssl-certificate's certificate when it has no hostless listener (docs/design.md
// "Gateways with their own address"). That Secret is no Gateway's: rotating it alone must
// still reach the Gateway's port, as it reaches the shared HTTPS port.
describe("--default-ssl-certificate on a Gateway's own port (--gateway-ports)", () => {
  const GW_NS = "gw-default-cert";
  const first = createCertificate({ subjectCN: "default-1", sans: ["default-1.test"] });
  const second = createCertificate({ subjectCN: "default-2", sans: ["default-2.test"] });
  const listenerCert = createCertificate({ subjectCN: "named.gw.test", sans: ["named.gw.test"] });
  let gdir = "";
  let gp: Portico | undefined;
  let from = 0;

  /** The default Secret in a file of its own, replaced whole (a rename, never a half-written file). */
  const writeDefault = (pem: { certPem: string; keyPem: string }) => {
    writeFileSync(join(gdir, "default.yaml.tmp"), yamlDocs([tlsSecret(GW_NS, "default-cert", pem.certPem, pem.keyPem)]));
    renameSync(join(gdir, "default.yaml.tmp"), join(gdir, "default.yaml"));
  };

  beforeAll(async () => {
    gdir = mkdtempSync(join(tmpdir(), "portico-default-cert-gw-"));
    writeFileSync(join(gdir, "gateway.yaml"), yamlDocs([
      { apiVersion: "gateway.networking.k8s.io/v1", kind: "GatewayClass", metadata: { name: "portico" }, spec: { controllerName: "portico.dev/gateway-controller" } },
      tlsSecret(GW_NS, "named", listenerCert.certPem, listenerCert.keyPem),
      {
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "Gateway",
        metadata: { name: "gw", namespace: GW_NS },
        // One HTTPS listener, with a hostname: no hostless listener, so other names get the default.
        spec: { gatewayClassName: "portico", listeners: [{ name: "https", port: 443, protocol: "HTTPS", hostname: "named.gw.test", tls: { certificateRefs: [{ name: "named" }] } }] },
      },
    ]));
    writeDefault(first);
    from = freeRange(2);
    gp = await startPortico(["--manifests", gdir, "--default-ssl-certificate", `${GW_NS}/default-cert`, "--gateway-ports", `${from}-${from + 1}`]);
  });

  afterAll(async () => {
    await gp?.stop();
    if (gdir) rmSync(gdir, { recursive: true, force: true });
  });

  test("a rotated default certificate is served on the Gateway's port", async () => {
    // The one Gateway's one port takes the range's first Portico port (compile/gateway/ports.ts).
    const served = async (name: string) => (await peerCertificate(from, name)).fingerprint256;
    await eventually(async () => (await served("other.gw.test")) === fp(first.certPem), 15_000, "the first default certificate on the Gateway's port");
    expect(await served("named.gw.test")).toBe(fp(listenerCert.certPem));
    writeDefault(second);
    // The shared HTTPS port picks it up first; the Gateway's port must follow.
    await eventually(async () => (await peerCertificate(gp!.ports.https, "other.gw.test")).fingerprint256 === fp(second.certPem), 15_000, "the rotated certificate on the shared port");
    await eventually(async () => (await served("other.gw.test")) === fp(second.certPem), 15_000, "the rotated certificate on the Gateway's port");
    expect(await served("named.gw.test")).toBe(fp(listenerCert.certPem));
  });
});
