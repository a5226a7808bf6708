// ExtensionRef filters naming Portico's IngressNginxPolicy (compile/gateway/extension.ts;
// docs/design.md "Gateway API", "IngressNginxPolicy"): the policy's annotations are the
// Ingress's families, a reference that cannot be resolved answers 500 with ResolvedRefs False
// (HTTPRouteFilter: "If a reference to a custom filter type cannot be resolved, the filter MUST
// NOT be skipped ... MUST receive a HTTP error response"), an annotation a rule cannot apply
// answers 500 with Accepted False. Then one proxy serves an Ingress and its HTTPRoute side by
// side with a real auth service: the same answers.
import { afterEach, describe, expect, test } from "bun:test";
import { GATEWAYS, INFRA, World, snapshot, BASE } from "./base.ts";
import { Compiler, compile } from "../../src/compile/compile.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import * as K from "../../src/kinds/index.ts";
import { createExternalResolver } from "../../src/proxy/upstream/external.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import { POLICY_KINDS } from "../../src/kinds/registry.ts";
import type { PolicyKind } from "../../src/kinds/types.ts";
import { lookup } from "../../src/table/lookup.ts";
import { externalAuthWith, quietLog, rawRequest, statusLine, testConfig } from "../proxy/helpers.ts";
import { rawBackend } from "../proxy/raw.ts";

const N = "nginx.ingress.kubernetes.io/";
const V1 = `${INFRA}/infra-backend-v1`;

const route = (name: string, filters: string, ns = INFRA) => `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: ${name}, namespace: ${ns}, generation: 1 }
spec:
  parentRefs: [{ name: same-namespace }]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /guarded } }]
      filters: [${filters}]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
    - matches: [{ path: { type: PathPrefix, value: /open } }]
      backendRefs: [{ name: infra-backend-v1, port: 8080 }]
`;
const ref = (name: string, group = "portico.dev", kind = "IngressNginxPolicy") => `{ type: ExtensionRef, extensionRef: { group: ${group}, kind: ${kind}, name: ${name} } }`;
const policy = (name: string, annotations: Record<string, string>, ns = INFRA) => `
apiVersion: portico.dev/v1alpha1
kind: IngressNginxPolicy
metadata: { name: ${name}, namespace: ${ns} }
spec: { annotations: ${JSON.stringify(annotations)} }
`;

const stagesOf = (w: World, path: string) => (w.match({ path })?.choices[0]?.match.route.options.stages ?? []).map((s) => s.kind);

describe("ExtensionRef to IngressNginxPolicy", () => {
  test("a policy that does not exist: that rule answers 500, ResolvedRefs False (BackendNotFound), the other rules serve", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("r", ref("missing")));
    expect(w.answer({ path: "/guarded" })).toBe("500");
    expect(w.answer({ path: "/open" })).toBe(V1);
    expect(w.routeConditions(INFRA, "r")).toEqual(["Accepted=True/Accepted ResolvedRefs=False/BackendNotFound"]);
  });

  test("another group or kind: 500 and ResolvedRefs False (InvalidKind)", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("r", ref("p", "example.com", "Thing")), policy("p", {}));
    expect(w.answer({ path: "/guarded" })).toBe("500");
    expect(w.routeConditions(INFRA, "r")).toEqual(["Accepted=True/Accepted ResolvedRefs=False/InvalidKind"]);
  });

  test("a policy in another namespace is not the route's: not found", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("r", ref("p")), policy("p", { [`${N}whitelist-source-range`]: "10.0.0.0/8" }, "other"));
    expect(w.answer({ path: "/guarded" })).toBe("500");
  });

  test("the policy's annotations become the rule's stages and route options, as an Ingress's", () => {
    const w = World.of(
      GATEWAYS["same-namespace"],
      route("r", ref("p")),
      policy("p", { [`${N}whitelist-source-range`]: "10.0.0.0/8", [`${N}proxy-body-size`]: "1k", [`${N}proxy-read-timeout`]: "7", [`${N}auth-url`]: "http://auth.example/check" }),
    );
    expect(w.answer({ path: "/guarded" })).toBe(V1);
    expect(w.routeConditions(INFRA, "r")).toEqual(["Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs"]);
    const options = w.match({ path: "/guarded" })!.choices[0]!.match.route.options;
    expect(options.maxBodySize).toBe(1024);
    expect(options.responseTimeoutMs).toBe(7000);
    expect(options.sslRedirect).toBe(false);
    expect(stagesOf(w, "/guarded")).toEqual(expect.arrayContaining([K.SOURCE_RANGE.id, K.EXTERNAL_AUTH.id]));
    // The rule without the filter has none of it.
    expect(stagesOf(w, "/open")).toEqual([]);
  });

  test("basic auth reads the Secret in the route's namespace; a missing one refuses (503 stage), never opens", () => {
    const ann = { [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "users" };
    const without = World.of(GATEWAYS["same-namespace"], route("r", ref("p")), policy("p", ann));
    expect(stagesOf(without, "/guarded")).toContain(K.REFUSE.id);
    const secret = `apiVersion: v1
kind: Secret
metadata: { name: users, namespace: ${INFRA} }
stringData: { auth: "alice:{PLAIN}pw" }`;
    const withSecret = World.of(GATEWAYS["same-namespace"], route("r", ref("p")), policy("p", ann), secret);
    expect(stagesOf(withSecret, "/guarded")).toContain(K.BASIC_AUTH.id);
    expect(stagesOf(withSecret, "/guarded")).not.toContain(K.REFUSE.id);
  });

  test("a value the family refuses, or a basic-auth Secret that cannot be read, is a diagnostic of the route, as of an Ingress", () => {
    const w = World.of(GATEWAYS["same-namespace"], route("r", ref("p")), policy("p", { [`${N}proxy-body-size`]: "yes", [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "nope" }));
    const mine = w.result.diagnostics.filter((d) => d.kind === "HTTPRoute" && d.namespace === INFRA && d.name === "r").map((d) => [d.reason, d.severity, d.message]);
    expect(mine).toEqual([
      ["InvalidAnnotation", "warning", `IngressNginxPolicy ${INFRA}/p: annotation ${N}proxy-body-size="yes": expected a byte size such as 1048576, 512k, 10m or 1g; using the default`],
      ["SecretNotFound", "error", `IngressNginxPolicy ${INFRA}/p: Secret ${INFRA}/nope (auth-secret) not found; every path of the Ingress answers 503 until it is fixed`],
    ]);
  });

  for (const [name, value] of [
    [`${N}server-alias`, "other.example"],
    [`${N}ssl-redirect`, "true"],
    [`${N}auth-tls-secret`, "ca"],
    [`${N}canary`, "true"],
    [`${N}rewrite-target`, "/$1"],
  ] as const) {
    test(`${name} cannot be applied to a route rule: 500, Accepted False (UnsupportedValue) naming it`, () => {
      const w = World.of(GATEWAYS["same-namespace"], route("r", ref("p")), policy("p", { [name]: value }));
      expect(w.answer({ path: "/guarded" })).toBe("500");
      expect(w.answer({ path: "/open" })).toBe(V1);
      const accepted = w.route(INFRA, "r").parents[0]!.conditions[0]!;
      expect([accepted.status, accepted.reason]).toEqual(["False", "UnsupportedValue"]);
      expect(accepted.message).toContain(name);
    });
  }

  test("a GRPCRoute rule takes the policy too; a missing one answers 500", () => {
    const grpc = (p: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: { name: g, namespace: ${INFRA}, generation: 1 }
spec:
  parentRefs: [{ name: same-namespace }]
  rules: [{ filters: [${ref(p)}], backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]
`;
    const ok = World.of(GATEWAYS["same-namespace"], grpc("p"), policy("p", { [`${N}whitelist-source-range`]: "10.0.0.0/8" }));
    expect(stagesOf(ok, "/svc.Echo/Say")).toContain(K.SOURCE_RANGE.id);
    const missing = World.of(GATEWAYS["same-namespace"], grpc("nope"));
    expect(missing.answer({ path: "/svc.Echo/Say" })).toBe("500");
  });

  test("--allowlist-source-range applies to a rule naming a policy, as to an Ingress (the annotation replaces it there)", () => {
    const config = { ...DEFAULT_COMPILE_CONFIG, allowlistSourceRange: ["192.168.0.0/16"] };
    const res = compile(snapshot(BASE, GATEWAYS["same-namespace"], route("r", ref("p")), policy("p", { [`${N}proxy-body-size`]: "1k" })), config);
    const w = Object.create(World.prototype) as World;
    Object.assign(w, { result: { table: res.table.gateway } });
    const stage = w.match({ path: "/guarded" })!.choices[0]!.match.route.options.stages?.find((p) => p.kind === K.SOURCE_RANGE.id);
    expect(stage?.params).toEqual({ allow: ["192.168.0.0/16"], deny: null });
    // A rule without the filter is a Gateway API rule alone: the Ingress flags are not its.
    expect(stagesOf(w, "/open")).toEqual([]);
  });

  test("a policy created or changed later is picked up by the incremental compile", () => {
    const c = new Compiler(DEFAULT_COMPILE_CONFIG);
    const r = route("r", ref("p"));
    const stages = (res: ReturnType<Compiler["compile"]>) => {
      const w = Object.create(World.prototype) as World;
      Object.assign(w, { result: { table: res.table.gateway } });
      return stagesOf(w, "/guarded");
    };
    expect(stages(c.compile(snapshot(BASE, GATEWAYS["same-namespace"], r)))).toEqual([K.GATEWAY_ERROR.id]);
    expect(stages(c.compile(snapshot(BASE, GATEWAYS["same-namespace"], r, policy("p", { [`${N}whitelist-source-range`]: "10.0.0.0/8" }))))).toEqual([K.SOURCE_RANGE.id]);
    expect(stages(c.compile(snapshot(BASE, GATEWAYS["same-namespace"], r, policy("p", { [`${N}auth-url`]: "http://auth.example/" }))))).toEqual([K.EXTERNAL_AUTH.id]);
  });
});

describe("auth-proxy-set-headers in an IngressNginxPolicy", () => {
  test("reads the ConfigMap of the route's namespace; missing, 503 (refuse stage); edited, the incremental compile follows", () => {
    // authreq/main.go: a ConfigMap that cannot be found denies the location (503), as for an Ingress.
    const c = new Compiler(DEFAULT_COMPILE_CONFIG);
    const r = route("r", ref("p"));
    const p = policy("p", { [`${N}auth-url`]: "http://auth.example/", [`${N}auth-proxy-set-headers`]: `${INFRA}/h` });
    const cm = (value: string) => `
apiVersion: v1
kind: ConfigMap
metadata: { name: h, namespace: ${INFRA} }
data: { X-Tenant: "${value}" }`;
    const authStage = (res: ReturnType<Compiler["compile"]>) => {
      const w = Object.create(World.prototype) as World;
      Object.assign(w, { result: { table: res.table.gateway } });
      return w.match({ path: "/guarded" })!.choices[0]!.match.route.options.stages!.map((st) => [st.kind, (st.params as { proxySetHeaders?: unknown }).proxySetHeaders ?? null]);
    };
    expect(authStage(c.compile(snapshot(BASE, GATEWAYS["same-namespace"], r, p)))).toEqual([[K.REFUSE.id, null]]);
    const withA = snapshot(BASE, GATEWAYS["same-namespace"], r, p, cm("a"));
    expect(authStage(c.compile(withA))).toEqual([[K.EXTERNAL_AUTH.id, [{ name: "x-tenant", value: ["a"] }]]]);
    // Only the ConfigMap is another object: the route and the policy are the same ones.
    const withB = { ...withA, configMaps: snapshot(cm("b")).configMaps };
    expect(authStage(c.compile(withB))).toEqual([[K.EXTERNAL_AUTH.id, [{ name: "x-tenant", value: ["b"] }]]]);
  });
});

describe("an Ingress and its HTTPRoute side by side in one proxy", () => {
  const cleanup: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  test("auth-url: 401 without the token, the backend with it, auth-signin's 302: the same through both", async () => {
    const auth = await rawBackend((req) =>
      /^x-token:\s*good\s*$/im.test(req.head) ? "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" : "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n",
    );
    cleanup.push(() => auth.stop());
    const app = await rawBackend(() => "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\napp");
    cleanup.push(() => app.stop());
    const ann = { [`${N}auth-url`]: `http://auth.test.svc:${auth.port}/check`, [`${N}auth-signin`]: "https://login.test/start" };
    const objects = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: portico, generation: 1 }
spec: { controllerName: portico.dev/gateway-controller }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: web, generation: 1 }
spec: { gatewayClassName: portico, listeners: [{ name: http, port: 80, protocol: HTTP }] }
---
apiVersion: v1
kind: Service
metadata: { name: app, namespace: web }
spec: { ports: [{ name: http, port: 80 }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: app-1, namespace: web, labels: { kubernetes.io/service-name: app } }
addressType: IPv4
ports: [{ name: http, port: ${app.port} }]
endpoints: [{ addresses: [127.0.0.1], conditions: { ready: true } }]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: site, namespace: web, annotations: ${JSON.stringify(ann)} }
spec:
  ingressClassName: portico
  rules: [{ host: ingress.test, http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: app, port: { number: 80 } } } }] } }]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: site, namespace: web, generation: 1 }
spec:
  parentRefs: [{ name: gw }]
  hostnames: [route.test]
  rules: [{ filters: [${ref("site")}], backendRefs: [{ name: app, port: 80 }] }]
---
${policy("site", ann, "web")}
`;
    const result = compile(snapshot(objects), { ...DEFAULT_COMPILE_CONFIG, ingressClass: "portico", watchIngressWithoutClass: false });
    // The auth service's name resolves to the test's loopback address, which the address policy
    // would otherwise refuse (test/proxy/external-auth.test.ts does the same).
    const kinds = new Map<string, PolicyKind>(POLICY_KINDS);
    const resolver = createExternalResolver({
      lookup: async (name) => (name === "auth.test.svc" ? ["127.0.0.1"] : Promise.reject(Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" }))),
      check: (a) => (a === "127.0.0.1" ? null : "not the test address"),
    });
    kinds.set(K.EXTERNAL_AUTH.id, externalAuthWith({ resolver }));
    const handler = createProxyHandler({ config: testConfig(), table: () => result.table, lookup, log: quietLog, scheme: "http", policyKinds: kinds });
    const server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
    cleanup.push(() => server.stop(true));
    const ask = async (host: string, headers = "") => {
      const raw = await rawRequest(server.port as number, `GET /page?x=1 HTTP/1.1\r\nhost: ${host}\r\n${headers}connection: close\r\n\r\n`, 5_000);
      const location = /\r\nlocation: ([^\r]*)/i.exec(raw)?.[1]?.replace(host, "HOST") ?? null;
      return { status: statusLine(raw), location, body: raw.slice(raw.indexOf("\r\n\r\n") + 4) };
    };
    const without = await ask("ingress.test");
    expect(without.status).toBe(302);
    expect(without.location).toStartWith("https://login.test/start?rd=");
    expect(await ask("route.test")).toEqual(without);
    const good = await ask("ingress.test", "x-token: good\r\n");
    expect(good).toEqual({ status: 200, location: null, body: "app" });
    expect(await ask("route.test", "x-token: good\r\n")).toEqual(good);
  });
});
