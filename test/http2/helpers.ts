// Helpers for the HTTP/2 suites: the real proxy handler behind the real node:http2 listener
// (or the Bun.serve TLS listener, to run one case over both), certificates minted here, and
// node:http2 / curl clients.
import http2 from "node:http2";
import type { Config } from "../../src/config/types.ts";
import { createH2Listener, type HttpsListener } from "../../src/http2/listener.ts";
import { createProxyHandler, type ProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { serveOptions } from "../../src/proxy/pipeline/listener.ts";
import type { AccessRecord, ProxyHooks } from "../../src/proxy/types.ts";
import type { RouteTable } from "../../src/table/types.ts";
import { lookup } from "../../src/table/lookup.ts";
import { generateDefaultCertificate } from "../../src/tls/default-cert.ts";
import { createTlsListener } from "../../src/tls/listener.ts";
import { createPemChecker } from "../../src/tls/pem.ts";
import { buildTlsEntries, type TlsEntries } from "../../src/tls/sni.ts";
import { createCertificate } from "../tls/pki.ts";
import { binding } from "../tls/helpers.ts";
import { quietLog, testConfig } from "../proxy/helpers.ts";
import { needsClientCertificates } from "../../src/table/client-certs.ts";
import { needsNodeListener } from "../../src/table/listener-needs.ts";
import { createHttpsListener, type SwitchingHttpsListener } from "../../src/serving/https.ts";

export { h2Fetch, h2Session } from "./client.ts";

export const TLS_SETTINGS = { minVersion: "1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256" } as const;

/** Entries serving one certificate per host (CN = host), the generated default for the rest. */
export function entriesFor(hosts: readonly string[]): TlsEntries {
  const bindings = hosts.map((h) => binding(h, `default/${h}`, createCertificate({ subjectCN: h, sans: [h] })));
  return buildTlsEntries(bindings, generateDefaultCertificate(), TLS_SETTINGS, { checker: createPemChecker() });
}

/** "h2": the node:http2 listener; "bun": Bun.serve HTTP/1.1; "bunh2": Bun.serve with http2; "serving": the HTTPS port as serveTraffic runs it (serving/https.ts). */
export type Listener = "h2" | "bun" | "bunh2" | "serving";

export interface TlsProxy {
  readonly port: number;
  readonly origin: string;
  readonly listener: HttpsListener;
  /** Set for kind "serving". */
  readonly serving: SwitchingHttpsListener | null;
  readonly handler: ProxyHandler;
  readonly records: AccessRecord[];
  setTable(t: RouteTable): void;
  stop(): Promise<void>;
}

/** The proxy handler (scheme https) behind the HTTP/2 listener, or behind Bun.serve for "bun". */
export function startTlsProxy(
  table: RouteTable,
  o: { kind?: Listener; hosts?: readonly string[]; config?: Partial<Config>; hooks?: ProxyHooks; maxResetsPerSecond?: number; onAbuse?: (reason: string) => void } = {},
): TlsProxy {
  let current = table;
  const records: AccessRecord[] = [];
  const handler = createProxyHandler({
    config: testConfig(o.config), table: () => current, lookup, log: quietLog, scheme: "https",
    hooks: { ...o.hooks, onRequestDone: (r) => { records.push(r); o.hooks?.onRequestDone?.(r); } },
  });
  const common = { hostname: "127.0.0.1", port: 0, handler: () => serveOptions(handler), log: quietLog };
  // PORTICO_TEST_LISTENER runs a suite written for one listener on another (docs/design.md,
  // "HTTP/2 and gRPC": how Bun.serve's HTTP/2 was measured against the node:http2 suites).
  const kind = o.kind ?? (process.env.PORTICO_TEST_LISTENER as Listener | undefined) ?? "h2";
  const serving = kind === "serving"
    ? createHttpsListener({ config: { http2: true, http3: false, clientHeaderTimeoutMs: testConfig(o.config).clientHeaderTimeoutMs }, log: quietLog, hostname: "127.0.0.1", port: 0, handler: () => serveOptions(handler), draining: () => handler.inflight.draining, hooks: { onAbuse: (r) => o.onAbuse?.(r) }, drainMs: 200 })
    : null;
  serving?.useListener(needsNodeListener(table) ? "node" : "bun");
  const listener: HttpsListener = serving !== null ? serving : kind === "h2"
    ? createH2Listener({ ...common, headerTimeoutMs: o.config?.clientHeaderTimeoutMs, maxResetsPerSecond: o.maxResetsPerSecond, draining: () => handler.inflight.draining, hooks: { onAbuse: (r) => o.onAbuse?.(r) } })
    : createTlsListener({ ...common, http2: kind === "bunh2" });
  // As serveTraffic does: handshakes ask for client certificates while a route reads them.
  listener.requestClientCertificates(needsClientCertificates(table));
  const built = entriesFor(o.hosts ?? []);
  listener.update(built.entries, built.fingerprint);
  return {
    port: listener.port, origin: `https://127.0.0.1:${listener.port}`, listener, serving, handler, records,
    setTable(t) { current = t; serving?.useListener(needsNodeListener(t) ? "node" : "bun"); listener.requestClientCertificates(needsClientCertificates(t)); },
    stop: () => listener.stop(true),
  };
}

export interface H2Response {
  readonly status: number;
  readonly headers: http2.IncomingHttpHeaders;
  readonly body: Buffer;
  readonly trailers: http2.IncomingHttpHeaders | null;
  readonly alpn: string | undefined;
}

/** One request on a session; `body` is sent whole. */
export function h2Request(s: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: string | Buffer): Promise<H2Response> {
  return new Promise((resolve, reject) => {
    const req = s.request(headers, { endStream: body === undefined });
    const chunks: Buffer[] = [];
    let status = 0;
    let got: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders | null = null;
    req.on("response", (h) => { got = h; status = Number(h[":status"]); });
    req.on("trailers", (t) => { trailers = t; });
    req.on("data", (d: Buffer) => chunks.push(d));
    req.on("error", reject);
    req.on("close", () => {
      if (status === 0) reject(new Error(`stream closed without a response (rst ${req.rstCode})`));
      else resolve({ status, headers: got, body: Buffer.concat(chunks), trailers, alpn: s.alpnProtocol });
    });
    if (body !== undefined) req.end(body);
  });
}

/** Run curl; resolves with its stdout and exit code. */
export async function curl(args: string[]): Promise<{ out: string; code: number; err: string }> {
  const p = Bun.spawn(["curl", "-sS", "--max-time", "10", ...args], { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { out, code, err };
}
