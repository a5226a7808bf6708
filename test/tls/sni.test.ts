import { describe, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import type { CertificateBinding } from "../../src/compile/types.ts";
import { generateDefaultCertificate, DEFAULT_CERT_CN } from "../../src/tls/default-cert.ts";
import { createPemChecker } from "../../src/tls/pem.ts";
import { buildTlsEntries, tlsSettingsOptions, validateTlsSettings } from "../../src/tls/sni.ts";
import { DEFAULT_TLS_CIPHERS } from "../../src/config/flags.ts";
import { createCertificate } from "./pki.ts";

const NOW = Date.UTC(2026, 5, 1);
const valid = { notBefore: new Date(NOW - 86_400_000), notAfter: new Date(NOW + 86_400_000) };
const settings = { minVersion: "1.2", ciphers: "ECDHE-RSA-AES128-GCM-SHA256" } as const;
const generated = generateDefaultCertificate(undefined, NOW);

function bind(host: string, secret: string | null, pem: { certPem: string; keyPem: string } | null, version: string | null = secret && `${secret}/1`, ingress = "default/web"): CertificateBinding {
  return { host, secret, cert: pem?.certPem ?? null, key: pem?.keyPem ?? null, version, ingress };
}

describe("buildTlsEntries", () => {
  const a = createCertificate({ subjectCN: "a", sans: ["a.test"], ...valid });
  const wild = createCertificate({ subjectCN: "w", sans: ["*.w.test"], ...valid });

  test("default first without serverName, then one entry per served host, sorted", () => {
    const r = buildTlsEntries([bind("*.w.test", "ns/w", wild), bind("a.test", "ns/a", a)], generated, settings, { checker: createPemChecker(), now: NOW });
    expect(r.entries.map((e) => e.serverName)).toEqual([undefined, "*.w.test", "a.test"]);
    expect(r.entries[0]!.cert).toBe(generated.cert);
    expect(r.entries[2]!.cert).toBe(a.certPem);
    expect(r.diagnostics).toEqual([]);
    expect(r.expiry.get("a.test")).toBe(valid.notAfter.getTime() / 1000);
    expect(r.entries.every((e) => e.ciphers === settings.ciphers && e.secureOptions === tlsSettingsOptions(settings).secureOptions)).toBe(true);
  });

  // nginx picks the server for an SNI name by exact name before wildcards: a rule host under a
  // `*.` host with its own ssl-ciphers is a server of its own, with the ConfigMap's list.
  test("a host pinned to the listener's list gets its own entry, with the certificate the wildcard's would serve", () => {
    const own = "ECDHE-RSA-AES128-SHA";
    const hostTls = new Map([["*.w.test", { ciphers: own, ingress: "default/wild" }], ["b.w.test", { ciphers: null, ingress: "default/b" }]]);
    const r = buildTlsEntries([bind("*.w.test", "ns/w", wild)], generated, settings, { checker: createPemChecker(), now: NOW }, hostTls);
    expect(r.entries.map((e) => [e.serverName, e.ciphers, e.cert === wild.certPem])).toEqual([
      [undefined, settings.ciphers, false],
      ["*.w.test", own, true],
      ["b.w.test", settings.ciphers, true],
    ]);
    // Without a wildcard list to escape, the pin adds nothing.
    const plain = buildTlsEntries([bind("*.w.test", "ns/w", wild)], generated, settings, { checker: createPemChecker(), now: NOW }, new Map([["b.w.test", { ciphers: null, ingress: "default/b" }]]));
    expect(plain.entries.map((e) => e.serverName)).toEqual([undefined, "*.w.test"]);
  });

  test("fingerprint: independent of binding order, changes with a certificate's content or settings, not with a Secret's version", () => {
    const checker = createPemChecker();
    const fp = (bs: CertificateBinding[], s: typeof settings | { minVersion: "1.3"; ciphers: string } = settings): string =>
      buildTlsEntries(bs, generated, s, { checker, now: NOW }).fingerprint;
    const one = fp([bind("a.test", "ns/a", a), bind("*.w.test", "ns/w", wild)]);
    expect(fp([bind("*.w.test", "ns/w", wild), bind("a.test", "ns/a", a)])).toBe(one);
    // A write that leaves tls.crt and tls.key as they were (new resourceVersion, or a
    // re-created Secret: new uid) is the same set: no rotation restarts the listener.
    expect(fp([bind("*.w.test", "ns/w", wild), bind("a.test", "ns/a", a, "ns/a/2")])).toBe(one);
    expect(fp([bind("*.w.test", "ns/w", wild, "uid-new/1"), bind("a.test", "ns/a", a, "uid-new/7")])).toBe(one);
    const a2 = createCertificate({ subjectCN: "a", sans: ["a.test"], ...valid });
    expect(fp([bind("*.w.test", "ns/w", wild), bind("a.test", "ns/a", a2, "ns/a/3")])).not.toBe(one);
    expect(fp([bind("*.w.test", "ns/w", wild), bind("a.test", "ns/a", a)], { minVersion: "1.3", ciphers: settings.ciphers })).not.toBe(one);
  });

  test("fingerprint: the --default-ssl-certificate Secret is compared by content too", () => {
    const checker = createPemChecker();
    const def = createCertificate({ subjectCN: "default", sans: ["*.default.test"], ...valid });
    const fp = (version: string, pem = def): string =>
      buildTlsEntries([{ host: "", secret: "ns/default", cert: pem.certPem, key: pem.keyPem, version, ingress: "" }, bind("a.test", "ns/a", a)], generated, settings, { checker, now: NOW }).fingerprint;
    expect(fp("uid/2")).toBe(fp("uid/1"));
    expect(fp("uid/3", createCertificate({ subjectCN: "default", sans: ["*.default.test"], ...valid }))).not.toBe(fp("uid/1"));
  });

  test("broken, missing and null-secret hosts use the default; an entry only where a wildcard would catch them", () => {
    const b = createCertificate({ subjectCN: "b", ...valid });
    const r = buildTlsEntries(
      [
        bind("*.w.test", "ns/w", wild),
        bind("x.w.test", "ns/bad", { certPem: a.certPem, keyPem: b.keyPem }, "v", "default/bad"),
        bind("y.w.test", null, null),
        bind("plain.test", "ns/gone", null, null, "default/gone"),
        bind("a.test", "ns/a", a),
      ],
      generated,
      settings,
      { checker: createPemChecker(), now: NOW },
    );
    const byName = new Map(r.entries.map((e) => [e.serverName, e.cert]));
    expect(byName.get("x.w.test")).toBe(generated.cert);
    expect(byName.get("y.w.test")).toBe(generated.cert);
    expect(byName.has("plain.test")).toBe(false); // falls to entry 0 anyway
    expect(byName.get("a.test")).toBe(a.certPem);
    // A missing Secret (cert and key null) is compile/tls.ts's diagnostic, not repeated here.
    expect(r.diagnostics.map((d) => [d.kind, d.name, d.reason])).toEqual([["Ingress", "bad", "InvalidCertificate"]]);
    expect(r.diagnostics[0]!.message).toContain("ns/bad");
  });

  test("expired: served, warned once per Secret, expiry exported", () => {
    const old = createCertificate({ subjectCN: "o", sans: ["o.test", "p.test"], notBefore: new Date(NOW - 9e9), notAfter: new Date(NOW - 1000) });
    const r = buildTlsEntries([bind("o.test", "ns/o", old), bind("p.test", "ns/o", old)], generated, settings, { checker: createPemChecker(), now: NOW });
    expect(r.entries.map((e) => e.serverName)).toEqual([undefined, "o.test", "p.test"]);
    expect(r.diagnostics.map((d) => [d.reason, d.severity])).toEqual([["CertificateExpired", "warning"]]);
    expect(r.expiry.get("o.test")).toBe(Math.floor((NOW - 1000) / 1000));
  });

  test("a certificate that does not name the host: the default certificate, with a warning (ingress-nginx createServers)", () => {
    const r = buildTlsEntries([bind("other.test", "ns/a", a)], generated, settings, { checker: createPemChecker(), now: NOW });
    expect(r.entries.map((e) => e.cert)).toEqual([generated.cert]);
    expect(r.diagnostics.map((d) => [d.reason, d.severity])).toEqual([["InvalidCertificate", "warning"]]);
    expect(r.diagnostics[0]?.message).toContain("serving the default certificate for it");
  });

  test("default certificate: the host \"\" Secret when valid, else the generated one with a diagnostic on the Secret", () => {
    const d = createCertificate({ subjectCN: "corp default", ...valid });
    const ok = buildTlsEntries([bind("", "ns/default-cert", d)], generated, settings, { checker: createPemChecker(), now: NOW });
    expect(ok.entries[0]!.cert).toBe(d.certPem);
    expect(ok.entries.length).toBe(1);
    const broken = buildTlsEntries([bind("", "ns/default-cert", { certPem: d.certPem, keyPem: a.keyPem })], generated, settings, { checker: createPemChecker(), now: NOW });
    expect(broken.entries[0]!.cert).toBe(generated.cert);
    expect(broken.diagnostics.map((x) => [x.kind, x.namespace, x.name, x.reason])).toEqual([["Secret", "ns", "default-cert", "InvalidCertificate"]]);
    expect(generated.cert).toContain("BEGIN CERTIFICATE");
    expect(new X509Certificate(generated.cert).subject).toBe(`CN=${DEFAULT_CERT_CN}`);
  });

  test("TLS settings: minimum 1.3 adds SSL_OP_NO_TLSv1_2", () => {
    expect(tlsSettingsOptions({ minVersion: "1.3", ciphers: DEFAULT_TLS_CIPHERS }).secureOptions & 0x08000000).toBe(0x08000000);
    expect(tlsSettingsOptions({ minVersion: "1.2", ciphers: DEFAULT_TLS_CIPHERS }).secureOptions & 0x08000000).toBe(0);
  });

  test("settings Bun would ignore are refused, not pretended", () => {
    expect(validateTlsSettings({ minVersion: "1.2", ciphers: DEFAULT_TLS_CIPHERS })).toBeNull();
    expect(validateTlsSettings({ minVersion: "1.2", ciphers: "ecdhe-rsa-aes128-gcm-sha256" })).toBeNull();
    expect(validateTlsSettings({ minVersion: "1.2", ciphers: "ECDHE-RSA-AES128-GCM-SHA256:BOGUS" })).toContain("unknown TLS cipher suite BOGUS");
    expect(() => buildTlsEntries([], generated, { minVersion: "1.2", ciphers: "BOGUS" }, { checker: createPemChecker() })).toThrow("unknown TLS cipher suite");
  });
});

describe("TLS version range, group list and suite order (ssl-protocols, ssl-ecdh-curve; nginx.tmpl ssl_prefer_server_ciphers on)", () => {
  test("secureOptions: NO_TLSv1_3 for a 1.2 ceiling, server preference always; ecdhCurve passed unless auto", () => {
    const base = { minVersion: "1.2", ciphers: DEFAULT_TLS_CIPHERS } as const;
    expect(tlsSettingsOptions({ ...base, maxVersion: "1.2" }).secureOptions & 0x20000000).toBe(0x20000000);
    expect(tlsSettingsOptions(base).secureOptions & 0x20000000).toBe(0);
    expect(tlsSettingsOptions(base).secureOptions & 0x00400000).toBe(0x00400000);
    expect(tlsSettingsOptions({ ...base, ecdhCurve: "auto" }).ecdhCurve).toBeUndefined();
    expect(tlsSettingsOptions({ ...base, ecdhCurve: "P-384:X25519" }).ecdhCurve).toBe("P-384:X25519");
    expect(validateTlsSettings({ minVersion: "1.3", maxVersion: "1.2", ciphers: DEFAULT_TLS_CIPHERS })).toContain("below the lowest");
  });
});
