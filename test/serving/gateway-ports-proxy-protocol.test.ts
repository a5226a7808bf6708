// --use-proxy-protocol on the Gateways' own ports (serving/gateway-ports.ts; docs/design.md
// "PROXY protocol"): a load balancer that writes PROXY headers writes them on every port of the
// Service it fronts, so each Gateway's port reads them as the shared ports do, with the same
// trust rule (--proxy-protocol-trusted). As in ingress-nginx's listen ... proxy_protocol
// (nginx.tmpl; test/e2e/settings/proxy_protocol.go): the header's source is X-Forwarded-For and
// X-Real-IP, its destination port X-Forwarded-Port, and a connection without a header is closed
// unanswered. The listeners are the real ones, the pod a raw-socket backend logging each head.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import net from "node:net";
import tls from "node:tls";
import { Compiler } from "../../src/compile/compile.ts";
import type { CompileConfig } from "../../src/compile/config.ts";
import type { Config } from "../../src/config/types.ts";
import { type GatewayPortListeners } from "../../src/serving/gateway-ports.ts";
import type { RouteTable } from "../../src/table/types.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { BASE, INFRA, podService, snapshot } from "../gateway/base.ts";
import { freeRange } from "../gateway/base-harness.ts";
import { testConfig, testGatewayPorts } from "../proxy/helpers.ts";
import { namedBackend, type RawBackend } from "../proxy/raw.ts";
import { createCertificate } from "../tls/pki.ts";

const HOST = "pp.example";
const pem = createCertificate({ subjectCN: HOST, sans: [HOST] });

/** A Gateway with an HTTP and an HTTPS listener (two Portico ports), one HTTPRoute to the pod (podService). */
const OBJECTS = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: pp, namespace: ${INFRA}, generation: 1 }
spec:
  gatewayClassName: portico
  listeners:
    - { name: http, port: 80, protocol: HTTP }
    - { name: https, port: 443, protocol: HTTPS, tls: { mode: Terminate, certificateRefs: [{ name: pp-cert }] } }
---
apiVersion: v1
kind: Secret
metadata: { name: pp-cert, namespace: ${INFRA} }
type: kubernetes.io/tls
data: { tls.crt: ${Buffer.from(pem.certPem).toString("base64")}, tls.key: ${Buffer.from(pem.keyPem).toString("base64")} }
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: pp, namespace: ${INFRA}, generation: 1 }
spec:
  parentRefs: [{ name: pp }]
  hostnames: [${HOST}]
  rules: [{ backendRefs: [{ name: pod, port: 8080 }] }]`;

let be: RawBackend;
let table: RouteTable;
let http = 0;
let https = 0;
const started: GatewayPortListeners[] = [];
let sent = 0;

beforeAll(async () => {
  be = await namedBackend("pod");
  const from = freeRange(2);
  const config = { ...DEFAULT_COMPILE_CONFIG, gatewayPorts: { from, to: from + 1 }, publishService: { namespace: "portico", name: "portico" } } as CompileConfig;
  table = new Compiler(config).compile(snapshot(BASE, podService(be.port), OBJECTS)).table;
  for (const [p, g] of table.gatewayPorts ?? []) g.https ? (https = p) : (http = p);
  expect([http > 0, https > 0]).toEqual([true, true]);
});
afterEach(async () => {
  for (const l of started.splice(0)) await l.stop(true);
});
afterAll(async () => {
  await be?.stop();
});

/** The Gateway ports of `table`, served with these flags. */
function listen(over: Partial<Config>): GatewayPortListeners {
  const config = testConfig({ proxyProtocolHeaderTimeoutMs: 2_000, ...over });
  const set = { entries: [{ cert: pem.certPem, key: pem.keyPem, ciphers: config.tlsCiphers, secureOptions: 0 }], fingerprint: "f" };
  const l = testGatewayPorts(config, () => table, () => set);
  started.push(l);
  l.fit(table);
  expect(l.ports.size).toBe(2);
  return l;
}

/** A PROXY protocol version 2 header over TCP/IPv4 (HAProxy's proxy-protocol.txt §2.2). */
function v2(src: number[], dst: number[], sport: number, dport: number): Uint8Array {
  const sig = [0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a];
  const addr = [...src, ...dst, sport >> 8, sport & 0xff, dport >> 8, dport & 0xff];
  return new Uint8Array([...sig, 0x21, 0x11, 0, addr.length, ...addr]);
}

/** Everything read from `s` after writing `bytes`, until the server closes it (bounded: 10 s). */
function exchange(s: net.Socket | tls.TLSSocket, bytes: string | null): Promise<{ data: string; closed: boolean }> {
  return new Promise((resolve) => {
    const got: Buffer[] = [];
    const timer = setTimeout(() => (s.destroy(), resolve({ data: Buffer.concat(got).toString("latin1"), closed: false })), 10_000);
    s.on("data", (d: Buffer) => void got.push(d));
    s.on("error", () => {});
    s.on("close", () => (clearTimeout(timer), resolve({ data: Buffer.concat(got).toString("latin1"), closed: true })));
    if (bytes !== null) s.write(bytes);
  });
}

/** Connects to `port` and writes `header` first (null: none). */
function dial(port: number, header: string | Uint8Array | null): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1", () => {
      if (header !== null) s.write(header);
      resolve(s);
    });
    s.once("error", reject);
  });
}

const FIELDS = ["x-forwarded-for", "x-real-ip", "x-forwarded-port", "x-forwarded-proto"] as const;

/** One GET to the Gateway behind `header`; the pod's forwarded fields for it. */
async function get(port: number, header: string | Uint8Array, overTls: boolean): Promise<Record<string, string | null>> {
  const id = `gw-pp-${++sent}`;
  const raw = await dial(port, header);
  let s: net.Socket | tls.TLSSocket = raw;
  if (overTls) {
    const t = tls.connect({ socket: raw, servername: HOST, rejectUnauthorized: false });
    await new Promise<void>((resolve, reject) => (t.once("secureConnect", resolve), t.once("error", reject)));
    expect(String(t.getPeerCertificate().subject?.CN)).toBe(HOST);
    s = t;
  }
  const r = await exchange(s, `GET / HTTP/1.1\r\nHost: ${HOST}\r\nX-Request-ID: ${id}\r\nConnection: close\r\n\r\n`);
  expect(r.data).toStartWith("HTTP/1.1 200 ");
  const heads = be.hits.map((h) => h.head).filter((h) => h.toLowerCase().includes(`\r\nx-request-id: ${id}\r\n`));
  expect(heads).toHaveLength(1);
  const out: Record<string, string | null> = {};
  for (const name of FIELDS) {
    const lines = (heads[0] as string).split("\r\n").slice(1).filter((l) => l.toLowerCase().startsWith(`${name}:`));
    out[name] = lines.length === 1 ? (lines[0] as string).slice(name.length + 1).trim() : lines.length === 0 ? null : lines.join(" | ");
  }
  return out;
}

describe("--use-proxy-protocol on a Gateway's own ports", () => {
  test("v1 on the HTTP port, v2 on the HTTPS port: the header's client and port reach the pod; no header: closed unanswered", async () => {
    listen({ useProxyProtocol: true, proxyProtocolTrusted: ["0.0.0.0/0"] });
    expect(await get(http, "PROXY TCP4 192.168.0.1 192.168.0.11 56324 1234\r\n", false)).toEqual({
      "x-forwarded-for": "192.168.0.1", "x-real-ip": "192.168.0.1", "x-forwarded-port": "1234", "x-forwarded-proto": "http",
    });
    expect(await get(https, v2([10, 1, 2, 3], [10, 9, 9, 9], 40000, 8443), true)).toEqual({
      "x-forwarded-for": "10.1.2.3", "x-real-ip": "10.1.2.3", "x-forwarded-port": "8443", "x-forwarded-proto": "https",
    });
    // And the other way round: v2 on the HTTP port, v1 on the HTTPS port.
    expect(await get(http, v2([10, 4, 5, 6], [10, 9, 9, 9], 40000, 80), false)).toEqual({
      "x-forwarded-for": "10.4.5.6", "x-real-ip": "10.4.5.6", "x-forwarded-port": "80", "x-forwarded-proto": "http",
    });
    expect(await get(https, "PROXY TCP4 192.168.0.2 192.168.0.11 56324 443\r\n", true)).toEqual({
      "x-forwarded-for": "192.168.0.2", "x-real-ip": "192.168.0.2", "x-forwarded-port": "443", "x-forwarded-proto": "https",
    });
    // nginx's "broken header": a request without one is closed with no answer, on both ports.
    const before = be.hits.length;
    for (const port of [http, https]) {
      const r = await exchange(await dial(port, null), `GET / HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`);
      expect(r).toEqual({ data: "", closed: true });
    }
    expect(be.hits.length).toBe(before);
  });

  test("an untrusted peer's header is read and stripped, and the peer stays the client (--proxy-protocol-trusted)", async () => {
    listen({ useProxyProtocol: true, proxyProtocolTrusted: ["10.0.0.0/8"] });
    expect(await get(http, "PROXY TCP4 192.168.0.1 192.168.0.11 56324 1234\r\n", false)).toEqual({
      "x-forwarded-for": "127.0.0.1", "x-real-ip": "127.0.0.1", "x-forwarded-port": "1234", "x-forwarded-proto": "http",
    });
    expect(await get(https, v2([10, 1, 2, 3], [10, 9, 9, 9], 40000, 8443), true)).toEqual({
      "x-forwarded-for": "127.0.0.1", "x-real-ip": "127.0.0.1", "x-forwarded-port": "8443", "x-forwarded-proto": "https",
    });
  });
});
