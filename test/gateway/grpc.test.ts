// GATEWAY-GRPC core conformance tests (kubernetes-sigs/gateway-api v1.6.1, conformance/tests
// grpcroute-*.go whose features are Gateway and GRPCRoute only), transcribed like serve.test.ts:
// their objects created in the fake API server, calls through a real Portico process with a
// real gRPC client (@grpc/grpc-js), expectations as upstream. The upstream client speaks
// cleartext HTTP/2 with prior knowledge to the Gateway's HTTP listener (port 80), so these calls
// go to Portico's plain port as h2c; a further test makes the four call kinds over the HTTPS
// listener (h2) and h2c with their trailers. Backends are gRPC servers of the conformance echo
// service (grpcecho.proto) that say which backend answered and what metadata they received.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as grpc from "@grpc/grpc-js";
import * as loader from "@grpc/proto-loader";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPortico } from "../e2e/harness.ts";
import { tlsSecret } from "../e2e/objects.ts";
import { createCertificate } from "../tls/pki.ts";
import { eventually } from "../wait.ts";
import { bidiExchange, clientStream, collect, echoClient, echoPackage, startEchoServer, unary, type EchoServer } from "../grpc/server.ts";
import { APP, api, apply, cleanup, conformanceBase, INFRA, portico } from "./base-harness.ts";
import { BASE, GATEWAYS, objects, World } from "./base.ts";
import { compile, Compiler } from "../../src/compile/compile.ts";
import type { CompileResult } from "../../src/compile/types.ts";
import { Store } from "../../src/store/store.ts";
import { serializeTable } from "../../src/table/serialize.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";

// biome-ignore lint: grpc-js builds the client and service types at run time.
type Any = any;

conformanceBase("grpcroute");

const def = loader.loadSync(join(import.meta.dir, "grpcecho.proto"), { keepCase: false, defaults: true });
const pkg = (grpc.loadPackageDefinition(def) as Any).gateway_api_conformance.echo_basic.grpcecho;
const GROUP = "gateway.networking.k8s.io";
const CONTROLLER = "portico.dev/gateway-controller";

interface Backend {
  stop(): Promise<void>;
}
const backends: Backend[] = [];
const clients: Any[] = [];

/** A GrpcEcho server answering every method with its own name, as a Service with an EndpointSlice. */
async function grpcBackend(ns: string, name: string, servicePort = 8080): Promise<void> {
  const server = new grpc.Server();
  const answer = (method: string) => (call: Any, cb: Any) => {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(call.metadata.getMap() as Record<string, unknown>)) headers[k] = String(v);
    cb(null, { backend: `${ns}/${name}`, method, headers });
  };
  server.addService(pkg.GrpcEcho.service, { Echo: answer("Echo"), EchoTwo: answer("EchoTwo"), EchoThree: answer("EchoThree") });
  const port = await new Promise<number>((resolve, reject) => server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  backends.push({ stop: () => new Promise<void>((r) => server.tryShutdown(() => r())).then(() => server.forceShutdown()) });
  // conformance/base/manifests.yaml: port 8080, appProtocol kubernetes.io/h2c.
  api.create("Service", { metadata: { name, namespace: ns }, spec: { ports: [{ name: "grpc", port: servicePort, appProtocol: "kubernetes.io/h2c" }] } });
  api.create("EndpointSlice", {
    metadata: { name: `${name}-x`, namespace: ns, labels: { "kubernetes.io/service-name": name } },
    addressType: "IPv4",
    ports: [{ name: "grpc", port }],
    endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true } }],
  });
}

let echo: EchoServer;

beforeAll(async () => {
  for (const v of ["v1", "v2", "v3"]) await grpcBackend(INFRA, `grpc-infra-backend-${v}`);
  // The four call kinds with trailers (test/grpc/server.ts), for the h2 and h2c test.
  echo = await startEchoServer(undefined, "echo");
  api.create("Service", { metadata: { name: "grpc-echo", namespace: INFRA }, spec: { ports: [{ name: "grpc", port: 9000 }] } });
  api.create("EndpointSlice", {
    metadata: { name: "grpc-echo-x", namespace: INFRA, labels: { "kubernetes.io/service-name": "grpc-echo" } },
    addressType: "IPv4",
    ports: [{ name: "grpc", port: echo.port }],
    endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true } }],
  });
});

afterAll(async () => {
  for (const c of clients) c.close();
  for (const b of backends) await b.stop();
  await echo?.stop();
});

/** A GrpcEcho client over h2c (prior knowledge) to Portico's plain port, as the conformance client dials the HTTP listener. */
function h2cClient(authority: string): Any {
  const c = new pkg.GrpcEcho(`127.0.0.1:${portico.ports.http}`, grpc.credentials.createInsecure(), { "grpc.default_authority": authority });
  clients.push(c);
  return c;
}

interface Outcome {
  code: number;
  backend: string | null;
}

function call(client: Any, method: "Echo" | "EchoTwo" | "EchoThree", metadata: Record<string, string> = {}): Promise<Outcome> {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(metadata)) md.set(k, v);
  return new Promise((resolve) => {
    client[method]({ text: "x" }, md, { deadline: Date.now() + 10_000 }, (err: grpc.ServiceError | null, res: { backend: string } | null) =>
      resolve(err ? { code: err.code, backend: null } : { code: grpc.status.OK, backend: res?.backend ?? null }),
    );
  });
}

/** The metadata the backend received for a call (its answer's `headers`). */
function received(client: Any, method: "Echo" | "EchoTwo", metadata: Record<string, string>): Promise<Record<string, string> | string> {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(metadata)) md.set(k, v);
  return new Promise((resolve) => {
    client[method]({ text: "x" }, md, { deadline: Date.now() + 10_000 }, (err: grpc.ServiceError | null, res: { headers: Record<string, string> } | null) => resolve(err ? `code ${err.code}` : (res?.headers ?? {})));
  });
}

const show = (o: Outcome) => (o.code === grpc.status.OK ? `OK ${o.backend}` : `code ${o.code}`);

/** GatewayAndRoutesMustBeAccepted: each parentRef of ours Accepted=True (and ResolvedRefs=True) on the GRPCRoute. */
async function routeAccepted(name: string, parents = 1): Promise<void> {
  await eventually(
    () => {
      const r = api.get("GRPCRoute", INFRA, name);
      const ps = ((r?.status as { parents?: { controllerName: string; conditions: { type: string; status: string; observedGeneration: number }[] }[] } | undefined)?.parents ?? []).filter((p) => p.controllerName === CONTROLLER);
      return ps.length === parents && ps.every((p) => p.conditions.some((c) => c.type === "Accepted" && c.status === "True" && c.observedGeneration === r!.metadata.generation));
    },
    15_000,
    `GRPCRoute ${name} accepted`,
  );
}

/** MakeRequestAndExpectEventuallyConsistentResponse, for the first case: wait until the route is served. */
async function servedAs(client: Any, method: "Echo" | "EchoTwo" | "EchoThree", metadata: Record<string, string>, want: string): Promise<void> {
  let last = "";
  await eventually(async () => (last = show(await call(client, method, metadata))) === want, 15_000, `gRPC ${method} answered ${want} (last: ${last})`);
}

const grpcRoute = (name: string, spec: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: { name: ${name}, namespace: ${INFRA} }
spec:
${spec}`;

const OK = (v: string) => `OK ${INFRA}/grpc-infra-backend-${v}`;
const UNIMPLEMENTED = `code ${grpc.status.UNIMPLEMENTED}`;

describe("GATEWAY-GRPC core through a real Portico", () => {
  test("GRPCExactMethodMatching", async () => {
    apply(grpcRoute("exact-matching", `  parentRefs:
  - name: same-namespace
  rules:
  - matches:
    - method:
        service: gateway_api_conformance.echo_basic.grpcecho.GrpcEcho
        method: Echo
    backendRefs:
    - name: grpc-infra-backend-v1
      port: 8080
  - matches:
    - method:
        service: gateway_api_conformance.echo_basic.grpcecho.GrpcEcho
        method: EchoTwo
    backendRefs:
    - name: grpc-infra-backend-v2
      port: 8080`));
    await routeAccepted("exact-matching");
    const client = h2cClient("example.com");
    await servedAs(client, "EchoTwo", {}, OK("v2"));
    const got = [show(await call(client, "Echo")), show(await call(client, "EchoTwo")), show(await call(client, "EchoThree"))];
    expect(got).toEqual([OK("v1"), OK("v2"), UNIMPLEMENTED]);
    cleanup();
  });

  test("GRPCRouteHeaderMatching", async () => {
    apply(grpcRoute("grpc-header-matching", `  parentRefs:
  - name: same-namespace
  rules:
  - matches:
    - headers:
      - name: version
        value: one
    backendRefs:
    - name: grpc-infra-backend-v1
      port: 8080
  - matches:
    - headers:
      - name: version
        value: two
    backendRefs:
    - name: grpc-infra-backend-v2
      port: 8080
  - matches:
    - headers:
      - name: version
        value: two
      - name: color
        value: orange
    backendRefs:
    - name: grpc-infra-backend-v1
      port: 8080
  - matches:
    - headers:
      - name: color
        value: blue
    - headers:
      - name: color
        value: green
    backendRefs:
    - name: grpc-infra-backend-v1
      port: 8080
  - matches:
    - headers:
      - name: color
        value: red
    - headers:
      - name: color
        value: yellow
    backendRefs:
    - name: grpc-infra-backend-v2
      port: 8080`));
    await routeAccepted("grpc-header-matching");
    const client = h2cClient("example.com");
    await servedAs(client, "Echo", { Version: "two" }, OK("v2"));
    const cases: [Record<string, string>, string][] = [
      [{ Version: "one" }, OK("v1")],
      [{ Version: "two" }, OK("v2")],
      [{ Version: "two", Color: "orange" }, OK("v1")],
      [{ Version: "two", Color: "blue" }, OK("v2")],
      [{ Color: "orange" }, UNIMPLEMENTED],
      [{ "Some-Other-Header": "one" }, UNIMPLEMENTED],
      [{ Color: "blue" }, OK("v1")],
      [{ Color: "green" }, OK("v1")],
      [{ Color: "red" }, OK("v2")],
      [{ Color: "yellow" }, OK("v2")],
      [{ Color: "purple" }, UNIMPLEMENTED],
    ];
    const got: string[] = [];
    for (const [md] of cases) got.push(`${JSON.stringify(md)} ${show(await call(client, "Echo", md))}`);
    expect(got).toEqual(cases.map(([md, want]) => `${JSON.stringify(md)} ${want}`));
    cleanup();
  });

  test("GRPCRouteListenerHostnameMatching", async () => {
    apply(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: grpcroute-listener-hostname-matching
  namespace: ${INFRA}
spec:
  gatewayClassName: portico
  listeners:
  - name: listener-1
    port: 80
    protocol: HTTP
    allowedRoutes:
      namespaces:
        from: Same
    hostname: bar.com
  - name: listener-2
    port: 80
    protocol: HTTP
    allowedRoutes:
      namespaces:
        from: Same
    hostname: foo.bar.com
  - name: listener-3
    port: 80
    protocol: HTTP
    allowedRoutes:
      namespaces:
        from: Same
    hostname: "*.bar.com"
  - name: listener-4
    port: 80
    protocol: HTTP
    allowedRoutes:
      namespaces:
        from: Same
    hostname: "*.foo.com"
---
${grpcRoute("backend-v1", `  parentRefs:
  - name: grpcroute-listener-hostname-matching
    namespace: ${INFRA}
    sectionName: listener-1
  rules:
  - backendRefs:
    - name: grpc-infra-backend-v1
      port: 8080`)}
---
${grpcRoute("backend-v2", `  parentRefs:
  - name: grpcroute-listener-hostname-matching
    namespace: ${INFRA}
    sectionName: listener-2
  rules:
  - backendRefs:
    - name: grpc-infra-backend-v2
      port: 8080`)}
---
${grpcRoute("backend-v3", `  parentRefs:
  - name: grpcroute-listener-hostname-matching
    namespace: ${INFRA}
    sectionName: listener-3
  - name: grpcroute-listener-hostname-matching
    namespace: ${INFRA}
    sectionName: listener-4
  rules:
  - backendRefs:
    - name: grpc-infra-backend-v3
      port: 8080`)}`);
    await routeAccepted("backend-v1");
    await routeAccepted("backend-v2");
    await routeAccepted("backend-v3", 2);
    await servedAs(h2cClient("multiple.prefixes.foo.com"), "Echo", {}, OK("v3"));
    const cases: [string, string][] = [
      ["bar.com", OK("v1")],
      ["foo.bar.com", OK("v2")],
      ["baz.bar.com", OK("v3")],
      ["boo.bar.com", OK("v3")],
      ["multiple.prefixes.bar.com", OK("v3")],
      ["multiple.prefixes.foo.com", OK("v3")],
      ["foo.com", UNIMPLEMENTED],
      ["no.matching.host", UNIMPLEMENTED],
    ];
    const got: string[] = [];
    for (const [authority] of cases) got.push(`${authority} ${show(await call(h2cClient(authority), "Echo"))}`);
    expect(got).toEqual(cases.map(([authority, want]) => `${authority} ${want}`));
    // Each listener counts the GRPCRoutes attached through it (ListenerStatus.attachedRoutes).
    await eventually(() => {
      const ls = (api.get("Gateway", INFRA, "grpcroute-listener-hostname-matching")?.status as { listeners?: { name: string; attachedRoutes: number }[] } | undefined)?.listeners ?? [];
      return ls.map((l) => `${l.name}=${l.attachedRoutes}`).join(" ") === "listener-1=1 listener-2=1 listener-3=1 listener-4=1";
    }, 10_000);
    cleanup();
  });

  test("GRPCRouteWeight", async () => {
    apply(grpcRoute("weighted-backends", `  parentRefs:
  - name: same-namespace
  rules:
  - backendRefs:
    - name: grpc-infra-backend-v1
      port: 8080
      weight: 70
    - name: grpc-infra-backend-v2
      port: 8080
      weight: 30
    - name: grpc-infra-backend-v3
      port: 8080
      weight: 0`));
    await routeAccepted("weighted-backends");
    const client = h2cClient("example.com");
    await servedAs(client, "Echo", {}, OK("v2"));
    // conformance/utils/weight: 500 calls, each backend's share within 0.05 of its weight, up to
    // 10 tries (binomial sd at n=500, p=0.7 is 0.02, so one try misses about 1 time in 60).
    const failures: string[] = [];
    for (let attempt = 0; attempt < 10; attempt++) {
      const counts = new Map<string, number>();
      const n = 500;
      for (let i = 0; i < n; i += 10) {
        const batch = await Promise.all(Array.from({ length: 10 }, () => call(client, "Echo")));
        for (const o of batch) counts.set(show(o), (counts.get(show(o)) ?? 0) + 1);
      }
      const share = (v: string) => (counts.get(OK(v)) ?? 0) / n;
      if (share("v3") !== 0 || share("v1") + share("v2") !== 1) {
        failures.push(JSON.stringify([...counts]));
        break; // never within tolerance: a call failed or went to the weight-0 backend
      }
      if (Math.abs(share("v1") - 0.7) <= 0.05 && Math.abs(share("v2") - 0.3) <= 0.05) {
        failures.length = 0;
        break;
      }
      failures.push(JSON.stringify([...counts]));
    }
    expect(failures).toEqual([]);
    cleanup();
  });
});

// GRPCRouteNamedRouteRule (Extended; listed in GatewayClass supportedFeatures).
describe("GATEWAY-GRPC Extended through a real Portico", () => {
  test("GRPCRouteNamedRule", async () => {
    // conformance/tests/grpcroute-named-rule.yaml: a rule's `name` names it and changes nothing it serves.
    apply(grpcRoute("grpc-named-rules", `  parentRefs:
  - name: same-namespace
  rules:
  - name: named-rule
    matches:
    - method:
        service: gateway_api_conformance.echo_basic.grpcecho.GrpcEcho
        method: Echo
    backendRefs:
    - name: grpc-infra-backend-v1
      port: 8080
  - matches:
    - method:
        service: gateway_api_conformance.echo_basic.grpcecho.GrpcEcho
        method: EchoTwo
    backendRefs:
    - name: grpc-infra-backend-v2
      port: 8080`));
    await routeAccepted("grpc-named-rules");
    const client = h2cClient("example.com");
    await servedAs(client, "Echo", {}, OK("v1"));
    expect([show(await call(client, "Echo")), show(await call(client, "EchoTwo"))]).toEqual([OK("v1"), OK("v2")]);
    const features = ((api.get("GatewayClass", null, "portico")!.status as { supportedFeatures: { name: string }[] }).supportedFeatures).map((f) => f.name);
    expect(features).toContain("GRPCRouteNamedRouteRule");
    cleanup();
  });
});

describe("GATEWAY-GRPC Extended (newer than v1.6.1) through a real Portico", () => {
  test("GRPCRouteRequestHeaderModifier", async () => {
    // conformance/tests/grpcroute-request-header-modifier.go/.yaml (feature
    // GRPCRouteRequestHeaderModifier, standard channel): seven calls with the authority the test
    // sets (a name with underscores), each expected OK from grpc-infra-backend-v1 (Echo) or -v2
    // (EchoTwo). Upstream compares code, method, namespace and backend only
    // (conformance/utils/grpc compareResponse); its Headers lists are not compared, and for Echo
    // they could not all hold: three rules share the one match, and the first in rule order wins
    // (GRPCRouteRule precedence), so an Echo call gets the `set` rule. What the backend received
    // is checked here as that precedence and HTTPHeaderFilter make it.
    apply(grpcRoute("grpc-request-header-modifier", `  parentRefs:
  - name: same-namespace
  rules:
  - matches: [{ method: { service: gateway_api_conformance.echo_basic.grpcecho.GrpcEcho, method: Echo } }]
    filters: [{ type: RequestHeaderModifier, requestHeaderModifier: { set: [{ name: X-Header-Set, value: set-overwrites-values }] } }]
    backendRefs: [{ name: grpc-infra-backend-v1, port: 8080 }]
  - matches: [{ method: { service: gateway_api_conformance.echo_basic.grpcecho.GrpcEcho, method: Echo } }]
    filters: [{ type: RequestHeaderModifier, requestHeaderModifier: { add: [{ name: X-Header-Add, value: add-appends-values }] } }]
    backendRefs: [{ name: grpc-infra-backend-v1, port: 8080 }]
  - matches: [{ method: { service: gateway_api_conformance.echo_basic.grpcecho.GrpcEcho, method: Echo } }]
    filters: [{ type: RequestHeaderModifier, requestHeaderModifier: { remove: [X-Header-Remove] } }]
    backendRefs: [{ name: grpc-infra-backend-v1, port: 8080 }]
  - matches: [{ method: { service: gateway_api_conformance.echo_basic.grpcecho.GrpcEcho, method: EchoTwo } }]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set: [{ name: X-Header-Set-1, value: header-set-1 }, { name: X-Header-Set-2, value: header-set-2 }]
        add: [{ name: X-Header-Add-1, value: header-add-1 }, { name: X-Header-Add-2, value: header-add-2 }]
        remove: [X-Header-Remove-1, X-Header-Remove-2]
    backendRefs: [{ name: grpc-infra-backend-v2, port: 8080 }]`));
    await routeAccepted("grpc-request-header-modifier");
    const client = h2cClient("gateway_api_conformance.echo_basic.grpcecho.GrpcEcho");
    await servedAs(client, "Echo", { "some-other-header": "this-header-should-be-set" }, OK("v1"));
    const cases: ["Echo" | "EchoTwo", Record<string, string>, string][] = [
      ["Echo", { "Some-Other-Header": "this-header-should-be-set" }, "v1"],
      ["Echo", { "Some-Other-Header": "this-header-should-be-set", "X-Header-Set": "this-value-should-be-overwritten" }, "v1"],
      ["Echo", { "Some-Other-Header": "this-header-should-be-set" }, "v1"],
      ["Echo", { "Some-Other-Header": "this-header-should-be-set", "X-Header-Add": "this-value-should-be-appended" }, "v1"],
      ["Echo", { "X-Header-Remove": "this-should-be-removed" }, "v1"],
      ["EchoTwo", { "X-Header-Set-2": "set-header-2", "X-Header-Add-2": "add-header-2", "X-Header-Remove-2": "should-be-removed-2", "Some-Other-Header": "another-header-val" }, "v2"],
      ["EchoTwo", { "x-header-set-1": "original-set-1", "x-header-add-1": "existing-add-1", "x-header-remove-1": "should-be-removed-1" }, "v2"],
    ];
    const got: string[] = [];
    for (const [method, md] of cases) got.push(`${method} ${show(await call(client, method, Object.fromEntries(Object.entries(md).map(([k, v]) => [k.toLowerCase(), v]))))}`);
    expect(got).toEqual(cases.map(([method, , v]) => `${method} ${OK(v)}`));
    // What the backend received: the Echo rule that wins sets X-Header-Set over the client's.
    const one = await received(client, "Echo", { "some-other-header": "this-header-should-be-set", "x-header-set": "this-value-should-be-overwritten" });
    expect(typeof one === "string" ? one : [one["some-other-header"], one["x-header-set"]]).toEqual(["this-header-should-be-set", "set-overwrites-values"]);
    const pick = (h: Record<string, string> | string, names: string[]) => (typeof h === "string" ? h : names.map((n) => `${n}=${h[n] ?? "(none)"}`));
    const names = ["x-header-set-1", "x-header-set-2", "x-header-add-1", "x-header-add-2", "x-header-remove-1", "x-header-remove-2", "some-other-header"];
    expect(pick(await received(client, "EchoTwo", { "x-header-set-2": "set-header-2", "x-header-add-2": "add-header-2", "x-header-remove-2": "should-be-removed-2", "some-other-header": "another-header-val" }), names)).toEqual([
      "x-header-set-1=header-set-1", "x-header-set-2=header-set-2", "x-header-add-1=header-add-1", "x-header-add-2=add-header-2,header-add-2",
      "x-header-remove-1=(none)", "x-header-remove-2=(none)", "some-other-header=another-header-val",
    ]);
    // Header names compare case-insensitively (the filter's canonical names, the call's lowercase ones).
    expect(pick(await received(client, "EchoTwo", { "x-header-set-1": "original-set-1", "x-header-add-1": "existing-add-1", "x-header-remove-1": "should-be-removed-1" }), names.slice(0, 5))).toEqual([
      "x-header-set-1=header-set-1", "x-header-set-2=header-set-2", "x-header-add-1=existing-add-1,header-add-1", "x-header-add-2=header-add-2", "x-header-remove-1=(none)",
    ]);
    // Listed, so a conformance run selects this test.
    const features = ((api.get("GatewayClass", null, "portico")!.status as { supportedFeatures: { name: string }[] }).supportedFeatures).map((f) => f.name);
    expect(features).toContain("GRPCRouteRequestHeaderModifier");
    cleanup();
  });
});

type Cond = { type: string; status: string; reason: string; observedGeneration: number; message: string; lastTransitionTime: string };
/** Our parent entries of a GRPCRoute, as `Type=Status/Reason` per parent. */
const parentConds = (name: string): string[][] =>
  (((api.get("GRPCRoute", INFRA, name)?.status as { parents?: { controllerName: string; conditions: Cond[] }[] } | undefined)?.parents ?? []).filter((p) => p.controllerName === CONTROLLER)).map((p) =>
    p.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`),
  );

describe("GRPCRoute beyond the conformance tests", () => {
  test("status as for HTTPRoute: parent conditions with observedGeneration, supportedKinds, attachedRoutes, supportedFeatures", async () => {
    apply(grpcRoute("status-route", `  parentRefs: [{ name: same-namespace }]
  rules: [{ backendRefs: [{ name: grpc-infra-backend-v1, port: 8080 }] }]`));
    await routeAccepted("status-route");
    const r = api.get("GRPCRoute", INFRA, "status-route")!;
    const parents = (r.status as { parents: { parentRef: unknown; controllerName: string; conditions: Cond[] }[] }).parents;
    expect(parents[0]!.parentRef).toEqual({ group: GROUP, kind: "Gateway", name: "same-namespace", namespace: INFRA });
    expect(parents[0]!.conditions.map((c) => `${c.type}=${c.status}/${c.reason}@${c.observedGeneration}`)).toEqual([
      `Accepted=True/Accepted@${r.metadata.generation}`,
      `ResolvedRefs=True/ResolvedRefs@${r.metadata.generation}`,
    ]);
    expect(parents[0]!.conditions.every((c) => c.message !== "" && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/.test(c.lastTransitionTime))).toBe(true);
    await eventually(() => ((api.get("Gateway", INFRA, "same-namespace")?.status as { listeners?: { attachedRoutes: number }[] } | undefined)?.listeners?.[0]?.attachedRoutes ?? 0) === 1, 10_000);
    const gs = api.get("Gateway", INFRA, "same-namespace")!.status as { listeners: { supportedKinds: unknown[] }[] };
    expect(gs.listeners[0]!.supportedKinds).toEqual([{ group: GROUP, kind: "HTTPRoute" }, { group: GROUP, kind: "GRPCRoute" }]);
    const features = ((api.get("GatewayClass", null, "portico")!.status as { supportedFeatures: { name: string }[] }).supportedFeatures).map((f) => f.name);
    expect(features).toContain("GRPCRoute");
    expect(features).toEqual([...features].sort());
    cleanup();
    // Removed: the listener no longer counts it.
    await eventually(() => ((api.get("Gateway", INFRA, "same-namespace")?.status as { listeners?: { attachedRoutes: number }[] } | undefined)?.listeners?.[0]?.attachedRoutes ?? -1) === 0, 10_000);
  });

  test("unresolved references: BackendNotFound, RefNotPermitted until a ReferenceGrant names GRPCRoute; the valid rule keeps serving", async () => {
    await grpcBackend(APP, "grpc-app-backend");
    apply(grpcRoute("refs", `  parentRefs: [{ name: same-namespace }]
  rules:
  - matches: [{ method: { service: gateway_api_conformance.echo_basic.grpcecho.GrpcEcho, method: Echo } }]
    backendRefs: [{ name: grpc-infra-backend-v1, port: 8080 }]
  - matches: [{ method: { service: gateway_api_conformance.echo_basic.grpcecho.GrpcEcho, method: EchoTwo } }]
    backendRefs: [{ name: grpc-app-backend, namespace: ${APP}, port: 8080 }]
  - matches: [{ method: { service: gateway_api_conformance.echo_basic.grpcecho.GrpcEcho, method: EchoThree } }]
    backendRefs: [{ name: no-such-service, port: 8080 }]`));
    await eventually(() => parentConds("refs")[0]?.[0] === "Accepted=True/Accepted", 10_000);
    expect(parentConds("refs")[0]![1]).toMatch(/^ResolvedRefs=False\/(RefNotPermitted|BackendNotFound)$/);
    const client = h2cClient("example.com");
    await servedAs(client, "Echo", {}, OK("v1"));
    // GRPCRouteRule.backendRefs: a call that would go to an invalid backend ends UNAVAILABLE.
    expect(show(await call(client, "EchoTwo"))).toBe(`code ${grpc.status.UNAVAILABLE}`);
    expect(show(await call(client, "EchoThree"))).toBe(`code ${grpc.status.UNAVAILABLE}`);
    // GEP-709: a ReferenceGrant whose `from` names GRPCRoute (the pure test below: one naming HTTPRoute does not do).
    apply(`apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: from-grpcroutes, namespace: ${APP} }
spec:
  from: [{ group: gateway.networking.k8s.io, kind: GRPCRoute, namespace: ${INFRA} }]
  to: [{ group: "", kind: Service }]`);
    await servedAs(client, "EchoTwo", {}, `OK ${APP}/grpc-app-backend`);
    await eventually(() => parentConds("refs")[0]?.[1] === "ResolvedRefs=False/BackendNotFound", 10_000);
    cleanup();
  });

  test("RequestHeaderModifier (core for GRPCRoute): set overwrites, add appends as old,new, remove drops; per rule", async () => {
    apply(grpcRoute("grpc-request-header-modifier", `  parentRefs: [{ name: same-namespace }]
  rules:
  - matches: [{ method: { service: gateway_api_conformance.echo_basic.grpcecho.GrpcEcho, method: Echo } }]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set: [{ name: X-Header-Set, value: set-overwrites-values }]
        add: [{ name: X-Header-Add, value: add-appends-values }]
        remove: [X-Header-Remove]
    backendRefs: [{ name: grpc-infra-backend-v1, port: 8080 }]
  - matches: [{ method: { service: gateway_api_conformance.echo_basic.grpcecho.GrpcEcho, method: EchoTwo } }]
    backendRefs: [{ name: grpc-infra-backend-v2, port: 8080 }]`));
    await routeAccepted("grpc-request-header-modifier");
    const client = h2cClient("example.com");
    await servedAs(client, "Echo", {}, OK("v1"));
    const pick = (h: Record<string, string> | string) => (typeof h === "string" ? h : Object.fromEntries(Object.entries(h).filter(([k]) => k.startsWith("x-header") || k === "some-other-header")));
    expect(pick(await received(client, "Echo", { "Some-Other-Header": "kept" }))).toEqual({ "some-other-header": "kept", "x-header-set": "set-overwrites-values", "x-header-add": "add-appends-values" });
    expect(pick(await received(client, "Echo", { "X-Header-Set": "overwritten", "X-Header-Add": "original", "X-Header-Remove": "gone" }))).toEqual({
      "x-header-set": "set-overwrites-values",
      "x-header-add": "original,add-appends-values",
    });
    // The other rule has no filter: its calls pass as sent.
    expect(pick(await received(client, "EchoTwo", { "X-Header-Remove": "stays" }))).toEqual({ "x-header-remove": "stays" });
    cleanup();
  });

  test("a RegularExpression method match is UnsupportedValue on Accepted; the route's other rules keep serving, a method match without a service too", async () => {
    apply(grpcRoute("unsupported", `  parentRefs: [{ name: same-namespace }]
  rules:
  - matches: [{ method: { type: RegularExpression, service: ".*", method: "Echo.*" } }]
    backendRefs: [{ name: grpc-infra-backend-v2, port: 8080 }]
  - matches: [{ method: { method: EchoTwo } }]
    backendRefs: [{ name: grpc-infra-backend-v2, port: 8080 }]
  - matches: [{ method: { service: gateway_api_conformance.echo_basic.grpcecho.GrpcEcho, method: Echo } }]
    backendRefs: [{ name: grpc-infra-backend-v1, port: 8080 }]`));
    await eventually(() => parentConds("unsupported")[0]?.[0] === "Accepted=False/UnsupportedValue", 10_000);
    const client = h2cClient("example.com");
    await servedAs(client, "Echo", {}, OK("v1"));
    // GRPCMethodMatch with a method and no service: that method of any service.
    expect(show(await call(client, "EchoTwo"))).toBe(OK("v2"));
    expect(show(await call(client, "EchoThree"))).toBe(UNIMPLEMENTED);
    cleanup();
  });

  test("a listener whose allowedRoutes.kinds lists HTTPRoute only refuses a GRPCRoute (NotAllowedByListeners)", async () => {
    apply(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: http-only, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners: [{ name: http, port: 80, protocol: HTTP, hostname: http-only.example.com, allowedRoutes: { kinds: [{ kind: HTTPRoute }] } }]
---
${grpcRoute("refused", `  parentRefs: [{ name: http-only }]
  rules: [{ backendRefs: [{ name: grpc-infra-backend-v1, port: 8080 }] }]`)}`);
    await eventually(() => parentConds("refused")[0]?.join(" ") === "Accepted=False/NotAllowedByListeners ResolvedRefs=True/ResolvedRefs", 10_000);
    const ls = (api.get("Gateway", INFRA, "http-only")!.status as { listeners: { supportedKinds: unknown[]; attachedRoutes: number }[] }).listeners;
    expect(ls[0]!.supportedKinds).toEqual([{ group: GROUP, kind: "HTTPRoute" }]);
    expect(ls[0]!.attachedRoutes).toBe(0);
    expect(show(await call(h2cClient("http-only.example.com"), "Echo"))).toBe(UNIMPLEMENTED);
    cleanup();
  });

  test("every call kind with its trailers over HTTPS (h2) and the plain port (h2c)", async () => {
    const cert = createCertificate({ subjectCN: "grpc.example.com", sans: ["grpc.example.com"] });
    api.create("Secret", tlsSecret(INFRA, "grpc-cert", cert.certPem, cert.keyPem));
    apply(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: grpc-https, namespace: ${INFRA} }
spec:
  gatewayClassName: portico
  listeners:
  - { name: https, port: 443, protocol: HTTPS, hostname: grpc.example.com, tls: { certificateRefs: [{ name: grpc-cert }] } }
  - { name: http, port: 80, protocol: HTTP, hostname: grpc.example.com }
---
${grpcRoute("echo", `  parentRefs: [{ name: grpc-https }]
  rules:
  - matches: [{ method: { service: portico.test.Echo } }]
    backendRefs: [{ name: grpc-echo, port: 9000 }]`)}`);
    await routeAccepted("echo");
    const h2 = echoClient(portico.ports.https, "grpc.example.com");
    const h2c = new echoPackage.Echo(`127.0.0.1:${portico.ports.http}`, grpc.credentials.createInsecure(), { "grpc.default_authority": "grpc.example.com" });
    clients.push(h2, h2c);
    for (const [label, c] of [["h2", h2], ["h2c", h2c]] as const) {
      // The HTTPS port changes over to the node:http2 listener once the gRPC route is in the table.
      let last = "";
      await eventually(async () => {
        const r = await unary(c, { text: "hi", n: 1 });
        last = r.err ? `${r.err.code} ${r.err.details}` : "ok";
        return r.err === null;
      }, 15_000, `${label} unary served (last: ${last})`);
      const u = await unary(c, { text: "hi", n: 7 }, { metadata: { "x-trace": label } });
      expect(u.err).toBeNull();
      expect(u.res).toMatchObject({ text: "echo:hi", n: 7 });
      expect(u.trailers?.get("x-served-by")).toEqual(["echo"]);
      expect(echo.seen.at(-1)!.metadata["x-trace"]).toBe(label);
      const failed = await unary(c, { text: "nope", action: "fail" });
      expect([failed.err?.code, failed.err?.details]).toEqual([grpc.status.INVALID_ARGUMENT, "refused nope"]);
      const ss = await collect(c.ServerStream({ text: "s", n: 3 }));
      expect([ss.status.code, ss.msgs.map((m) => m.text)]).toEqual([grpc.status.OK, ["s-0", "s-1", "s-2"]]);
      expect(await clientStream(c, ["a", "b", "c"])).toMatchObject({ text: "a,b,c", n: 3 });
      expect(await bidiExchange(c, ["x", "y"])).toEqual({ replies: ["bidi:x", "bidi:y"], code: grpc.status.OK });
    }
    cleanup();
    api.delete("Secret", INFRA, "grpc-cert");
  });
});

test("a GRPCRoute from --manifests is served (no cluster)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "portico-grpcroute-manifests-"));
  writeFileSync(
    join(dir, "objects.yaml"),
    `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: portico }
spec: { controllerName: ${CONTROLLER} }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: infra }
spec:
  gatewayClassName: portico
  listeners: [{ name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: All } } }]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: { name: r, namespace: apps }
spec:
  parentRefs: [{ name: gw, namespace: infra }]
  hostnames: [grpc.example.io]
  rules: [{ matches: [{ method: { service: portico.test.Echo, method: Unary } }], backendRefs: [{ name: echo, port: 9000 }] }]
---
apiVersion: v1
kind: Service
metadata: { name: echo, namespace: apps }
spec: { ports: [{ name: grpc, port: 9000 }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: echo-x, namespace: apps, labels: { kubernetes.io/service-name: echo } }
addressType: IPv4
ports: [{ name: grpc, port: ${echo.port} }]
endpoints: [{ addresses: [127.0.0.1], conditions: { ready: true } }]
`,
  );
  const p = await startPortico(["--manifests", join(dir, "objects.yaml"), "--access-log", "off"]);
  try {
    const c = new echoPackage.Echo(`127.0.0.1:${p.ports.http}`, grpc.credentials.createInsecure(), { "grpc.default_authority": "grpc.example.io" });
    clients.push(c);
    let last = "";
    await eventually(async () => {
      const r = await unary(c, { text: "m" });
      last = r.err ? `${r.err.code} ${r.err.details}` : (r.res?.text ?? "");
      return last === "echo:m";
    }, 15_000, `unary through the --manifests GRPCRoute (last: ${last})`);
    // Only Unary is routed: the other methods of the service match no rule.
    expect((await collect(c.ServerStream({ text: "s", n: 1 }))).status.code).toBe(grpc.status.UNIMPLEMENTED);
  } finally {
    await p.stop("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});

describe("GRPCRoute compile (pure)", () => {
  const SVC = "gateway_api_conformance.echo_basic.grpcecho.GrpcEcho";
  const rpc = (method: string, headers: Record<string, string> = {}, host = "example.com") => ({ host, path: `/${SVC}/${method}`, method: "POST", headers: { "content-type": "application/grpc", ...headers } });
  const grpcYaml = (name: string, rules: string, extra = "") => `apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: { name: ${name}, namespace: ${INFRA}, generation: 1${extra} }
spec:
  parentRefs: [{ name: same-namespace }]
  rules:
${rules}`;

  test("precedence (GRPCRouteRule.matches): service and method over service alone, more header matches first, then the older route", () => {
    const w = World.of(
      GATEWAYS["same-namespace"],
      grpcYaml("service-only", `  - { matches: [{ method: { service: ${SVC} } }], backendRefs: [{ name: infra-backend-v1, port: 8080 }] }
  - { matches: [{ method: { service: ${SVC} }, headers: [{ name: x-canary, value: "1" }] }], backendRefs: [{ name: infra-backend-v3, port: 8080 }] }`, ', creationTimestamp: "2026-01-01T00:00:01Z"'),
      grpcYaml("exact", `  - { matches: [{ method: { service: ${SVC}, method: EchoTwo } }], backendRefs: [{ name: infra-backend-v2, port: 8080 }] }`, ', creationTimestamp: "2026-01-01T00:00:02Z"'),
      grpcYaml("younger-catch-all", `  - { backendRefs: [{ name: app-backend-v1, namespace: ${APP}, port: 8080 }] }`, ', creationTimestamp: "2026-01-01T00:00:03Z"'),
    );
    expect(w.answer(rpc("Echo"))).toBe(`${INFRA}/infra-backend-v1`);
    expect(w.answer(rpc("EchoTwo"))).toBe(`${INFRA}/infra-backend-v2`);
    // The exact method wins over the service match with a header (characters of the method first).
    expect(w.answer(rpc("EchoTwo", { "x-canary": "1" }))).toBe(`${INFRA}/infra-backend-v2`);
    expect(w.answer(rpc("Echo", { "x-canary": "1" }))).toBe(`${INFRA}/infra-backend-v3`);
    // Another service: only the rule without matches takes it (its backend is refused: 500).
    expect(w.answer({ host: "example.com", path: "/other.Svc/Echo", method: "POST" })).toBe("500");
    // A GRPCRoute's backends speak gRPC (HTTP/2 with trailers) to the pods.
    expect(w.match(rpc("Echo"))!.choices[0]!.match.route.backend.scheme).toBe("grpc");
    expect(w.routeConditions(INFRA, "younger-catch-all")).toEqual(["Accepted=True/Accepted ResolvedRefs=False/RefNotPermitted"]);
  });

  test("a method match without a service: that method of any one service, after the service matches, before the match-everything rule", () => {
    const w = World.of(
      GATEWAYS["same-namespace"],
      grpcYaml("mixed", `  - { matches: [{ method: { method: Echo } }], backendRefs: [{ name: infra-backend-v1, port: 8080 }] }
  - { matches: [{ method: { service: ${SVC} } }], backendRefs: [{ name: infra-backend-v2, port: 8080 }] }
  - { backendRefs: [{ name: infra-backend-v3, port: 8080 }] }`),
    );
    expect(w.routeConditions(INFRA, "mixed")).toEqual(["Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs"]);
    const at = (path: string) => w.answer({ host: "example.com", path, method: "POST" });
    expect(at(`/${SVC}/Echo`)).toBe(`${INFRA}/infra-backend-v2`);
    expect(at("/other.Svc/Echo")).toBe(`${INFRA}/infra-backend-v1`);
    expect(at("/other.Svc/EchoTwo")).toBe(`${INFRA}/infra-backend-v3`);
    // One service segment, then the method: not the method alone, not a longer path.
    expect(at("/Echo")).toBe(`${INFRA}/infra-backend-v3`);
    expect(at("/a/b/Echo")).toBe(`${INFRA}/infra-backend-v3`);
    expect(at("//Echo")).toBe(`${INFRA}/infra-backend-v3`);
  });

  test("a ReferenceGrant must name GRPCRoute in from (GEP-709); one naming HTTPRoute does not cover it", () => {
    const route = grpcYaml("cross", `  - { backendRefs: [{ name: app-backend-v1, namespace: ${APP}, port: 8080 }] }`);
    const grant = (kind: string) => `apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: grant, namespace: ${APP} }
spec: { from: [{ group: gateway.networking.k8s.io, kind: ${kind}, namespace: ${INFRA} }], to: [{ group: "", kind: Service }] }`;
    const httpGrant = World.of(GATEWAYS["same-namespace"], route, grant("HTTPRoute"));
    expect(httpGrant.routeConditions(INFRA, "cross")).toEqual(["Accepted=True/Accepted ResolvedRefs=False/RefNotPermitted"]);
    expect(httpGrant.answer(rpc("Echo"))).toBe("500");
    const grpcGrant = World.of(GATEWAYS["same-namespace"], route, grant("GRPCRoute"));
    expect(grpcGrant.routeConditions(INFRA, "cross")).toEqual(["Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs"]);
    expect(grpcGrant.answer(rpc("Echo"))).toBe(`${APP}/app-backend-v1`);
  });

  test("an HTTPRoute and a GRPCRoute of the same name are two routes: two status entries, both counted in attachedRoutes", () => {
    const w = World.of(
      GATEWAYS["same-namespace"],
      `apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: { name: twin, namespace: ${INFRA}, generation: 1 }
spec:
  parentRefs: [{ name: same-namespace }]
  hostnames: [grpc.example.com]
  rules: [{ matches: [{ method: { service: ${SVC} } }], backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`,
      `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: twin, namespace: ${INFRA}, generation: 1 }
spec:
  parentRefs: [{ name: same-namespace }]
  hostnames: [web.example.com]
  rules: [{ matches: [{ path: { type: PathPrefix, value: /web } }], backendRefs: [{ name: infra-backend-v2, port: 8080 }] }]`,
    );
    expect(w.result.routes.map((r) => `${r.kind ?? "HTTPRoute"} ${r.key}`).sort()).toEqual([`GRPCRoute ${INFRA}/twin`, `HTTPRoute ${INFRA}/twin`]);
    expect(w.listener(`${INFRA}/same-namespace`, "http").attachedRoutes).toBe(2);
    expect(w.answer(rpc("Echo", {}, "grpc.example.com"))).toBe(`${INFRA}/infra-backend-v1`);
    expect(w.answer({ host: "web.example.com", path: "/web/x" })).toBe(`${INFRA}/infra-backend-v2`);
  });

  test("bad input from --manifests (no CRD validation): the bad match matches nothing, the route's other rules serve", () => {
    const w = World.of(
      GATEWAYS["same-namespace"],
      grpcYaml("bad", `  - { matches: [{ method: { service: "a/b", method: Echo } }], backendRefs: [{ name: infra-backend-v2, port: 8080 }] }
  - { matches: [{ method: { service: ${SVC}, method: "Echo/../x" } }], backendRefs: [{ name: infra-backend-v2, port: 8080 }] }
  - { matches: [{ method: { service: ${SVC}, method: EchoTwo }, headers: [{ name: "bad name", value: x }] }], backendRefs: [{ name: infra-backend-v2, port: 8080 }] }
  - { matches: [{ method: { service: ${SVC}, method: EchoThree } }], filters: [{ type: RequestRedirect, requestRedirect: { statusCode: 301 } }], backendRefs: [{ name: infra-backend-v2, port: 8080 }] }
  - { matches: [{ method: { service: ${SVC}, method: Echo } }], backendRefs: [{ name: infra-backend-v1, port: 8080 }] }`),
    );
    expect(w.routeConditions(INFRA, "bad")).toEqual(["Accepted=False/UnsupportedValue ResolvedRefs=True/ResolvedRefs"]);
    expect(w.answer(rpc("Echo"))).toBe(`${INFRA}/infra-backend-v1`);
    expect(w.answer({ host: "example.com", path: "/a/b/Echo", method: "POST" })).toBe("404");
    expect(w.answer(rpc("EchoTwo"))).toBe("404");
    // An HTTPRoute-only filter on a GRPCRoute: that rule answers 500 (UNAVAILABLE to a gRPC client).
    expect(w.answer(rpc("EchoThree"))).toBe("500");
  });

  const httpYaml = (name: string, hostnames: string, time: string, backend = "infra-backend-v3") => `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: ${name}, namespace: ${INFRA}, generation: 1, creationTimestamp: "${time}" }
spec:
  parentRefs: [{ name: same-namespace }]
  hostnames: [${hostnames}]
  rules: [{ backendRefs: [{ name: ${backend}, port: 8080 }] }]`;
  const grpcHosts = (name: string, hostnames: string, time: string) => `apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: { name: ${name}, namespace: ${INFRA}, generation: 1, creationTimestamp: "${time}" }
spec:
  parentRefs: [{ name: same-namespace }]
  hostnames: [${hostnames}]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`;

  test("an HTTPRoute and a GRPCRoute sharing a hostname on one listener: only the older is accepted there (GRPCRouteSpec.hostnames)", () => {
    const T1 = "2026-01-01T00:00:01Z";
    const T2 = "2026-01-01T00:00:02Z";
    const refusedGrpc = World.of(GATEWAYS["same-namespace"], httpYaml("web", "shared.example.com", T1), grpcHosts("rpc", '"*.example.com"', T2), grpcHosts("apart", "other.example.org", T2));
    expect(refusedGrpc.routeConditions(INFRA, "web")).toEqual(["Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs"]);
    const rpc = refusedGrpc.result.routes.find((r) => r.kind === "GRPCRoute" && r.key === `${INFRA}/rpc`)!;
    expect(rpc.parents.map((p) => p.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`).join(" "))).toEqual(["Accepted=False/NotAllowedByListeners ResolvedRefs=True/ResolvedRefs"]);
    expect(refusedGrpc.routeConditions(INFRA, "apart")).toEqual(["Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs"]);
    expect(refusedGrpc.listener(`${INFRA}/same-namespace`, "http").attachedRoutes).toBe(2);
    expect(refusedGrpc.answer({ host: "shared.example.com", path: `/${SVC}/Echo`, method: "POST" })).toBe(`${INFRA}/infra-backend-v3`);
    expect(refusedGrpc.answer({ host: "x.example.com", path: `/${SVC}/Echo`, method: "POST" })).toBe("404");
    expect(refusedGrpc.answer({ host: "other.example.org", path: `/${SVC}/Echo`, method: "POST" })).toBe(`${INFRA}/infra-backend-v1`);
    // The GRPCRoute older: the HTTPRoute is refused, and only the HTTPRoute.
    const refusedHttp = World.of(GATEWAYS["same-namespace"], httpYaml("web", "shared.example.com", T2), grpcHosts("rpc", '"*.example.com"', T1));
    expect(refusedHttp.routeConditions(INFRA, "web")).toEqual(["Accepted=False/NotAllowedByListeners ResolvedRefs=True/ResolvedRefs"]);
    expect(refusedHttp.answer({ host: "shared.example.com", path: "/" })).toBe(`${INFRA}/infra-backend-v1`);
  });

  test("the incremental compile equals a full compile through GRPCRoute edits, deletions and endpoint changes", () => {
    const store = new Store();
    const put = (type: "ADDED" | "MODIFIED" | "DELETED", ...texts: string[]) => {
      for (const { kind, object } of objects(...texts)) store.apply({ type, kind, object } as Parameters<Store["apply"]>[0]);
    };
    const view = (r: CompileResult) => ({
      table: serializeTable(r.table).gateway ?? null,
      routes: (r.gateway?.routes ?? []).map((x) => ({ key: x.key, kind: x.kind ?? "HTTPRoute", generation: x.generation, parents: x.parents.map((p) => p.conditions) })),
      attached: [...(r.gateway?.gateways.values() ?? [])].map((g) => g.listeners.map((l) => l.attachedRoutes)),
    });
    put("ADDED", BASE, GATEWAYS["same-namespace"], grpcYaml("a", `  - { matches: [{ method: { service: ${SVC}, method: Echo } }], backendRefs: [{ name: infra-backend-v1, port: 8080 }] }`));
    const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
    const steps: (() => void)[] = [
      () => put("ADDED", grpcYaml("b", `  - { matches: [{ method: { service: ${SVC} } }], backendRefs: [{ name: infra-backend-v2, port: 8080 }] }`)),
      () => put("MODIFIED", grpcYaml("a", `  - { matches: [{ method: { service: ${SVC}, method: EchoTwo } }], backendRefs: [{ name: infra-backend-v3, port: 8080 }] }`).replace("generation: 1", "generation: 2")),
      () => put("MODIFIED", `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: infra-backend-v2-x, namespace: ${INFRA}, resourceVersion: "9", labels: { kubernetes.io/service-name: infra-backend-v2 } }
addressType: IPv4
endpoints: [{ addresses: ["127.0.2.9"], conditions: { ready: true } }]
ports: [{ name: first-port, port: 3000 }]`),
      () => put("DELETED", grpcYaml("b", "")),
      // An HTTPRoute on the same hostless listener, younger by name: refused while "a" is there.
      () => put("ADDED", httpYaml("h", "", "")),
      () => put("DELETED", grpcYaml("a", "")),
    ];
    expect(view(compiler.compile(store.snapshot()))).toEqual(view(compile(store.snapshot(), DEFAULT_COMPILE_CONFIG)));
    const accepted: string[] = [];
    steps.forEach((step, i) => {
      step();
      const snap = store.snapshot();
      const v = view(compiler.compile(snap));
      expect(v, `step ${i}`).toEqual(view(compile(snap, DEFAULT_COMPILE_CONFIG)));
      accepted.push(v.routes.map((r) => `${r.kind === "GRPCRoute" ? "g" : "h"}:${r.key.slice(INFRA.length + 1)}=${r.parents[0]![0]!.status}`).sort().join(" "));
    });
    expect(accepted).toEqual(["g:a=True g:b=True", "g:a=True g:b=True", "g:a=True g:b=True", "g:a=True", "g:a=True h:h=False", "h:h=True"]);
    const last = view(compile(store.snapshot(), DEFAULT_COMPILE_CONFIG));
    expect(last.routes.map((r) => `${r.kind} ${r.key} ${r.generation} ${r.parents[0]![0]!.status}`)).toEqual([`HTTPRoute ${INFRA}/h 1 True`]);
    expect(last.table).not.toBeNull();
  });
});
