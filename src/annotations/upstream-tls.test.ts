// proxy-ssl-* values as ingress-nginx's parser takes them (internal/ingress/annotations/proxyssl/main.go:
// the regexes, sortProtocols, the defaults; nothing is read without proxy-ssl-secret).
import { expect, test } from "bun:test";
import { parseAnnotations } from "../compile/annotations.ts";
import { DEFAULT_PROXY_SSL_CIPHERS } from "./upstream-tls.ts";
import { OPENSSL_DEFAULT } from "../../test/tls/openssl-default.ts";

const N = "nginx.ingress.kubernetes.io/";
const policy = (a: Record<string, string>) => {
  const p = parseAnnotations(Object.fromEntries(Object.entries(a).map(([k, v]) => [`${N}${k}`, v])));
  return { policy: p.policies.upstreamTls, problems: p.problems, stages: p.options.stages?.map((s) => s.kind) ?? [] };
};

test("without proxy-ssl-secret the others are not read", () => {
  expect(policy({ "proxy-ssl-verify": "on" }).policy).toEqual({ state: "none" });
});

test("defaults: verify off, depth 1, no name, server-name off, DEFAULT, TLSv1.2; refused until the Secret is read", () => {
  const r = policy({ "proxy-ssl-secret": "ns/s" });
  expect(r.policy).toEqual({ state: "on", namespace: "ns", name: "s", verify: false, depth: 1, sslName: null, serverName: false, ciphers: OPENSSL_DEFAULT, protocols: ["TLSv1.2"] });
  expect(DEFAULT_PROXY_SSL_CIPHERS).toBe(OPENSSL_DEFAULT);
  expect(r.stages).toEqual(["refuse"]);
});

test("good values, the cipher string as the suites it selects; protocols sorted and deduplicated; depth 0 reads as 1", () => {
  const r = policy({
    "proxy-ssl-secret": "ns/s", "proxy-ssl-verify": "on", "proxy-ssl-verify-depth": "0", "proxy-ssl-name": "pod.ns.svc",
    "proxy-ssl-server-name": "on", "proxy-ssl-ciphers": "HIGH:!AES", "proxy-ssl-protocols": "TLSv1.3  TLSv1.2 TLSv1.3",
  });
  expect(r.problems).toEqual([]);
  expect(r.policy).toMatchObject({ verify: true, depth: 1, sslName: "pod.ns.svc", serverName: true, ciphers: "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305", protocols: ["TLSv1.2", "TLSv1.3"] });
});

test("bad values fall back to the default, each reported; a line break is refused", () => {
  const r = policy({
    "proxy-ssl-secret": "ns/s", "proxy-ssl-verify": "yes", "proxy-ssl-verify-depth": "-1", "proxy-ssl-name": "a b",
    "proxy-ssl-server-name": "true", "proxy-ssl-ciphers": "HIGH;AES", "proxy-ssl-protocols": "TLSv1.1",
  });
  expect(r.policy).toMatchObject({ verify: false, depth: 1, sslName: null, serverName: false, ciphers: OPENSSL_DEFAULT, protocols: ["TLSv1.2"] });
  expect(r.problems).toHaveLength(6);
  expect(policy({ "proxy-ssl-secret": "ns/s", "proxy-ssl-name": "a.example\nb" }).policy).toMatchObject({ sslName: null });
});

test("a Secret not written namespace/name, or empty, denies the location (503)", () => {
  for (const v of ["s", "ns/s/x", "", "ns/S"]) {
    const r = policy({ "proxy-ssl-secret": v });
    expect(r.policy.state, v).toBe("invalid");
    expect(r.stages, v).toEqual(["refuse"]);
  }
});
