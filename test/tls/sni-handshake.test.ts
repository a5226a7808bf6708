// Real handshakes against a real Bun.serve: which certificate is served for which SNI.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateDefaultCertificate, DEFAULT_CERT_CN } from "../../src/tls/default-cert.ts";
import { createTlsListener, type TlsListener } from "../../src/tls/listener.ts";
import { createPemChecker } from "../../src/tls/pem.ts";
import { buildTlsEntries } from "../../src/tls/sni.ts";
import { createCertificate } from "./pki.ts";
import { binding, markerHandler, peerCertificate, quietLog } from "./helpers.ts";

const settings = { minVersion: "1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256" } as const;

describe("served certificate per SNI", () => {
  let listener: TlsListener;
  const exact = createCertificate({ subjectCN: "exact", sans: ["exact.test"] });
  const wild = createCertificate({ subjectCN: "wild", sans: ["*.wild.test"] });
  const rsa = createCertificate({ subjectCN: "rsa", sans: ["rsa.test"], keyAlgorithm: "rsa" });
  const mismatch = createCertificate({ subjectCN: "mismatch", sans: ["broken.test"] });
  const bindings = [
    binding("exact.test", "ns/exact", exact),
    binding("*.wild.test", "ns/wild", wild),
    binding("rsa.test", "ns/rsa", rsa),
    binding("broken.test", "ns/broken", { certPem: mismatch.certPem, keyPem: exact.keyPem }),
    binding("garbage.test", "ns/garbage", { certPem: "not a certificate", keyPem: exact.keyPem }),
    binding("nokey.test", "ns/nokey", { certPem: exact.certPem, keyPem: "" }),
    binding("under.wild.test", "ns/under", { certPem: mismatch.certPem, keyPem: wild.keyPem }),
  ];
  const built = buildTlsEntries(bindings, generateDefaultCertificate(), settings, { checker: createPemChecker() });

  beforeAll(() => {
    listener = createTlsListener({ hostname: "127.0.0.1", port: 0, handler: markerHandler(() => "one"), log: quietLog });
    listener.update(built.entries, built.fingerprint);
  });
  afterAll(() => listener.stop(true));

  const cases: Array<[string, string | undefined, string]> = [
    ["exact host", "exact.test", "exact"],
    ["exact host, other case", "EXACT.Test", "exact"],
    ["wildcard, one label", "a.wild.test", "wild"],
    ["wildcard, other case", "B.WILD.test", "wild"],
    ["wildcard apex gets the default", "wild.test", DEFAULT_CERT_CN],
    ["two labels under a wildcard get the default", "a.b.wild.test", DEFAULT_CERT_CN],
    ["unknown name gets the default", "nobody.test", DEFAULT_CERT_CN],
    ["no SNI gets the default", undefined, DEFAULT_CERT_CN],
    ["RSA certificate", "rsa.test", "rsa"],
    ["key/cert mismatch falls back to the default", "broken.test", DEFAULT_CERT_CN],
    ["garbage PEM falls back to the default", "garbage.test", DEFAULT_CERT_CN],
    ["missing key falls back to the default", "nokey.test", DEFAULT_CERT_CN],
    ["broken host under a served wildcard still gets the default", "under.wild.test", DEFAULT_CERT_CN],
  ];
  for (const [label, sni, cn] of cases) {
    test(label, async () => {
      expect((await peerCertificate(listener.port, sni)).cn).toBe(cn);
    });
  }

  test("broken Secrets are diagnostics on their Ingress, one each", () => {
    expect(built.diagnostics.map((d) => d.reason)).toEqual(["InvalidCertificate", "InvalidCertificate", "InvalidCertificate", "InvalidCertificate"]);
    for (const secret of ["ns/broken", "ns/garbage", "ns/nokey", "ns/under"]) {
      expect(built.diagnostics.some((d) => d.message.includes(secret))).toBe(true);
    }
  });

  test("routing stays by Host: the handler sees the Host header, not the SNI", async () => {
    const res = await fetch(`https://127.0.0.1:${listener.port}/`, { headers: { host: "exact.test" }, tls: { rejectUnauthorized: false, serverName: "a.wild.test" } });
    expect(await res.text()).toBe("exact.test one");
  });
});

describe("TLS settings reach the handshake", () => {
  test("minimum 1.2 by default; 1.3 refuses TLS 1.2 clients; the cipher list narrows TLS 1.2 suites", async () => {
    const cert = createCertificate({ subjectCN: "s", sans: ["s.test"] });
    for (const minVersion of ["1.2", "1.3"] as const) {
      const built = buildTlsEntries([binding("s.test", "ns/s", cert)], generateDefaultCertificate(), { minVersion, ciphers: "ECDHE-ECDSA-AES256-GCM-SHA384" }, { checker: createPemChecker() });
      const l = createTlsListener({ hostname: "127.0.0.1", port: 0, handler: markerHandler(() => "s"), log: quietLog });
      try {
        l.update(built.entries, built.fingerprint);
        const v11 = peerCertificate(l.port, "s.test", { minVersion: "TLSv1.1", maxVersion: "TLSv1.1" });
        expect(await v11.then(() => "ok", () => "refused")).toBe("refused");
        const v12 = peerCertificate(l.port, "s.test", { maxVersion: "TLSv1.2" });
        if (minVersion === "1.2") expect((await v12).protocol).toBe("TLSv1.2");
        else expect(await v12.then(() => "ok", () => "refused")).toBe("refused");
        expect((await peerCertificate(l.port, "s.test")).protocol).toBe("TLSv1.3");
        // A TLS 1.2 client offering only a suite outside the list is refused.
        const other = await peerCertificate(l.port, "s.test", { maxVersion: "TLSv1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256" }).then(() => "ok", () => "refused");
        expect(other).toBe("refused");
      } finally {
        await l.stop(true);
      }
    }
  });

  test("a cipher list BoringSSL cannot use fails the first start loudly", async () => {
    // validateTlsSettings refuses unknown names; an all-known list that matches nothing this
    // key can use still reaches BoringSSL, and a list that is empty for it throws NO_CIPHER_MATCH.
    const l = createTlsListener({ hostname: "127.0.0.1", port: 0, handler: markerHandler(() => "x"), log: quietLog });
    const d = generateDefaultCertificate();
    expect(() => l.update([{ cert: d.cert, key: d.key, ciphers: "NOT-A-CIPHER", secureOptions: 0 }], "fp")).toThrow();
    expect(l.alive).toBe(0);
    await l.stop(true);
  });
});
