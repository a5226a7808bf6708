// proxy-ssl-secret through the compiler: the Secret is read into the route option, a change to
// it reaches an unchanged Ingress's routes, its deletion refuses (ingress-nginx's "location
// denied", proxyssl/main.go), and /debug/routes never shows its key.
import { expect, test } from "bun:test";
import { Compiler } from "../../src/compile/compile.ts";
import { DEFAULT_COMPILE_CONFIG } from "./config.ts";
import type { CompileResult } from "../../src/compile/types.ts";
import type { Kind, KindObjects } from "../../src/model/kinds.ts";
import type { Ingress, Secret } from "../../src/model/schemas.ts";
import { allRoutes } from "../../src/table/routes.ts";
import { serializeTable } from "../../src/table/serialize.ts";
import { snapshotOf } from "./snapshot.ts";
import { createCertificate } from "../tls/pki.ts";
import { OPENSSL_DEFAULT } from "../tls/openssl-default.ts";
import { explain } from "../../src/compile/explain.ts";
import { ingressClass, service, slice } from "../e2e/objects.ts";

/** The class, Service and EndpointSlice that make `name` served with one ready pod. */
const endpointsOf = (ns: string, name: string) =>
  [ingressClass(), service(ns, name), slice(ns, name, [8443])].map((o) => ({ kind: (o as { kind: Kind }).kind, object: o as unknown as KindObjects[Kind] }));

const ca = createCertificate({ subjectCN: "CA", isCA: true });
const client = createCertificate({ subjectCN: "client", extKeyUsage: ["clientAuth"], issuer: { cert: ca.certPem, key: ca.keyPem } });
const b64 = (s: string) => Buffer.from(s).toString("base64");

const ingress = (name: string, annotations: Record<string, string>): Ingress =>
  ({
    metadata: { name, namespace: "shop", annotations, creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: { ingressClassName: "portico", rules: [{ host: `${name}.test`, http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }] } }] },
  }) as Ingress;
const secret = (rv: string, data: Record<string, string>): Secret => ({ metadata: { name: "upstream", namespace: "shop", resourceVersion: rv }, type: "Opaque", data }) as Secret;
const objs = (...xs: (Ingress | Secret)[]) => xs.map((o) => ({ kind: ("spec" in o ? "Ingress" : "Secret") as Kind, object: o as KindObjects[Kind] }));
const routeOf = (r: CompileResult, host: string) => allRoutes(r.table).find((x) => x.host === host);

test("a Secret change reaches the routes of an unchanged Ingress; deletion refuses (503); the key never reaches /debug/routes", () => {
  const c = new Compiler(DEFAULT_COMPILE_CONFIG);
  const ing = ingress("a", { "nginx.ingress.kubernetes.io/proxy-ssl-secret": "shop/upstream", "nginx.ingress.kubernetes.io/proxy-ssl-verify": "on" });
  const missing = c.compile(snapshotOf(objs(ing)));
  expect(routeOf(missing, "a.test")?.options.stages?.map((p) => p.kind)).toEqual(["refuse"]);
  expect(routeOf(missing, "a.test")?.options.upstreamTls ?? null).toBeNull();
  expect(missing.diagnostics.find((d) => d.reason === "SecretNotFound")?.message).toBe("Secret shop/upstream (proxy-ssl-secret) not found; every path of the Ingress answers 503 until it is fixed");

  const caOnly = c.compile(snapshotOf(objs(ing, secret("1", { "ca.crt": b64(ca.certPem) }))));
  expect(routeOf(caOnly, "a.test")?.options.stages ?? null).toBeNull();
  expect(routeOf(caOnly, "a.test")?.options.upstreamTls).toMatchObject({ secret: "shop/upstream", verify: true, cert: null, ca: expect.stringContaining("BEGIN CERTIFICATE") });

  const full = c.compile(snapshotOf(objs(ing, secret("2", { "tls.crt": b64(client.certPem), "tls.key": b64(client.keyPem), "ca.crt": b64(ca.certPem) }))));
  expect(routeOf(full, "a.test")?.options.upstreamTls?.key).toBe(client.keyPem);
  const shown = JSON.stringify(serializeTable(full.table));
  expect(shown).toContain("proxy-ssl-secret shop/upstream: verify on (depth 1, name upstream_balancer), SNI none, client certificate yes");
  expect(shown).not.toContain("PRIVATE KEY");

  const gone = c.compile(snapshotOf(objs(ing)));
  expect(routeOf(gone, "a.test")?.options.stages?.map((p) => p.kind)).toEqual(["refuse"]);
});

test("verify on with a Secret without ca.crt, a key that is not the certificate's, or another namespace: refused with a diagnostic", () => {
  const other = createCertificate({ subjectCN: "other" });
  const cases: [Record<string, string>, Record<string, string>, string][] = [
    [{ "proxy-ssl-verify": "on" }, { "tls.crt": b64(client.certPem), "tls.key": b64(client.keyPem) }, 'proxy-ssl-verify is on but Secret shop/upstream has no "ca.crt" to verify with'],
    [{}, { "tls.crt": b64(client.certPem), "tls.key": b64(other.keyPem) }, '"tls.key" of Secret shop/upstream is not the key of its "tls.crt"'],
  ];
  for (const [extra, data, message] of cases) {
    const ann = { "nginx.ingress.kubernetes.io/proxy-ssl-secret": "shop/upstream", ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [`nginx.ingress.kubernetes.io/${k}`, v])) };
    const r = new Compiler(DEFAULT_COMPILE_CONFIG).compile(snapshotOf(objs(ingress("a", ann), secret("1", data))));
    expect(routeOf(r, "a.test")?.options.stages?.map((p) => p.kind)).toEqual(["refuse"]);
    expect(r.diagnostics.some((d) => d.message.startsWith(message))).toBe(true);
  }
  const cross = new Compiler(DEFAULT_COMPILE_CONFIG).compile(snapshotOf(objs(ingress("a", { "nginx.ingress.kubernetes.io/proxy-ssl-secret": "elsewhere/upstream" }))));
  expect(routeOf(cross, "a.test")?.options.stages?.map((p) => p.kind)).toEqual(["refuse"]);
});

test("the route option crosses to the workers (the wire) whole and frozen", async () => {
  const { decodeTable, encodeTable } = await import("../../src/table/wire.ts");
  const ing = ingress("a", { "nginx.ingress.kubernetes.io/proxy-ssl-secret": "shop/upstream", "nginx.ingress.kubernetes.io/proxy-ssl-protocols": "TLSv1.3 TLSv1.2" });
  const r = new Compiler(DEFAULT_COMPILE_CONFIG).compile(snapshotOf(objs(ing, secret("1", { "tls.crt": b64(client.certPem), "tls.key": b64(client.keyPem) }))));
  const before = routeOf(r, "a.test")?.options.upstreamTls;
  expect(before).toMatchObject({ minVersion: 0x0303, maxVersion: 0x0304, ca: null, verify: false });
  const after = allRoutes(decodeTable(JSON.parse(JSON.stringify(encodeTable(r.table))))).find((x) => x.host === "a.test")?.options.upstreamTls;
  expect(after).toEqual(before!);
  expect(Object.isFrozen(after)).toBe(true);
});

test("explain says the TLS Portico speaks to the pods (proxy-ssl-*), without the Secret's key", () => {
  const ing = ingress("a", { "nginx.ingress.kubernetes.io/backend-protocol": "HTTPS", "nginx.ingress.kubernetes.io/proxy-ssl-secret": "shop/upstream", "nginx.ingress.kubernetes.io/proxy-ssl-verify": "on", "nginx.ingress.kubernetes.io/proxy-ssl-name": "pod.internal", "nginx.ingress.kubernetes.io/proxy-ssl-server-name": "on" });
  const snap = snapshotOf([...objs(ing, secret("1", { "tls.crt": b64(client.certPem), "tls.key": b64(client.keyPem), "ca.crt": b64(ca.certPem) })), ...endpointsOf("shop", "web")]);
  const r = explain(snap, DEFAULT_COMPILE_CONFIG, { host: "a.test", path: "/", scheme: "http" }).response;
  expect(r.kind).toBe("proxied");
  // proxyssl/main.go: proxy_ssl_verify on, proxy_ssl_verify_depth 1 (default), proxy_ssl_name, proxy_ssl_server_name on.
  // proxy-ssl-ciphers DEFAULT and proxy-ssl-protocols TLSv1.2 when unset (annotations/upstream-tls.ts);
  // DEFAULT is offered as OpenSSL 3 reads it (`openssl ciphers DEFAULT`), over the suites Portico serves.
  expect(r.upstreamTls).toEqual({ secret: "shop/upstream", verify: true, depth: 1, name: "pod.internal", sni: "pod.internal", clientCertificate: true, ciphers: OPENSSL_DEFAULT, protocols: ["TLSv1.2"] });
  expect(JSON.stringify(r)).not.toContain("PRIVATE KEY");
});
