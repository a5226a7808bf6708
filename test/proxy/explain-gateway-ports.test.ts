// Explain with --gateway-ports and gRPC calls (docs/design.md "Gateways with their own address",
// "Explain"): each Gateway has its own Portico port with its own table, and explain asked for
// that port (or that Gateway) answers what the real listener of that port answers; asked
// without one it says it used the shared ports' table and lists the Gateways' ports. A gRPC
// call (POST, content-type application/grpc, /service/method) that no rule matches ends
// Trailers-Only grpc-status 12, and one whose GRPCRoute rule names a Service that does not
// exist grpc-status 14: explain says so, and the proxy answers exactly that (the same
// headers). The listeners are the real ones (serving/gateway-ports.ts, startHttpListener for
// the shared port), the pod a raw-socket backend on loopback.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import net from "node:net";
import { Compiler } from "../../src/compile/compile.ts";
import type { CompileConfig } from "../../src/compile/config.ts";
import { explain, type ExplainRequest, type ExplainResult } from "../../src/compile/explain.ts";
import { silentLogger } from "../../src/log/logger.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import { type GatewayPortListeners } from "../../src/serving/gateway-ports.ts";
import type { Snapshot } from "../../src/store/types.ts";
import { lookup } from "../../src/table/lookup.ts";
import { serializeTable } from "../../src/table/serialize.ts";
import { formatRoutesText } from "../../src/table/text.ts";
import type { RouteTable } from "../../src/table/types.ts";
import { createAdminApp } from "../../src/admin/app.ts";
import { createReadiness } from "../../src/admin/readiness.ts";
import { parseArgs } from "../../src/config/parse.ts";
import { KINDS } from "../../src/model/kinds.ts";
import { createController } from "../../src/runtime/controller.ts";
import { explainLive } from "../../src/runtime/explain.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { BASE, GATEWAYS, INFRA, objects, podService, snapshot } from "../gateway/base.ts";
import { freeRange } from "../gateway/base-harness.ts";
import { eventually } from "../wait.ts";
import { createCertificate } from "../tls/pki.ts";
import { testConfig, testGatewayPorts } from "./helpers.ts";
import { namedBackend, type RawBackend } from "./raw.ts";

const RANGE_SIZE = 4;

/**
 * An HTTPRoute and a GRPCRoute on Gateway same-namespace only (all-namespaces has no route),
 * on hostnames of their own: the two kinds may not share one on a listener (GEP-1016).
 */
const ROUTES = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: shop, namespace: ${INFRA}, generation: 1 }
spec:
  parentRefs: [{ name: same-namespace }]
  hostnames: [example.com]
  rules: [{ matches: [{ path: { type: PathPrefix, value: /shop } }], backendRefs: [{ name: pod, port: 8080 }] }]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: { name: echo, namespace: ${INFRA}, generation: 1 }
spec:
  parentRefs: [{ name: same-namespace }]
  hostnames: [grpc.example]
  rules:
    - matches: [{ method: { service: echo.Broken } }]
      backendRefs: [{ name: no-such-service, port: 8080 }]
    - matches: [{ method: { service: echo.Half } }]
      backendRefs: [{ name: pod, port: 8080, weight: 1 }, { name: no-such-service, port: 8080, weight: 1 }]`;

let be: RawBackend;
let from = 0;
let snap: Snapshot;
let config: CompileConfig;
let table: RouteTable;
let ports: GatewayPortListeners;
let shared: ReturnType<typeof startHttpListener>;
/** Portico port of each Gateway (by name). */
const portOf = new Map<string, number>();

beforeAll(async () => {
  be = await namedBackend("pod");
  from = freeRange(RANGE_SIZE);
  config = { ...DEFAULT_COMPILE_CONFIG, gatewayPorts: { from, to: from + RANGE_SIZE - 1 }, publishService: { namespace: "portico", name: "portico" } } as CompileConfig;
  snap = snapshot(BASE, GATEWAYS["same-namespace"], GATEWAYS["all-namespaces"], podService(be.port), ROUTES);
  table = new Compiler(config).compile(snap).table;
  for (const [p, g] of table.gatewayPorts ?? []) portOf.set(g.gateway.split("/")[1]!, p);
  const proxyConfig = testConfig({ gatewayPorts: config.gatewayPorts });
  const cert = createCertificate({ subjectCN: "gw.example", sans: ["gw.example"] });
  const tls = { entries: [{ cert: cert.certPem, key: cert.keyPem, ciphers: proxyConfig.tlsCiphers, secureOptions: 0 }], fingerprint: "f" };
  ports = testGatewayPorts(proxyConfig, () => table, () => tls);
  ports.fit(table);
  shared = startHttpListener({ hostname: "127.0.0.1", port: 0, handler: createProxyHandler({ config: proxyConfig, table: () => table, lookup, log: silentLogger, scheme: "http" }) });
});
afterAll(async () => {
  await ports?.stop(true);
  await shared?.stop(true);
  await be?.stop();
});

interface Real {
  readonly status: number;
  /** The response's header fields that say what it is (lowercased names). */
  readonly headers: Record<string, string>;
}

const SHOWN = ["content-type", "grpc-status", "grpc-message", "location"];

/** One request over a raw socket; a gRPC call is a POST with content-type application/grpc and an empty body. */
async function send(port: number, host: string, method: string, path: string, contentType?: string): Promise<Real> {
  const raw = await new Promise<string>((resolve) => {
    const chunks: Buffer[] = [];
    const ct = contentType === undefined ? "" : `Content-Type: ${contentType}\r\nContent-Length: 0\r\n`;
    const sock = net.connect(port, "127.0.0.1", () => sock.write(`${method} ${path} HTTP/1.1\r\nHost: ${host}\r\n${ct}Connection: close\r\n\r\n`));
    sock.on("data", (d: Buffer) => chunks.push(d));
    sock.on("close", () => resolve(Buffer.concat(chunks).toString("latin1")));
    sock.on("error", () => {});
  });
  const head = raw.slice(0, raw.indexOf("\r\n\r\n"));
  const headers: Record<string, string> = {};
  for (const line of head.split("\r\n").slice(1)) {
    const i = line.indexOf(":");
    const name = line.slice(0, i).toLowerCase();
    if (SHOWN.includes(name)) headers[name] = line.slice(i + 1).trim();
  }
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), headers };
}

/** What a real answer must look like, from explain's result. */
function expected(r: ExplainResult): { status: number; headers: Record<string, string> } | "proxied" {
  if (r.response.kind === "proxied") return "proxied";
  if (r.grpc !== undefined && r.grpc.status !== null) {
    return { status: r.response.status as number, headers: { "content-type": "application/grpc", "grpc-status": String(r.grpc.status), "grpc-message": r.grpc.message as string } };
  }
  // Portico's own plain-HTTP answer: no gRPC status (its page's content type is not explain's to say).
  return { status: r.response.status as number, headers: {} };
}

async function agree(q: Omit<ExplainRequest, "host" | "scheme"> & { host?: string }, realPort: number): Promise<ExplainResult> {
  const host = q.host ?? "example.com";
  const r = explain(snap, config, { scheme: "http", ...q, host });
  const want = expected(r);
  const before = be.hits.length;
  const real = await send(realPort, host, q.method ?? "GET", q.path, q.contentType);
  const what = `${q.method ?? "GET"} ${q.path} on port ${realPort} (explain: ${JSON.stringify(r.response)})`;
  if (want === "proxied") {
    expect(real.status, what).toBe(200);
    expect(be.hits.length, what).toBe(before + 1);
  } else {
    const { "content-type": type, ...rest } = real.headers;
    const got = { status: real.status, headers: want.headers["content-type"] === undefined ? rest : { ...rest, ...(type === undefined ? {} : { "content-type": type }) } };
    expect(got, what).toEqual(want);
    expect(be.hits.length, what).toBe(before);
  }
  return r;
}

describe("explain with --gateway-ports answers what the Gateway's own port answers", () => {
  test("each Gateway got a port of its own", () => {
    expect([...portOf.keys()].sort()).toEqual(["all-namespaces", "same-namespace"]);
    expect(ports.ports.size).toBe(2);
  });

  test("port=N: that Gateway's rules alone", async () => {
    const own = portOf.get("same-namespace")!;
    const r = await agree({ path: "/shop/cart", port: own }, own);
    expect(r.table).toMatchObject({ port: own, gateway: `${INFRA}/same-namespace`, listenerPort: 80 });
    expect(r.response).toMatchObject({ kind: "proxied", backends: [`${INFRA}/pod:8080`] });
    expect(r.gateway).toMatchObject({ kind: "HTTPRoute", route: `${INFRA}/shop`, listeners: [{ gateway: `${INFRA}/same-namespace`, listener: "http", port: 80 }] });
    // The other Gateway's port: none of its rules matches, and no Ingress is served there.
    const other = portOf.get("all-namespaces")!;
    const o = await agree({ path: "/shop/cart", port: other }, other);
    expect(o.response).toMatchObject({ kind: "refused", status: 404, by: "no-route" });
    expect(o.gateway).toBeUndefined();
  });

  test("gateway=ns/name (and its listener port) asks the same port", async () => {
    const own = portOf.get("same-namespace")!;
    const r = await agree({ path: "/shop", gateway: `${INFRA}/same-namespace`, listenerPort: 80 }, own);
    expect(r.table.port).toBe(own);
    expect(r.response.kind).toBe("proxied");
    expect(() => explain(snap, config, { host: "example.com", path: "/", scheme: "http", gateway: `${INFRA}/nobody` })).toThrow(RangeError);
    expect(() => explain(snap, config, { host: "example.com", path: "/", scheme: "http", gateway: `${INFRA}/same-namespace`, listenerPort: 8080 })).toThrow(RangeError);
  });

  test("without a port: the shared ports' table, which says so and lists the Gateways' ports", async () => {
    const r = await agree({ path: "/shop/cart" }, shared.port as number);
    expect(r.response).toMatchObject({ kind: "refused", status: 404 });
    expect(r.table).toMatchObject({ port: "shared", gateway: null });
    expect(r.table.note).toContain("--gateway-ports");
    expect(r.table.gatewayPorts).toEqual(
      [...portOf.entries()].sort(([, a], [, b]) => a - b).map(([name, port]) => ({ port, gateway: `${INFRA}/${name}`, listenerPort: 80, scheme: "http" })),
    );
  });
});

describe("explain for a gRPC call says what Portico answers it", () => {
  const GRPC = "application/grpc";

  test("no rule matches: Trailers-Only grpc-status 12 (UNIMPLEMENTED), on a Gateway's port and on the shared port", async () => {
    const own = portOf.get("same-namespace")!;
    const r = await agree({ host: "grpc.example", path: "/other.Svc/Call", method: "POST", contentType: GRPC, port: own }, own);
    expect(r.grpc).toMatchObject({ status: 12, message: "no route" });
    expect(r.response).toMatchObject({ kind: "refused", status: 200, by: "no-route" });
    const s = await agree({ host: "grpc.example", path: "/other.Svc/Call", method: "POST", contentType: GRPC }, shared.port as number);
    expect(s.grpc).toMatchObject({ status: 12, message: "no route" });
  });

  test("a GRPCRoute rule whose backendRef names no Service: grpc-status 14 (UNAVAILABLE); explain names the GRPCRoute and its diagnostic", async () => {
    const own = portOf.get("same-namespace")!;
    const r = await agree({ host: "grpc.example", path: "/echo.Broken/Call", method: "POST", contentType: `${GRPC}+proto`, port: own }, own);
    expect(r.grpc).toMatchObject({ status: 14, message: "no endpoints" });
    expect(r.gateway).toMatchObject({ kind: "GRPCRoute", route: `${INFRA}/echo`, match: { pathType: "PathPrefix", path: "/echo.Broken" } });
    expect(r.gateway?.assumed).toContain("POST");
    expect(r.diagnostics).toContainEqual(expect.objectContaining({ kind: "GRPCRoute", namespace: INFRA, name: "echo", reason: "RouteRefsNotResolved" }));
    // The same path without gRPC's content type is no gRPC call: the plain 500 of the rule.
    const plain = await agree({ host: "grpc.example", path: "/echo.Broken/Call", method: "POST", port: own }, own);
    expect(plain.grpc).toBeUndefined();
    expect(plain.response).toMatchObject({ kind: "refused", status: 500, by: "gateway-error" });
  });

  test("a weighted rule with one unusable backendRef: the weights decide between the pod and Trailers-Only grpc-status 14", () => {
    const own = portOf.get("same-namespace")!;
    const r = explain(snap, config, { host: "grpc.example", path: "/echo.Half/Call", scheme: "http", method: "POST", contentType: "application/grpc", port: own });
    expect(r.response.kind).toBe("depends");
    expect(r.response.cause).toContain("grpc-status 14");
    expect(r.gateway?.choices).toEqual([
      // A GRPCRoute's backend speaks gRPC (its own id: compile/backends.ts).
      { backend: `${INFRA}/pod:8080#grpc`, weight: 1, answers: "proxied" },
      { backend: "gateway-api/none", weight: 1, answers: "200" },
    ]);
    expect(r.grpc?.status).toBeNull();
  });

  test("/debug/routes names the GRPCRoute's rule as a GRPCRoute", () => {
    const port = serializeTable(table).gatewayPorts?.find((p) => p.gateway === `${INFRA}/same-namespace`);
    const routes = port?.listeners.flatMap((l) => l.hosts.flatMap((h) => h.entries.flatMap((e) => e.weights.map((w) => w.route)))) ?? [];
    expect(routes.find((r) => r.ingress === `${INFRA}/echo`)).toMatchObject({ kind: "GRPCRoute" });
    expect(routes.find((r) => r.ingress === `${INFRA}/shop`)?.kind).toBeUndefined();
  });

  test("portico routes and /debug/routes?format=text list each Gateway port's rules, the GRPCRoute's as a GRPCRoute", () => {
    const own = portOf.get("same-namespace")!;
    const lines = formatRoutesText(serializeTable(table)).split("\n").map((l) => l.replace(/ +/g, " ").trim());
    expect(lines).toContain("Gateway API rules (asked before the Ingress rules on the same port):");
    expect(lines).toContain("PORT LISTENER HOST MATCH BACKEND WEIGHT ENDPOINTS ROUTE ANSWERS");
    expect(lines).toContain(`${own} (${INFRA}/same-namespace:80) * example.com PathPrefix /shop ${INFRA}/pod:8080 1 1 of 1 HTTPRoute ${INFRA}/shop proxied`);
    expect(lines).toContain(`${own} (${INFRA}/same-namespace:80) * grpc.example PathPrefix /echo.Broken - 1 - GRPCRoute ${INFRA}/echo 500 (invalid backendRef); a gRPC call: grpc-status 14`);
  });
});

describe("/debug/explain through the controller: port, gateway, method and contentType", () => {
  test("the query's port or Gateway picks the table; an unknown Gateway or a bad port is a 400", async () => {
    const o = parseArgs(["--manifests", "/dev/null", "--gateway-ports", `${from}-${from + RANGE_SIZE - 1}`], {});
    if (o.type !== "run") throw new Error(`flags: ${JSON.stringify(o)}`);
    const controller = createController({ config: o.config, log: silentLogger });
    try {
      for (const { kind, object } of objects(BASE, GATEWAYS["same-namespace"], GATEWAYS["all-namespaces"], podService(be.port), ROUTES)) controller.sink.apply({ type: "ADDED", kind, object } as never);
      for (const kind of KINDS) controller.sink.synced(kind);
      await eventually(() => (controller.last?.result.table.gatewayPorts?.size ?? 0) === 2, 10_000, "the first table");
      const app = createAdminApp({ ready: createReadiness([]).check, metrics: () => "", routes: () => null, explain: (q) => explainLive(controller, o.config, q) });
      const ask = async (query: string) => {
        const res = await app.request(`/debug/explain?${query}`);
        return { status: res.status, body: (await res.json()) as ExplainResult & { error?: string; fields?: string[] } };
      };
      const own = [...controller.last!.result.table.gatewayPorts!].find(([, g]) => g.gateway === `${INFRA}/same-namespace`)![0];
      const byPort = await ask(`host=example.com&path=/shop/x&port=${own}`);
      expect(byPort.status).toBe(200);
      expect(byPort.body.table).toMatchObject({ port: own, gateway: `${INFRA}/same-namespace`, listenerPort: 80 });
      expect(byPort.body.response).toMatchObject({ kind: "proxied" });
      const byGateway = await ask(`host=example.com&path=/shop/x&gateway=${INFRA}/same-namespace&listenerPort=80`);
      expect(byGateway.body.table.port).toBe(own);
      const sharedAnswer = await ask("host=example.com&path=/shop/x");
      expect(sharedAnswer.body.table.port).toBe("shared");
      expect(sharedAnswer.body.response).toMatchObject({ status: 404 });
      const call = await ask(`host=grpc.example&path=/other.Svc/Call&method=POST&contentType=application/grpc&port=${own}`);
      expect(call.body.grpc).toMatchObject({ status: 12, message: "no route" });
      const unknown = await ask(`host=example.com&gateway=${INFRA}/nobody`);
      expect(unknown.status).toBe(400);
      expect(unknown.body.error).toContain("has no port of its own");
      const bad = await ask("host=example.com&port=99999&method=G%20ET");
      expect(bad.status).toBe(400);
      expect(bad.body.fields).toEqual(["method", "port"]);
    } finally {
      controller.dispose();
    }
  });
});

test("portico explain takes --method, --content-type, --port, --gateway and --listener-port", () => {
  const o = parseArgs(["explain", "--manifests", "/dev/null", "--host", "grpc.example", "--path", "/a.B/C", "--method", "POST", "--content-type", "application/grpc", "--gateway", `${INFRA}/same-namespace`, "--listener-port", "80"], {});
  expect(o).toMatchObject({ type: "explain", host: "grpc.example", path: "/a.B/C", method: "POST", contentType: "application/grpc", gateway: `${INFRA}/same-namespace`, listenerPort: 80 });
  expect(parseArgs(["explain", "--manifests", "/dev/null", "--host", "a", "--port", "20001"], {})).toMatchObject({ type: "explain", port: 20001 });
  expect(parseArgs(["explain", "--manifests", "/dev/null", "--host", "a", "--listener-port", "80"], {})).toMatchObject({ type: "error" });
  expect(parseArgs(["explain", "--manifests", "/dev/null", "--host", "a", "--port", "70000"], {})).toMatchObject({ type: "error" });
  expect(parseArgs(["explain", "--manifests", "/dev/null", "--host", "a", "--gateway", "no-slash"], {})).toMatchObject({ type: "error" });
});
