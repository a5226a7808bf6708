// The ssl-ciphers annotation as ingress-nginx takes it (internal/ingress/annotations/sslcipher/main.go
// regexValidSSLCipher: letters, digits, `!:+-_`, `@STRENGTH`, `@SECLEVEL=0`..`5`), then read as
// OpenSSL 3 reads the cipher string (config/cipher-list.ts) into the suites it selects.
import { expect, test } from "bun:test";
import { parseAnnotations } from "../compile/annotations.ts";

const N = "nginx.ingress.kubernetes.io/";
const read = (value: string) => {
  const p = parseAnnotations({ [`${N}ssl-ciphers`]: value });
  return { ciphers: p.policies.sslCiphers.ciphers, problems: p.problems.map(String) };
};

test("a cipher string becomes the suites it selects, in OpenSSL's order", () => {
  expect(read("ECDHE+AESGCM:!SHA1")).toEqual({ ciphers: "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256", problems: [] });
  expect(read("kRSA+AES128:@STRENGTH@SECLEVEL=2").ciphers).toBe("AES128-GCM-SHA256:AES128-SHA");
  // sslciphers.go's value: the words OpenSSL 3 lacks select nothing.
  expect(read("ALL:!aNULL:!EXPORT56:RC4+RSA:+HIGH:+MEDIUM:+LOW:+SSLv2:+EXP").ciphers?.split(":")).toHaveLength(16);
});

test("what ingress-nginx's validator refuses is an InvalidAnnotation and sets nothing (the listener's list)", () => {
  for (const value of ["TLSv1.2+kRSA", "HIGH,MEDIUM", "HIGH MEDIUM", "HIGH:@SECLEVEL=6", "HIGH:@FAST", "HIGH;!MD5"]) {
    const r = read(value);
    expect([value, r.ciphers]).toEqual([value, null]);
    expect(r.problems.some((m) => m.includes("ingress-nginx takes letters, digits and !:+-_"))).toBe(true);
  }
});

test("what passes ingress-nginx but OpenSSL refuses, or that selects no suite Portico serves, sets nothing", () => {
  expect(read("HIGH+").ciphers).toBeNull();
  expect(read("DHE-RSA-AES128-GCM-SHA256").ciphers).toBeNull();
  expect(read("DHE-RSA-AES128-GCM-SHA256").problems.some((m) => m.includes("no suite Portico can serve"))).toBe(true);
});
