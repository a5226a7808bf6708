// The test PKI is what the TLS, client and worker suites trust their certificates to: if it
// wrote a chain node:crypto or openssl would not build, those suites would test nothing.
import { describe, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCertificate, generateKeyPair } from "./pki.ts";

const openssl = Bun.which("openssl");

describe("createCertificate", () => {
  test("self-signed ECDSA: node parses it, the signature verifies, names and dates are exact", () => {
    const notBefore = new Date(Date.UTC(2026, 0, 1, 0, 0, 0));
    const notAfter = new Date(Date.UTC(2060, 5, 30, 12, 0, 0));
    const m = createCertificate({ subjectCN: "a.test", sans: ["a.test", "*.b.test", "10.1.2.3", "2001:db8::1", "::ffff:10.0.0.1"], notBefore, notAfter });
    const x = new X509Certificate(m.certPem);
    expect(x.verify(x.publicKey)).toBe(true);
    expect(x.subject).toBe("CN=a.test");
    expect(x.issuer).toBe("CN=a.test");
    expect(x.subjectAltName).toBe("DNS:a.test, DNS:*.b.test, IP Address:10.1.2.3, IP Address:2001:DB8:0:0:0:0:0:1, IP Address:0:0:0:0:0:FFFF:A00:1");
    expect(Date.parse(x.validFrom)).toBe(notBefore.getTime());
    expect(Date.parse(x.validTo)).toBe(notAfter.getTime());
    expect(x.ca).toBe(false);
    expect(x.publicKey.asymmetricKeyType).toBe("ec");
    expect(m.keyPem).toContain("BEGIN PRIVATE KEY");
  });

  test("CA-signed RSA chain with serverAuth+clientAuth: verifies against the CA, not against itself", () => {
    const ca = createCertificate({ subjectCN: "Portico Test CA", isCA: true, keyAlgorithm: "rsa" });
    const caX = new X509Certificate(ca.certPem);
    expect(caX.ca).toBe(true);
    const leaf = createCertificate({ subjectCN: "client", issuer: { cert: ca.certPem, key: ca.keyPem }, extKeyUsage: ["serverAuth", "clientAuth"], keyPair: generateKeyPair("rsa") });
    const x = new X509Certificate(leaf.certPem);
    expect(x.issuer).toBe("CN=Portico Test CA");
    expect(x.verify(caX.publicKey)).toBe(true);
    expect(x.verify(x.publicKey)).toBe(false);
    expect(x.checkIssued(caX)).toBe(true);
    expect(x.keyUsage).toEqual(["1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2"]);
  });

  test.skipIf(!openssl)("openssl accepts the text form and verifies the chain (ECDSA CA, RSA CA)", () => {
    const dir = mkdtempSync(join(tmpdir(), "portico-pki-"));
    try {
      for (const keyAlgorithm of ["ecdsa", "rsa"] as const) {
        const ca = createCertificate({ subjectCN: "Portico Test CA", isCA: true, keyAlgorithm });
        const leaf = createCertificate({ subjectCN: "srv.test", sans: ["srv.test"], issuer: { cert: ca.certPem, key: ca.keyPem } });
        writeFileSync(join(dir, "ca.pem"), ca.certPem);
        writeFileSync(join(dir, "leaf.pem"), leaf.certPem);
        const text = Bun.spawnSync([openssl!, "x509", "-noout", "-text", "-in", join(dir, "leaf.pem")]);
        expect(text.exitCode).toBe(0);
        expect(text.stdout.toString()).toContain("DNS:srv.test");
        const verify = Bun.spawnSync([openssl!, "verify", "-purpose", "sslserver", "-CAfile", join(dir, "ca.pem"), join(dir, "leaf.pem")]);
        expect(verify.stdout.toString().trim()).toEndWith(": OK");
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
