// Explain's `certificate` and `tls` for an HTTPS request on a Gateway's own port
// (--gateway-ports, docs/design.md "Gateways with their own address"), held to a real TLS
// handshake on that port's listener (serving/gateway-ports.ts) with the certificate sets the
// runtime builds (serving/tls.ts createTlsBuilder, buildPortTls): a listener hostname's
// certificateRefs serve that name, the hostless HTTPS listener's serve every other name as the
// port's default (Gateway API: a listener without hostname matches every name), and the port's
// cipher list is the listener's own (no Ingress's ssl-ciphers reaches a Gateway's port).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect as tlsConnect } from "node:tls";
import { Compiler } from "../../src/compile/compile.ts";
import type { CompileConfig } from "../../src/compile/config.ts";
import { explain } from "../../src/compile/explain.ts";
import { silentLogger } from "../../src/log/logger.ts";
import { type GatewayPortListeners } from "../../src/serving/gateway-ports.ts";
import { buildPortTls, createTlsBuilder, type TlsSet } from "../../src/serving/tls.ts";
import type { Snapshot } from "../../src/store/types.ts";
import type { RouteTable } from "../../src/table/types.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { BASE, INFRA, snapshot } from "../gateway/base.ts";
import { freeRange } from "../gateway/base-harness.ts";
import { createCertificate } from "../tls/pki.ts";
import { testConfig, testGatewayPorts } from "./helpers.ts";

const RANGE_SIZE = 2;
const named = createCertificate({ subjectCN: "named.gw.test", sans: ["named.gw.test"] });
const hostless = createCertificate({ subjectCN: "any.gw.test", sans: ["*.gw.test", "other.test"] });
const CN: Readonly<Record<string, string>> = { [`${INFRA}/named-tls`]: "named.gw.test", [`${INFRA}/hostless-tls`]: "any.gw.test" };
const b64 = (s: string) => Buffer.from(s).toString("base64");
const secret = (name: string, c: { certPem: string; keyPem: string }) => `
apiVersion: v1
kind: Secret
metadata: { name: ${name}, namespace: ${INFRA} }
type: kubernetes.io/tls
data: { tls.crt: ${b64(c.certPem)}, tls.key: ${b64(c.keyPem)} }`;
const GATEWAY = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: tls-gw, namespace: ${INFRA}, generation: 1 }
spec:
  gatewayClassName: portico
  listeners:
    - { name: named, port: 443, protocol: HTTPS, hostname: named.gw.test, tls: { certificateRefs: [{ name: named-tls }] }, allowedRoutes: { namespaces: { from: Same } } }
    - { name: any, port: 443, protocol: HTTPS, tls: { certificateRefs: [{ name: hostless-tls }] }, allowedRoutes: { namespaces: { from: Same } } }
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: web, namespace: ${INFRA}, generation: 1 }
spec:
  parentRefs: [{ name: tls-gw }]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`;

let snap: Snapshot;
let config: CompileConfig;
let table: RouteTable;
let sets: ReadonlyMap<number, TlsSet>;
let ports: GatewayPortListeners;
let port = 0;

beforeAll(() => {
  const from = freeRange(RANGE_SIZE);
  config = { ...DEFAULT_COMPILE_CONFIG, gatewayPorts: { from, to: from + RANGE_SIZE - 1 }, publishService: { namespace: "portico", name: "portico" } } as CompileConfig;
  snap = snapshot(BASE, GATEWAY, secret("named-tls", named), secret("hostless-tls", hostless));
  const result = new Compiler(config).compile(snap);
  table = result.table;
  port = [...(table.gatewayPorts ?? [])].find(([, g]) => g.gateway === `${INFRA}/tls-gw`)?.[0] ?? 0;
  const proxyConfig = testConfig({ gatewayPorts: config.gatewayPorts, tlsCiphers: "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256" });
  sets = buildPortTls(createTlsBuilder(proxyConfig, silentLogger), result).ports;
  ports = testGatewayPorts(proxyConfig, () => table, (p) => sets.get(p) ?? { entries: [], fingerprint: "" });
  ports.fit(table);
});
afterAll(async () => {
  await ports?.stop(true);
});

/** The CN of the certificate a handshake with this SNI name gets on `p`. */
function peerCn(p: number, servername: string): Promise<string | null> {
  return new Promise((resolve) => {
    let cn: string | null = null;
    const s = tlsConnect({ host: "127.0.0.1", port: p, servername, rejectUnauthorized: false, ALPNProtocols: ["http/1.1"] }, () => {
      cn = String(s.getPeerCertificate().subject?.CN ?? "");
      s.end();
    });
    const timer = setTimeout(() => s.destroy(), 10_000);
    s.on("error", () => s.destroy());
    s.on("close", () => (clearTimeout(timer), resolve(cn)));
  });
}

describe("explain on a Gateway's own HTTPS port: the certificate its handshake gets", () => {
  test("the port is an HTTPS port of its own", () => {
    expect(port).toBeGreaterThan(0);
    expect(ports.ports.get(port)).toEqual({ https: true });
  });

  const CASES: { host: string; via: "exact" | "default"; secret: string }[] = [
    // The listener hostname's certificateRefs.
    { host: "named.gw.test", via: "exact", secret: `${INFRA}/named-tls` },
    // Every other name: the hostless listener's, the port's default.
    { host: "x.gw.test", via: "default", secret: `${INFRA}/hostless-tls` },
    { host: "other.test", via: "default", secret: `${INFRA}/hostless-tls` },
  ];
  for (const c of CASES) {
    test(`${c.host}: ${c.secret} (${c.via})`, async () => {
      const e = explain(snap, config, { host: c.host, path: "/", scheme: "https", port });
      expect(e.table.port).toBe(port);
      expect(e.certificate).toMatchObject({ via: c.via, secret: c.secret });
      expect(e.tls?.entry.via).toBe(c.via);
      // The port's settings: the listener's list (no Ingress's ssl-ciphers reaches it).
      expect(e.tls?.ciphersFrom).toEqual({ source: "tls-ciphers" });
      expect(await peerCn(port, c.host)).toBe(CN[c.secret]!);
    });
  }
});
