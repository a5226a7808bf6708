// The base the Gateway API conformance transcriptions share (test/gateway/serve.test.ts for
// core, extended.ts for Extended): the upstream suite's namespaces, GatewayClass, Gateway
// and echo backends (conformance/base/manifests.yaml, kubernetes-sigs/gateway-api v1.6) in the
// fake API server, one real Portico watching it, and the request helpers.
import { afterAll, beforeAll } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import http2 from "node:http2";
import { load } from "js-yaml";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { startPortico, type Portico } from "../e2e/harness.ts";
import { kubeconfig } from "../e2e/objects.ts";
import { eventually } from "../wait.ts";

export const INFRA = "gateway-conformance-infra";
export const APP = "gateway-conformance-app-backend";
export const WEB = "gateway-conformance-web-backend";

export interface Echo {
  readonly name: string;
  readonly port: number;
  /** `METHOD path?query host` of every request received, in order (the mirror tests read it). */
  readonly log: string[];
  stop(): void;
}

/**
 * Answers JSON: which backend, the path and query, and the request headers; `?delay=` holds the
 * answer back; `X-Echo-Set-Header: name:value,name:value` sets those response fields, as the
 * conformance echo server does (the suite's BackendSetResponseHeaders). A WebSocket handshake
 * on /ws is accepted and every message echoed back, text as text and binary as binary (the echo
 * server's /ws, HTTPRouteBackendProtocolWebSocket).
 */
function echo(name: string): Echo {
  const log: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    websocket: {
      message(ws, m) {
        ws.send(m);
      },
    },
    async fetch(req, srv) {
      const u = new URL(req.url);
      if (u.pathname === "/ws" && req.headers.get("upgrade")?.toLowerCase() === "websocket") {
        if (log.length < 5000) log.push(`WS ${u.pathname} ${req.headers.get("host")}`);
        return srv.upgrade(req) ? undefined : new Response("upgrade failed", { status: 400 });
      }
      if (log.length < 5000) log.push(`${req.method} ${u.pathname}${u.search} ${req.headers.get("host")}`);
      // The conformance echo server's `?delay=1s`: the answer waits (the timeout tests).
      const delay = /^([0-9]+)(ms|s)$/.exec(u.searchParams.get("delay") ?? "");
      if (delay) await Bun.sleep(Number(delay[1]) * (delay[2] === "s" ? 1000 : 1));
      const set = new Headers();
      for (const pair of (req.headers.get("x-echo-set-header") ?? "").split(",")) {
        const at = pair.indexOf(":");
        if (at > 0) set.append(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
      }
      return Response.json({ backend: name, path: u.pathname + u.search, headers: Object.fromEntries(req.headers) }, { headers: set });
    },
  });
  return { name, port: server.port as number, log, stop: () => void server.stop(true) };
}

/**
 * The echo server's h2c port (3001 upstream): HTTP/2 with prior knowledge only (node:http2's
 * cleartext server speaks no HTTP/1.1), answering JSON as echo() does, with the protocol seen.
 */
function h2cEcho(name: string): Promise<Echo> {
  const log: string[] = [];
  const server = http2.createServer();
  server.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    stream.on("error", () => {});
    if (log.length < 5000) log.push(`${String(headers[":method"])} ${String(headers[":path"])} ${String(headers[":authority"])}`);
    const plain: Record<string, string> = {};
    for (const [k, v] of Object.entries(headers)) if (!k.startsWith(":") && v !== undefined) plain[k] = String(v);
    let body = "";
    stream.setEncoding("utf8");
    stream.on("data", (c: string) => (body += c.slice(0, 4096)));
    stream.on("end", () => {
      stream.respond({ ":status": 200, "content-type": "application/json" });
      stream.end(JSON.stringify({ backend: name, path: headers[":path"], protocol: "HTTP/2.0", headers: plain, body }));
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      resolve({ name, port, log, stop: () => void server.close() });
    }),
  );
}

/** How many ports freeRange() finds together. */
export const RANGE_SIZE = 8;

/**
 * A run of `size` ports free on loopback now (each probed with a bind), for --gateway-ports:
 * below the kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768 and up by default),
 * where the other suites' port-0 listeners and outgoing connections take theirs, so none of
 * them can take one between this probe and Portico's bind.
 */
export function freeRange(size = RANGE_SIZE): number {
  for (let attempt = 0; attempt < 50; attempt++) {
    const from = 20_000 + Math.floor(Math.random() * 12_000);
    const held: { stop(force?: boolean): void }[] = [];
    try {
      for (let p = from; p < from + size; p++) held.push(Bun.listen({ hostname: "127.0.0.1", port: p, socket: { data() {} } }));
      return from;
    } catch {
      // one is taken: try another run
    } finally {
      for (const h of held) h.stop(true);
    }
  }
  throw new Error("no free port range on loopback");
}

/** Where --gateway-ports Services go: --publish-service's namespace (k8s/service.yaml's Service, as a ClusterIP here). */
export const SERVICE_NS = "portico";

/** Set by conformanceBase: each Gateway is asked at its own port (--gateway-ports), not the shared one. */
export let ownPorts = false;

/**
 * The Portico port a Gateway's listener port is served on with --gateway-ports: the targetPort
 * of that port in the Gateway's Service (kube/gateway-services.ts), which is what kube-proxy
 * would send the Gateway's address:port to.
 */
export function gatewayPort(gateway = "same-namespace", port = 80): number {
  type Svc = { metadata: { annotations?: Record<string, string> }; spec: { ports?: { port: number; targetPort?: number | string }[] } };
  for (const s of api.list("Service") as unknown as Svc[]) {
    if (s.metadata.annotations?.["portico.dev/gateway"] !== `${INFRA}/${gateway}`) continue;
    const p = s.spec.ports?.find((x) => x.port === port);
    if (typeof p?.targetPort === "number") return p.targetPort;
  }
  throw new Error(`Gateway ${gateway} has no Service port ${port} yet`);
}

/** The plain HTTP port a request for that Gateway goes to: its own with --gateway-ports, else Portico's shared one. */
export const httpPort = (gateway?: string, port?: number): number => (ownPorts ? gatewayPort(gateway, port) : portico.ports.http);
/** The HTTPS port a request for that Gateway's listener port goes to: its own with --gateway-ports, else Portico's shared one. */
export const httpsPort = (gateway?: string, port = 443): number => (ownPorts ? gatewayPort(gateway, port) : portico.ports.https);

export let api: FakeApiServer;
export let portico: Portico;
let dir: string;
export const echoes = new Map<string, Echo>();

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> & { name: string; namespace?: string } };
/** What the current test created, removed again by cleanup() (newest first). */
export const created: { kind: string; ns: string | null; name: string }[] = [];

export function apply(yaml: string): void {
  for (const doc of yaml.split(/^---$/m)) {
    const o = load(doc) as Obj | null;
    if (!o) continue;
    api.create(o.kind as string, o);
    created.push({ kind: o.kind as string, ns: o.metadata.namespace ?? null, name: o.metadata.name });
  }
}

export function cleanup(): void {
  for (const c of created.splice(0).reverse()) api.delete(c.kind, c.ns, c.name);
}

/**
 * An echo backend as a Service with an EndpointSlice; `h2c`: also upstream's infra-backend-v1
 * ports, second-port (appProtocol kubernetes.io/h2c, to the h2c echo) and third-port
 * (appProtocol kubernetes.io/ws, to the same echo as first-port) (conformance/base/manifests.yaml).
 */
async function backendService(ns: string, name: string, h2c = false): Promise<void> {
  const e = echo(`${ns}/${name}`);
  echoes.set(`${ns}/${name}`, e);
  const h = h2c ? await h2cEcho(`${ns}/${name}`) : null;
  if (h !== null) echoes.set(`${ns}/${name}#h2c`, h);
  const ports: { name: string; port: number; appProtocol?: string }[] = [{ name: "first-port", port: 8080 }];
  const slicePorts = [{ name: "first-port", port: e.port }];
  if (h !== null) {
    ports.push({ name: "second-port", port: 8081, appProtocol: "kubernetes.io/h2c" }, { name: "third-port", port: 8082, appProtocol: "kubernetes.io/ws" });
    slicePorts.push({ name: "second-port", port: h.port }, { name: "third-port", port: e.port });
  }
  api.create("Service", { metadata: { name, namespace: ns }, spec: { ports } });
  api.create("EndpointSlice", {
    metadata: { name: `${name}-x`, namespace: ns, labels: { "kubernetes.io/service-name": name } },
    addressType: "IPv4",
    ports: slicePorts,
    endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true } }],
  });
}

/**
 * The upstream suite's base objects (its namespaces, GatewayClass, the `same-namespace` Gateway and
 * the echo backends) in a fake API server, and one Portico watching it, for the file that calls
 * this; `tag` names its temp folder and pod.
 */
export function conformanceBase(tag: string, opts: { readonly args?: () => string[]; readonly before?: () => void; readonly ownPorts?: boolean } = {}): void {
  if (opts.ownPorts === true) {
    // Each Gateway at its own address, as a conformance run against Portico is set up (README
    // "Gateway API"): --gateway-ports needs --publish-service, whose namespace, selector and
    // type the Gateways' Services copy.
    const before = opts.before;
    opts = {
      ...opts,
      args: () => {
        const from = freeRange();
        return ["--publish-service", `${SERVICE_NS}/portico`, "--gateway-ports", `${from}-${from + RANGE_SIZE - 1}`];
      },
      before: () => {
        api.create("Service", {
          metadata: { name: "portico", namespace: SERVICE_NS },
          spec: { type: "ClusterIP", clusterIP: "10.96.0.10", selector: { "app.kubernetes.io/name": "portico" }, ports: [{ name: "http", port: 80, targetPort: "http" }] },
        });
        before?.();
      },
    };
  }
  ownPorts = opts.ownPorts === true;
  beforeAll(async () => {
    api = await startFakeApiServer({ token: "gw-token", bookmarkIntervalMs: 500 });
    dir = mkdtempSync(join(tmpdir(), `portico-${tag}-`));
    writeFileSync(join(dir, "kubeconfig"), kubeconfig(api.url, "gw-token"));
    api.create("Namespace", { metadata: { name: INFRA, labels: { "gateway-conformance": "infra" } } });
    api.create("Namespace", { metadata: { name: APP, labels: { "gateway-conformance": "backend" } } });
    api.create("Namespace", { metadata: { name: WEB, labels: { "gateway-conformance": "backend" } } });
    api.create("GatewayClass", { metadata: { name: "portico" }, spec: { controllerName: "portico.dev/gateway-controller" } });
    api.create("Gateway", { metadata: { name: "same-namespace", namespace: INFRA }, spec: { gatewayClassName: "portico", listeners: [{ name: "http", port: 80, protocol: "HTTP", allowedRoutes: { namespaces: { from: "Same" } } }] } });
    for (const v of ["v1", "v2", "v3"]) await backendService(INFRA, `infra-backend-${v}`, v === "v1");
    await backendService(APP, "app-backend-v1");
    await backendService(WEB, "web-backend");
    opts.before?.();
    portico = await startPortico(["--kubeconfig", join(dir, "kubeconfig"), ...(opts.args?.() ?? ["--publish-status-address", "192.0.2.10"]), "--election-namespace", "default", "--access-log", "off"], {
      env: { POD_NAME: `portico-${tag}-0` },
    });
  });

  afterAll(async () => {
    await portico?.stop("SIGKILL");
    await api?.stop();
    for (const e of echoes.values()) e.stop();
    echoes.clear();
    created.length = 0;
    rmSync(dir, { recursive: true, force: true });
  });
}

export interface Answer {
  status: number;
  backend: string | null;
  path: string | null;
  headers: Record<string, string>;
  location: string | null;
  /** The answer's own fields (lowercased names; a repeated field joined as Headers joins it). */
  response: Record<string, string>;
  /** Its Set-Cookie lines, each on its own. */
  cookies: string[];
}

/**
 * One request through Portico; `gateway` (with --gateway-ports) names the Gateway whose own
 * port it goes to, `same-namespace` by default, and `port` that Gateway's listener port (80).
 */
export async function ask(path: string, init: { host?: string; headers?: Record<string, string>; method?: string; gateway?: string; port?: number } = {}): Promise<Answer> {
  const res = await fetch(`http://127.0.0.1:${httpPort(init.gateway, init.port)}${path}`, { method: init.method ?? "GET", headers: { host: init.host ?? "example.com", ...init.headers }, redirect: "manual" });
  const text = await res.text();
  let body: { backend?: string; path?: string; headers?: Record<string, string> } = {};
  try {
    body = JSON.parse(text);
  } catch {
    // Portico's own answer (404, 500, a redirect)
  }
  return { status: res.status, backend: body.backend ?? null, path: body.path ?? null, headers: body.headers ?? {}, location: res.headers.get("location"), response: Object.fromEntries(res.headers), cookies: res.headers.getSetCookie() };
}

/** Wait until `path` is served as expected (the change went live), then return the answer. */
export async function served(path: string, want: (a: Answer) => boolean, init: Parameters<typeof ask>[1] = {}): Promise<Answer> {
  let last: Answer | null = null;
  await eventually(async () => want((last = await ask(path, init))), 10_000);
  return last!;
}

export const route = (name: string, spec: string, ns = INFRA) => `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: ${name}, namespace: ${ns} }
spec:
${spec}`;
