import { describe, expect, test } from "bun:test";
import { checkPem, pemDigest } from "../../src/model/pem-check.ts";
import { createPemChecker } from "../../src/tls/pem.ts";
import { namesCover as covers } from "../../src/model/cert-names.ts";
import { createCertificate, generateKeyPair } from "./pki.ts";

const NOW = Date.UTC(2026, 5, 1);
const valid = { notBefore: new Date(NOW - 86_400_000), notAfter: new Date(NOW + 86_400_000) };

describe("checkPem", () => {
  test("RSA and ECDSA: SANs lowercased, notAfter read, chain counted", () => {
    for (const keyAlgorithm of ["rsa", "ecdsa"] as const) {
      const ca = createCertificate({ subjectCN: "CA", isCA: true, ...valid });
      const leaf = createCertificate({ subjectCN: "x", sans: ["Foo.Test", "*.foo.test", "10.0.0.1"], issuer: { cert: ca.certPem, key: ca.keyPem }, keyAlgorithm, ...valid });
      const r = checkPem(leaf.certPem + ca.certPem, leaf.keyPem, NOW);
      expect(r).toEqual({ ok: true, sans: ["foo.test", "*.foo.test"], notAfter: valid.notAfter.getTime(), expired: false, chainLength: 2, contentDigest: pemDigest(leaf.certPem + ca.certPem, leaf.keyPem) });
    }
  });

  test("the CN stands in when there is no subjectAltName", () => {
    const m = createCertificate({ subjectCN: "Only.CN.test", ...valid });
    const r = checkPem(m.certPem, m.keyPem, NOW);
    expect(r.ok && r.sans).toEqual(["only.cn.test"]);
  });

  test("expired is reported, not rejected", () => {
    const m = createCertificate({ subjectCN: "old", sans: ["old.test"], notBefore: new Date(NOW - 2e9), notAfter: new Date(NOW - 1000) });
    const r = checkPem(m.certPem, m.keyPem, NOW);
    expect(r.ok && r.expired).toBe(true);
  });

  test("broken inputs give a reason", () => {
    const a = createCertificate({ subjectCN: "a", ...valid });
    const b = createCertificate({ subjectCN: "b", ...valid });
    const reason = (cert: string | null, key: string | null): string => {
      const r = checkPem(cert, key, NOW);
      return r.ok ? "ok" : r.reason;
    };
    expect(reason(a.certPem, b.keyPem)).toContain("does not match");
    expect(reason("garbage", a.keyPem)).toContain("no PEM CERTIFICATE");
    expect(reason("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", a.keyPem)).toContain("does not parse");
    expect(reason(a.certPem, null)).toContain("tls.key is missing");
    expect(reason(a.certPem, "")).toContain("tls.key is missing");
    expect(reason(null, a.keyPem)).toContain("tls.crt is missing");
    expect(reason(a.certPem, "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n")).toContain("tls.key does not parse");
    const encrypted = generateKeyPair("ecdsa").privateKey.export({ type: "pkcs8", format: "pem", cipher: "aes-256-cbc", passphrase: "x" }).toString();
    expect(reason(a.certPem, encrypted)).toContain("tls.key does not parse");
  });
});

test("covers: exact names and one-label wildcards (RFC 6125 §6.4.3)", () => {
  expect(covers(["a.test"], "a.test")).toBe(true);
  expect(covers(["*.a.test"], "b.a.test")).toBe(true);
  expect(covers(["*.a.test"], "a.test")).toBe(false);
  expect(covers(["*.a.test"], "c.b.a.test")).toBe(false);
  expect(covers(["*.a.test"], "*.a.test")).toBe(true);
  expect(covers(["b.a.test"], "*.a.test")).toBe(false);
});

test("createPemChecker caches by version, bounded, and recomputes expiry on each call", () => {
  const checker = createPemChecker(2);
  const m = createCertificate({ subjectCN: "c", sans: ["c.test"], ...valid });
  const other = createCertificate({ subjectCN: "d", ...valid });
  const first = checker.check({ cert: m.certPem, key: m.keyPem, version: "uid1/1" }, NOW);
  expect(first.ok).toBe(true);
  // Same version: the cached verdict is reused even though the text differs (a version names one content).
  expect(checker.check({ cert: m.certPem, key: other.keyPem, version: "uid1/1" }, NOW).ok).toBe(true);
  expect(checker.check({ cert: m.certPem, key: other.keyPem, version: "uid1/2" }, NOW).ok).toBe(false);
  const later = checker.check({ cert: m.certPem, key: m.keyPem, version: "uid1/1" }, valid.notAfter.getTime() + 1);
  expect(later.ok && later.expired).toBe(true);
  checker.check({ cert: m.certPem, key: m.keyPem, version: null }, NOW);
  expect(checker.size).toBe(2);
});
