// Test helpers for the data-plane suites: hand-built route tables, a Config with test
// defaults, a proxy on 127.0.0.1:0, and raw-socket requests.
import { expect } from "bun:test";
import net from "node:net";
import type { Server } from "bun";
import { skipsAuthentication } from "../../src/annotations/basic-auth.ts";
import { parseAnnotations } from "../../src/compile/annotations.ts";
import type { Config } from "../../src/config/types.ts";
import { createProxyHandler, type ProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import { silentLogger, type Logger } from "../../src/log/logger.ts";
import type { AccessRecord, ProxyHooks } from "../../src/proxy/types.ts";
import type { WsData } from "../../src/proxy/upstream/websocket.ts";
import { createH2Listener } from "../../src/http2/listener.ts";
import { createGatewayPortListeners, type GatewayPortListeners } from "../../src/serving/gateway-ports.ts";
import { createHttpsListener } from "../../src/serving/https.ts";
import { needsNodeListener } from "../../src/table/listener-needs.ts";
import { serveOptions } from "../../src/proxy/pipeline/listener.ts";
import { buildTable } from "../../src/table/build.ts";
import { generateDefaultCertificate } from "../../src/tls/default-cert.ts";
import { createPemChecker } from "../../src/tls/pem.ts";
import { buildTlsEntries } from "../../src/tls/sni.ts";
import { h2Fetch, h2Session } from "../http2/client.ts";
import { lookup } from "../../src/table/lookup.ts";
import * as v from "valibot";
import { defineKind } from "../../src/kinds/define.ts";
import { EXTERNAL_AUTH } from "../../src/kinds/authentication.ts";
import { createAuthCache } from "../../src/proxy/policies/caps.ts";
import type { PolicyStage } from "../../src/policy/stages.ts";
import type { AuthCacheStore, PolicyCaps, PolicyKind, PolicyKinds, PolicyStep } from "../../src/kinds/types.ts";
import { createExternalResolver, type ExternalResolver } from "../../src/proxy/upstream/external.ts";
import { createKubeSource, type KubeSource } from "../../src/kube/watch.ts";
import { KINDS } from "../../src/model/kinds.ts";
import { createController, type Controller } from "../../src/runtime/controller.ts";
import { POLICY_KINDS } from "../../src/kinds/registry.ts";
import * as K from "../../src/kinds/index.ts";
import { captureLogger, fakeApiClient, FAST_WATCH } from "../fake-apiserver/fixtures.ts";
import { eventually } from "../wait.ts";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../e2e/harness.ts";
import type { Backend, Route, RouteOptions, RouteTable, Upstream } from "../../src/table/types.ts";

import { DEFAULT_BROTLI_TYPES, DEFAULT_GZIP_TYPES } from "../../src/config/flags.ts";
import { BUN_HEADER_FLAG } from "../../src/config/header-buffers.ts";

export const quietLog: Logger = silentLogger;

export function testConfig(over: Partial<Config> = {}): Config {
  return {
    kubeconfig: null, context: null, manifests: null, watchNamespace: null,
    httpPort: 0, httpsPort: 8443, adminPort: 0, bind: "127.0.0.1", debugAllow: ["127.0.0.0/8", "::1/128"],
    ingressClass: "portico", controllerName: "portico.dev/ingress-controller", gatewayControllerName: "portico.dev/gateway-controller", gatewayPorts: null, watchIngressWithoutClass: false, disableCatchAll: false, ingressNginxCompat: false,
    defaultSslCertificate: null, defaultBackendService: null, customHttpErrors: [], allowExternalNameServices: false, publishService: null, publishStatusAddress: null, updateStatus: true,
    electionId: "portico-leader", electionNamespace: null,
    logLevel: "info", logFormat: "json", accessLog: "off", accessLogTemplate: null, accessLogEscape: "default",
    maxBodySize: null, largeClientHeaderBuffers: { number: 4, size: 8192 }, trustedProxies: [], trustedProxyHeaders: "all", computeFullForwardedFor: true, allowlistSourceRange: [], denylistSourceRange: [], connectTimeoutMs: 5_000, responseTimeoutMs: 60_000,
    streamIdleTimeoutMs: 300_000, clientBodyTimeoutMs: 60_000, clientHeaderTimeoutMs: 60_000, clientBodyMinRate: 500, limitRate: 0, limitRateAfter: 0, requestBufferSize: 1024 * 1024, requestBufferBudget: 64 * 1024 * 1024, proxyBuffering: false, proxyBufferSize: 4096, maxResponseHeaderSize: 64 * 1024,
    enableUnderscoresInHeaders: false, shutdownDelayMs: 0, shutdownGracePeriodMs: 30_000,
    limitReqStatusCode: 503, limitConnStatusCode: 503,
    // As config/parse.ts gives it: --ingress-nginx-compat serves ingress-nginx's server-tokens false.
    serverHeader: over.ingressNginxCompat === true ? "none" : "backend",
    gzip: false, gzipLevel: 1, gzipMinLength: 256, gzipTypes: DEFAULT_GZIP_TYPES, gzipDisable: null, brotli: false, brotliLevel: 4, brotliMinLength: 20, brotliTypes: DEFAULT_BROTLI_TYPES,
    hsts: true, hstsMaxAge: 31536000, hstsIncludeSubdomains: false, hstsPreload: false, sslRedirect: true, forceSslRedirect: false, hostPolicyScope: "all", httpRedirectCode: 308,
    usePortInRedirects: false, preserveTrailingSlash: false, relativeRedirects: false, proxyRedirectFrom: "off", proxyRedirectTo: "off", proxyCookieDomain: "off", proxyCookiePath: "off", proxySslLocationOnly: false, noTlsRedirectLocations: ["/.well-known/acme-challenge"], noAuthLocations: ["/.well-known/acme-challenge"], globalAllowedResponseHeaders: [], addHeaders: null, proxySetHeaders: null, blockCidrs: [], blockUserAgents: [], blockReferers: [],
    globalAuthUrl: null, globalAuthMethod: null, globalAuthSignin: null, globalAuthSigninRedirectParam: null, globalAuthResponseHeaders: null, globalAuthRequestRedirect: null, globalAuthCacheKey: null, globalAuthCacheDuration: null, globalAuthAlwaysSetCookie: false,
    tlsMinVersion: "1.2", tlsMaxVersion: "1.3", tlsEcdhCurve: "auto", tlsCiphers: "", http2: true, http3: false, enableSslPassthrough: false, useProxyProtocol: false, proxyProtocolHeaderTimeoutMs: 5_000, proxyProtocolTrusted: ["0.0.0.0/0"], workers: 1, nginxConfigmap: null,
    ...over,
  };
}

export function endpoint(port: number, address = "127.0.0.1"): Upstream {
  return { address, port, authority: `${address}:${port}`, ready: true, serving: true, terminating: false };
}

export function makeBackend(ports: number[], over: Partial<Backend> = {}): Backend {
  const eps = ports.map((p) => endpoint(p));
  return {
    id: `default/svc-${ports.join("-") || "none"}:80`, namespace: "default", service: "svc", port: "80",
    status: eps.length > 0 ? "ok" : "NoEndpoints", endpoints: eps, allEndpoints: eps,
    scheme: "http", serverName: "svc.default.svc", externalName: false, ...over,
  };
}

/** Route options from annotations, as the compiler reads them; every value must be accepted. */
export function optionsOf(annotations: Record<string, string>): RouteOptions {
  const a = parseAnnotations(annotations);
  expect(a.problems).toEqual([]);
  return a.options;
}

export const defaultOptions: RouteOptions = {
  sslRedirect: true, forceSslRedirect: false, hsts: true, maxBodySize: null,
  connectTimeoutMs: null, responseTimeoutMs: null, streamIdleTimeoutMs: null, retry: null, requestBufferSize: null,
  proxyBuffering: null, proxyBufferSize: null, preserveTrailingSlash: false, usePortInRedirects: false, fromToWwwRedirect: false, limitRate: null, limitRateAfter: null, accessLog: true, stages: null,
};

export interface RouteSpec {
  host?: string | null;
  path?: string;
  pathType?: "Exact" | "Prefix";
  backend: Backend;
  options?: Partial<RouteOptions>;
  tls?: boolean;
  name?: string;
}

export function makeRoute(s: RouteSpec): Route {
  const path = s.path ?? "/";
  const pathType = s.pathType ?? "Prefix";
  return {
    ingress: { namespace: "default", name: s.name ?? "ing" }, host: s.host ?? null, path, pathType,
    declaredPathType: pathType, source: "rule", ruleIndex: 0, pathIndex: 0, backend: s.backend,
    options: { ...defaultOptions, ...s.options }, tls: s.tls ?? false,
    // `path` here is written as a rule's would be: exempt as the compiler decides it.
    ...(skipsAuthentication(path) ? { authExempt: true as const } : {}),
  };
}

export function makeTable(routes: RouteSpec[], defaultRoute: RouteSpec | null = null): RouteTable {
  const d = defaultRoute === null ? null : { ...makeRoute(defaultRoute), source: "defaultBackend" as const };
  return buildTable(routes.map(makeRoute), d);
}

/**
 * How a suite's requests reach the handler: Bun.serve over HTTP/1.1 on the plain port, the
 * HTTPS port over h2, or the HTTPS port's QUIC listener (`--http3`) over HTTP/3.
 */
export type Transport = "h1" | "h2" | "h3";

/** Every transport, for `describe.each(TRANSPORTS)`. */
export const TRANSPORTS: readonly Transport[] = ["h1", "h2", "h3"];

export interface TestProxy {
  readonly port: number;
  readonly url: string;
  readonly server: Server<WsData>;
  /** fetch(url + path, init) over this proxy's transport. */
  request(path: string, init?: { method?: string; headers?: Record<string, string>; body?: string; redirect?: "manual" }): Promise<Response>;
  readonly handler: ProxyHandler;
  readonly records: AccessRecord[];
  setTable(t: RouteTable): void;
  stop(): Promise<void>;
}

export function startProxy(table: RouteTable, config: Partial<Config> = {}, hooks: ProxyHooks = {}, scheme: "http" | "https" = "http", policyKinds?: PolicyKinds): TestProxy {
  const { handler, records, setTable } = testHandler(table, config, hooks, scheme, policyKinds);
  // As serveTraffic binds the plain port: h2c by prior knowledge beside HTTP/1.1.
  const server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler, http2: true });
  const url = `http://127.0.0.1:${server.port}`;
  return {
    port: server.port as number, url, server, handler, records, setTable,
    request: (path, init) => fetch(url + path, init),
    async stop() { await server.stop(true); },
  };
}

function testHandler(table: RouteTable, config: Partial<Config>, hooks: ProxyHooks, scheme: "http" | "https", policyKinds?: PolicyKinds) {
  let current = table;
  const records: AccessRecord[] = [];
  const handler = createProxyHandler({
    config: testConfig(config), table: () => current, lookup, log: quietLog, scheme, ...(policyKinds === undefined ? {} : { policyKinds }),
    hooks: { ...hooks, onRequestDone: (r) => { records.push(r); hooks.onRequestDone?.(r); } },
  });
  return { handler, records, setTable: (t: RouteTable) => { current = t; } };
}

/** A proxy whose requests go over `transport`, and nothing else the suite does differs. */
export type TransportProxy = Omit<TestProxy, "server">;

/**
 * startProxy over a transport: "h1" is startProxy itself; "h2" serves the same handler from
 * the HTTPS listener (TLS, ALPN h2); "h3" from the same listener with `--http3` (QUIC on the
 * port number), Bun's own fetch (`protocol: "http3"`) the client. `scheme` stays the
 * handler's, so one case list (what a request is routed to, redirected to, answered with)
 * runs over all three. `policyKinds` replaces the handler's registry (a test's own kinds).
 */
export async function startProxyOver(transport: Transport, table: RouteTable, config: Partial<Config> = {}, hooks: ProxyHooks = {}, scheme: "http" | "https" = "http", policyKinds?: PolicyKinds): Promise<TransportProxy> {
  if (transport === "h1") return startProxy(table, config, hooks, scheme, policyKinds);
  const { handler, records, setTable } = testHandler(table, config, hooks, scheme, policyKinds);
  const h3 = transport === "h3";
  if (h3 && needsNodeListener(table)) throw new Error("node:http2 serves no HTTP/3: this table cannot run over h3");
  // The HTTPS port as serveTraffic runs it (serving/https.ts): Bun.serve's own HTTP/2 (and
  // QUIC with --http3), or the node:http2 listener while the table needs it, which serves no
  // HTTP/3: a table needing it cannot run over "h3".
  const listener = createHttpsListener({
    config: { http2: true, http3: h3, clientHeaderTimeoutMs: testConfig(config).clientHeaderTimeoutMs }, log: quietLog,
    hostname: "127.0.0.1", port: 0, handler: () => serveOptions(handler), draining: () => handler.inflight.draining,
  });
  // PORTICO_TEST_LISTENER=h2 moves the h2 runs to node:http2; the h3 runs stay on Bun.serve.
  const node = needsNodeListener(table) || (!h3 && process.env.PORTICO_TEST_LISTENER === "h2");
  listener.useListener(node ? "node" : "bun");
  const built = buildTlsEntries([], generateDefaultCertificate(), { minVersion: "1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256" }, { checker: createPemChecker() });
  listener.update(built.entries, built.fingerprint);
  const url = `https://127.0.0.1:${listener.port}`;
  if (h3) {
    return {
      port: listener.port, url, handler, records, setTable,
      request: async (path, init) => {
        const r = await h3Fetch(url + path, init);
        // Bun.serve adds its `h3` Alt-Svc entry to answers over TCP only (tls/listener.ts): with
        // it, the request fell back to TCP and this suite would be testing h1 again.
        if (r.headers.get("alt-svc")?.includes(`h3=":${listener.port}"`)) throw new Error("an h3 request was answered over TCP");
        return r;
      },
      async stop() { await listener.stop(true); },
    };
  }
  const session = await h2Session(listener.port);
  return {
    port: listener.port, url, handler, records, setTable,
    request: (path, init) => h2Fetch(session, path, init),
    async stop() { session.close(); await listener.stop(true); },
  };
}

/**
 * One request over HTTP/3 with Bun's fetch. Measured on Bun 1.4.5 (docs/design.md, "Bun facts
 * measured here"): its QUIC client takes only `rejectUnauthorized` in `tls`, and a `host`
 * header replaces the URL's authority (it becomes :authority). Bounded, so a QUIC client that
 * never hears back fails the test rather than hanging it.
 */
export function h3Fetch(url: string, init: { method?: string; headers?: Record<string, string>; body?: string; redirect?: "manual" } = {}): Promise<Response> {
  return fetch(url, { ...init, protocol: "http3", tls: { rejectUnauthorized: false }, signal: AbortSignal.timeout(10_000) } as RequestInit);
}

/**
 * The listeners a raw HTTP/1.1 client can reach: Bun.serve on the plain port, and the
 * node:http2 listener's HTTP/1.1 side (the HTTPS port while a gRPC or client-certificate route
 * exists). Suites about Portico's own behaviour (framing, bodies, paths) run over both. The
 * HTTPS port's usual Bun.serve TLS listener is not among them yet: a pipelined request there
 * is noticed only three event-loop turns later (docs/design.md, "Request framing and bodies"),
 * so the pipelining cases fail on it.
 */
export const RAW_LISTENERS = ["bun-http", "h2-https-h1"] as const;
export type RawListener = (typeof RAW_LISTENERS)[number];

export interface RawProxy extends TransportProxy {
  /** Raw clients must speak TLS (ALPN http/1.1). */
  readonly tls: boolean;
}

/** startProxy on `kind`; the handler's scheme stays "http" so both serve the same answers. */
export function startRawProxy(kind: RawListener, table: RouteTable, config: Partial<Config> = {}, hooks: ProxyHooks = {}): RawProxy {
  if (kind === "bun-http") return { ...startProxy(table, config, hooks), tls: false };
  const { handler, records, setTable } = testHandler(table, config, hooks, "http");
  const listener = createH2Listener({ hostname: "127.0.0.1", port: 0, handler: () => serveOptions(handler), log: quietLog, draining: () => handler.inflight.draining, headerTimeoutMs: testConfig(config).clientHeaderTimeoutMs });
  const built = buildTlsEntries([], generateDefaultCertificate(), { minVersion: "1.2", ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256" }, { checker: createPemChecker() });
  listener.update(built.entries, built.fingerprint);
  const url = `https://127.0.0.1:${listener.port}`;
  return {
    port: listener.port, url, handler, records, setTable, tls: true,
    // HTTP/1.1 over TLS (Bun's fetch offers no h2).
    request: (path, init) => fetch(url + path, { ...init, tls: { rejectUnauthorized: false } } as RequestInit),
    stop: () => listener.stop(true),
  };
}

/** Send raw bytes, return everything received until the peer closes or `ms` passes. */
export function rawRequest(port: number, bytes: string | Uint8Array, ms = 2_000): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const sock = net.connect(port, "127.0.0.1", () => sock.write(bytes));
    const done = () => { clearTimeout(t); resolve(Buffer.concat(chunks).toString("latin1")); };
    const t = setTimeout(() => { sock.destroy(); done(); }, ms);
    sock.on("data", (d: Buffer) => chunks.push(d));
    sock.on("close", done);
    sock.on("error", () => {});
  });
}

/** Open a WebSocket to `url`, send "hi" and resolve with the first message back; the socket is then closed. */
export async function wsFirstReply(url: string, headers: Record<string, string> = {}): Promise<string> {
  const ws = new WebSocket(url, { headers } as Bun.WebSocketOptions);
  try {
    return await new Promise<string>((resolve, reject) => {
      ws.onopen = () => ws.send("hi");
      ws.onmessage = (e) => resolve(String(e.data));
      ws.onerror = () => reject(new Error("websocket failed"));
    });
  } finally {
    ws.close();
  }
}

export function statusLine(raw: string): number {
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(raw);
  return m ? Number(m[1]) : 0;
}

/** A backend that answers with JSON describing what it received, counting hits. */
export function echoBackend(name = "echo") {
  const seen: Array<{ method: string; url: string; headers: Record<string, string> }> = [];
  const server = Bun.serve({
    hostname: "127.0.0.1", port: 0,
    async fetch(req) {
      const headers: Record<string, string> = {};
      req.headers.forEach((v, k) => { headers[k] = v; });
      const body = req.body ? await req.text() : "";
      seen.push({ method: req.method, url: req.url, headers });
      return Response.json({ name, method: req.method, url: req.url, path: new URL(req.url).pathname + new URL(req.url).search, headers, body });
    },
  });
  return { server, port: server.port as number, seen, stop: () => server.stop(true) };
}

/** A policy kind for a test: any parameters, filed under `stage`. */
// biome-ignore lint: a test kind reads whatever parameters its test gives it.
export function testKind(stage: PolicyStage, build: (params: any) => PolicyStep, id = "test"): PolicyKind {
  return defineKind(id, stage, v.any(), build);
}

/**
 * `kind` with some of the capabilities the handler gives it replaced (a seeded random, a
 * fixed clock, a resolver of the test's, a limiter with its own clock): the kind's own
 * contract and build, handed these instead (kinds/types.ts PolicyCaps).
 */
export function withCaps<P>(kind: PolicyKind<P>, over: Partial<PolicyCaps>): PolicyKind<P> {
  return { id: kind.id, stage: kind.stage, schema: kind.schema, build: (params, caps) => kind.build(params, { ...(caps as PolicyCaps), ...over }) };
}

/** External authentication over the test's resolver, with a cache of its own (the one given, or a new one). */
export function externalAuthWith(o: { readonly resolver: ExternalResolver; readonly cache?: AuthCacheStore }): PolicyKind {
  const cache = o.cache ?? createAuthCache();
  return withCaps(EXTERNAL_AUTH, { resolve: (u, ms) => o.resolver.target(u, ms), authCache: () => cache });
}

/** One process's watched external authentication, as startWatchedAuthProxy starts it. */
export interface WatchedAuthProxy {
  readonly controller: Controller;
  readonly source: KubeSource;
  readonly server: { port: number | undefined; stop(force?: boolean): unknown };
  stop(): Promise<void>;
}

/**
 * The fake API server at `apiUrl` (token `t`) through the real list+watch source and the real
 * controller, served by the real proxy handler on 127.0.0.1 once the first table is built (it
 * waits for every kind, the named ConfigMaps included: kube/configmap-refs.ts). The auth
 * service runs on 127.0.0.1, which the address policy refuses, so the external-auth kind gets a
 * lookup of auth.test.svc to 127.0.0.1 and a check permitting exactly that address.
 */
export async function startWatchedAuthProxy(apiUrl: string, tmpPrefix: string, firstTableMs: number): Promise<WatchedAuthProxy> {
  const log = captureLogger();
  const kube = await fakeApiClient(apiUrl, "t", log, tmpPrefix);
  const controller = createController({ config: testConfig(), log: quietLog });
  const source = createKubeSource({ client: kube.client, config: { watchNamespace: null }, log, kinds: KINDS, timings: FAST_WATCH });
  await source.start(controller.sink);
  const kinds = new Map<string, PolicyKind>(POLICY_KINDS);
  const resolver = createExternalResolver({
    lookup: async (name) => (name === "auth.test.svc" ? ["127.0.0.1"] : Promise.reject(Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" }))),
    check: (a) => (a === "127.0.0.1" ? null : "not the test address"),
  });
  kinds.set(K.EXTERNAL_AUTH.id, externalAuthWith({ resolver }));
  const handler = createProxyHandler({ config: testConfig(), table: () => controller.holder.current, lookup, log: quietLog, scheme: "http", policyKinds: kinds });
  const server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
  const stop = async () => {
    server.stop(true);
    await source.stop();
    controller.dispose();
    kube.remove();
  };
  try {
    await eventually(() => controller.last !== null, firstTableMs, "first table");
  } catch (e) {
    await stop();
    throw e;
  }
  return { controller, source, server, stop };
}

/** This machine's nginx, or null: the side-by-side suites skip their nginx half without it. */
export const NGINX_BIN: string | null = Bun.which("nginx") ?? (Bun.file("/usr/sbin/nginx").size > 0 ? "/usr/sbin/nginx" : null);

export interface RealNginx {
  readonly port: number;
  /** The nginx prefix folder (its config, logs, temp files and `files`). */
  readonly dir: string;
  stop(): Promise<void>;
}

/**
 * A real nginx (NGINX_BIN; one process, in the foreground) listening on 127.0.0.1 at a free
 * port, everything it writes in a fresh temporary folder. `http(port, dir)` is the http
 * block's own text (access_log, server blocks); `files` are written into the folder first
 * (certificates). Returns once `ready(port)` is true.
 */
export async function startNginx(o: {
  readonly prefix: string;
  readonly http: (port: number, dir: string) => string;
  readonly ready: (port: number) => Promise<boolean>;
  readonly files?: Readonly<Record<string, string>>;
}): Promise<RealNginx> {
  const dir = mkdtempSync(join(tmpdir(), o.prefix));
  const port = freePort();
  for (const [name, text] of Object.entries(o.files ?? {})) writeFileSync(join(dir, name), text);
  writeFileSync(join(dir, "nginx.conf"), `
      daemon off; master_process off; worker_processes 1; pid ${dir}/nginx.pid; error_log ${dir}/error.log;
      events { worker_connections 64; }
      http {
        server_tokens off;
        client_body_temp_path ${dir}/b; proxy_temp_path ${dir}/p; fastcgi_temp_path ${dir}/f; uwsgi_temp_path ${dir}/u; scgi_temp_path ${dir}/s;
        ${o.http(port, dir)}
      }`);
  const proc = Bun.spawn([NGINX_BIN!, "-c", join(dir, "nginx.conf"), "-p", dir], { stdout: "ignore", stderr: "pipe" });
  const stop = async () => {
    proc.kill();
    await proc.exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await eventually(() => o.ready(port), 5000, "nginx listening");
  } catch (e) {
    await stop();
    throw e;
  }
  return { port, dir, stop };
}

/** A ready check for startNginx: any HTTP answer at `path`. */
export const answersAt = (path: string) => (port: number): Promise<boolean> => fetch(`http://127.0.0.1:${port}${path}`).then(() => true, () => false);

/** The first line of `s` (up to the end if it closes first), trimmed; the stream is released after. */
export async function readFirstLine(s: ReadableStream<Uint8Array>): Promise<string> {
  const r = s.getReader();
  let out = "";
  while (!out.includes("\n")) {
    const { value, done } = await r.read();
    if (done) break;
    out += new TextDecoder().decode(value);
  }
  r.releaseLock();
  return out.trim();
}

/**
 * test/proxy/proxy-process.ts in a process of its own with `env` added, and the port it prints
 * on its first line (`PORT n`); the process is killed if it prints none.
 */
export async function spawnProxyProcess(env: Record<string, string>): Promise<{ proc: ReturnType<typeof Bun.spawn>; port: number }> {
  // With the parser limit every Portico process runs with (scripts/build.ts BUN_HEADER_FLAG).
  const proc = Bun.spawn(["bun", BUN_HEADER_FLAG, "test/proxy/proxy-process.ts"], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "inherit" });
  const m = /PORT (\d+)/.exec(await readFirstLine(proc.stdout as ReadableStream<Uint8Array>));
  if (m === null) {
    proc.kill();
    await proc.exited;
    throw new Error("the proxy process printed no PORT line");
  }
  return { proc, port: Number(m[1]) };
}

/**
 * The Gateway port listeners of `table` on loopback, as one worker alone (no SO_REUSEPORT), a
 * port that could not be bound tried again after 20 ms rather than the default 250.
 */
export function testGatewayPorts(
  config: Config,
  table: () => RouteTable,
  tls: Parameters<typeof createGatewayPortListeners>[0]["tls"],
  log: Logger = silentLogger,
): GatewayPortListeners {
  return createGatewayPortListeners({ config, log, hostname: "127.0.0.1", reusePort: false, retryMs: 20, table, deps: { config, lookup, log }, tls });
}
