import { describe, expect, test } from "bun:test";
import { createHash, createPrivateKey, X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as der from "./der.ts";
import { createSelfSignedCertificate } from "./x509.ts";

const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");
const openssl = Bun.which("openssl");

describe("der", () => {
  test("encodes OIDs, long lengths, integers and named bits per X.690", () => {
    expect(hex(der.oid("1.2.840.113549.1.1.11"))).toBe("06092a864886f70d01010b");
    expect(hex(der.octetString(new Uint8Array(200))).slice(0, 6)).toBe("0481c8");
    expect(hex(der.octetString(new Uint8Array(300))).slice(0, 8)).toBe("0482012c");
    expect(hex(der.unsignedInteger(Uint8Array.from([0x80])))).toBe("02020080");
    expect(hex(der.unsignedInteger(Uint8Array.from([0, 0, 1])))).toBe("020101");
    expect(hex(der.namedBits([0]))).toBe("03020780"); // digitalSignature
    expect(hex(der.namedBits([0, 5, 6]))).toBe("03020186"); // CA usage
    expect(hex(der.time(new Date(Date.UTC(2049, 0, 2, 3, 4, 5))))).toBe(hex(new TextEncoder().encode("490102030405Z")).replace(/^/, "170d"));
    expect(der.time(new Date(Date.UTC(2050, 0, 1)))[0]).toBe(0x18); // GeneralizedTime from 2050
  });
});

describe("createSelfSignedCertificate", () => {
  const notBefore = new Date(Date.UTC(2026, 0, 1, 0, 0, 0));
  const notAfter = new Date(Date.UTC(2060, 5, 30, 12, 0, 0));
  const minted = createSelfSignedCertificate({ subjectCN: "Portico Default Certificate", sans: ["portico.invalid", "*.b.test"], notBefore, notAfter });

  test("node parses it, the signature verifies, names, dates and usages are exact", () => {
    const x = new X509Certificate(minted.certPem);
    expect(x.verify(x.publicKey)).toBe(true);
    expect(x.subject).toBe("CN=Portico Default Certificate");
    expect(x.issuer).toBe("CN=Portico Default Certificate");
    expect(x.subjectAltName).toBe("DNS:portico.invalid, DNS:*.b.test");
    expect(Date.parse(x.validFrom)).toBe(notBefore.getTime());
    expect(Date.parse(x.validTo)).toBe(notAfter.getTime());
    expect(x.ca).toBe(false);
    expect(x.keyUsage).toEqual(["1.3.6.1.5.5.7.3.1"]); // extendedKeyUsage: serverAuth
    expect(x.publicKey.asymmetricKeyType).toBe("ec");
    expect(x.publicKey.asymmetricKeyDetails?.namedCurve).toBe("prime256v1");
    expect(x.checkPrivateKey(createPrivateKey(minted.keyPem))).toBe(true);
  });

  test("a SAN that is not printable ASCII is refused, not encoded", () => {
    expect(() => createSelfSignedCertificate({ subjectCN: "x", sans: ["bücher.test"], notBefore, notAfter })).toThrow("printable ASCII");
  });

  test.skipIf(!openssl)("openssl reads it: serverAuth purpose, and the key identifier is the SHA-1 of the key's point", () => {
    const dir = mkdtempSync(join(tmpdir(), "portico-x509-"));
    try {
      const file = join(dir, "self.pem");
      writeFileSync(file, minted.certPem);
      const text = Bun.spawnSync([openssl!, "x509", "-noout", "-text", "-in", file]);
      expect(text.exitCode).toBe(0);
      const out = text.stdout.toString();
      // A P-256 SubjectPublicKeyInfo ends with the 65-byte uncompressed point (RFC 5480 §2.2).
      const spki = new X509Certificate(minted.certPem).publicKey.export({ type: "spki", format: "der" });
      const expected = createHash("sha1").update(spki.subarray(spki.length - 65)).digest("hex").toUpperCase().match(/../g)!.join(":");
      expect(out).toMatch(new RegExp(`Subject Key Identifier:\\s*\\n\\s*${expected}\\b`));
      expect(out).not.toContain("Authority Key Identifier");
      const verify = Bun.spawnSync([openssl!, "verify", "-purpose", "sslserver", "-partial_chain", "-CAfile", file, file]);
      expect(verify.stdout.toString().trim()).toEndWith(": OK");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
