// What a change compiles again in the Gateway API part (docs/design.md "Gateway API", "What a
// change compiles again"): only the routes that read the changed object. Each step applies one
// change to a real Store, compiles with one long-lived Compiler, counts the routes compiled
// (gatewayRouteCompiles) and holds the result equal to a full compile of the same snapshot.
import { describe, expect, test } from "bun:test";
import { compile, Compiler } from "../../src/compile/compile.ts";
import type { CompileConfig } from "../../src/compile/config.ts";
import { gatewayPortCompiles } from "../../src/compile/gateway/ports.ts";
import { gatewayRouteCompiles } from "../../src/compile/gateway/table.ts";
import type { CompileResult } from "../../src/compile/types.ts";
import { Store } from "../../src/store/store.ts";
import { serializeTable } from "../../src/table/serialize.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { parseArgs } from "../../src/config/parse.ts";
import { createLogger } from "../../src/log/logger.ts";
import { KINDS } from "../../src/model/kinds.ts";
import { createController } from "../../src/runtime/controller.ts";
import { eventually } from "../wait.ts";
import { APP, BASE, CONTROLLER, GATEWAYS, INFRA, objects } from "./base.ts";
import { createCertificate } from "../tls/pki.ts";

const N = "nginx.ingress.kubernetes.io/";
// add-headers names a ConfigMap, as --nginx-configmap's add-headers key does (compile/global-headers.ts).
const CONFIG: CompileConfig = Object.freeze({ ...DEFAULT_COMPILE_CONFIG, addHeaders: { namespace: INFRA, name: "global" } });

const route = (name: string, ns: string, gateway: string, policy: string | null) => `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: ${name}, namespace: ${ns}, generation: 1, resourceVersion: "1" }
spec:
  parentRefs: [{ name: ${gateway}, namespace: ${INFRA} }]
  hostnames: [${name}.example]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /${name} } }]
      ${policy === null ? "" : `filters: [{ type: ExtensionRef, extensionRef: { group: portico.dev, kind: IngressNginxPolicy, name: ${policy} } }]`}
      backendRefs: [{ name: infra-backend-v1, namespace: ${INFRA}, port: 8080 }]
`;
const policy = (name: string, annotations: Record<string, string>) => `
apiVersion: portico.dev/v1alpha1
kind: IngressNginxPolicy
metadata: { name: ${name}, namespace: ${INFRA} }
spec: { annotations: ${JSON.stringify(annotations)} }
`;
const configMap = (name: string, value: string, rv: string) => `
apiVersion: v1
kind: ConfigMap
metadata: { name: ${name}, namespace: ${INFRA}, resourceVersion: "${rv}" }
data: { X-Tenant: "${value}" }
`;
// htpasswd lines as ingress-nginx's auth-file ({SHA}: base64 of a SHA-1 digest).
const users = (line: string, rv: string) => `
apiVersion: v1
kind: Secret
metadata: { name: users, namespace: ${INFRA}, resourceVersion: "${rv}" }
type: Opaque
data: { auth: ${Buffer.from(line).toString("base64")} }
`;
const namespace = (label: string, rv: string) => `
apiVersion: v1
kind: Namespace
metadata: { name: ${APP}, resourceVersion: "${rv}", labels: { gateway-conformance: ${label} } }
`;
const grant = `
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: from-app, namespace: ${INFRA} }
spec: { from: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: ${APP} }], to: [{ group: "", kind: Service }] }
`;

function apply(store: Store, type: "ADDED" | "MODIFIED" | "DELETED", ...texts: string[]): void {
  for (const { kind, object } of objects(...texts)) store.apply({ type, kind, object } as Parameters<Store["apply"]>[0]);
}

/** What a compile says about the Gateway API objects, in comparable form. */
function view(r: CompileResult) {
  return {
    table: serializeTable(r.table),
    routes: (r.gateway?.routes ?? []).map((x) => ({ key: x.key, generation: x.generation, parents: x.parents.map((p) => ({ ref: p.state.parentRef, conditions: p.conditions })) })),
    listeners: [...(r.gateway?.gateways.values() ?? [])].map((g) => ({ key: g.key, listeners: g.listeners.map((l) => ({ name: l.name, attachedRoutes: l.attachedRoutes, conditions: l.conditions })) })),
    diagnostics: r.diagnostics,
    certificates: r.certificates,
  };
}

/** 12 routes in INFRA on a Gateway admitting All (i0-i2 name policy p, i3 policy q) and 6 in APP on the Selector Gateway. */
function cluster(): Store {
  const store = new Store();
  store.setSettingsConfigMaps([`${INFRA}/global`]);
  apply(store, "ADDED", BASE, GATEWAYS["all-namespaces"], GATEWAYS["backend-namespaces"]);
  apply(
    store,
    "ADDED",
    policy("p", { [`${N}auth-url`]: "http://auth.example/", [`${N}auth-proxy-set-headers`]: `${INFRA}/h` }),
    policy("q", { [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "users" }),
    configMap("h", "a", "1"),
    configMap("other", "a", "1"),
    configMap("global", "a", "1"),
    users("u:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=\n", "1"),
  );
  for (let i = 0; i < 12; i++) apply(store, "ADDED", route(`i${i}`, INFRA, "all-namespaces", i < 3 ? "p" : i === 3 ? "q" : null));
  for (let i = 0; i < 6; i++) apply(store, "ADDED", route(`a${i}`, APP, "backend-namespaces", null));
  return store;
}

// With --gateway-ports each (Gateway, port) is also compiled as a unit of its own (gateway/ports.ts),
// here the two Gateways' port 80: a route is compiled once for the status and again in each unit
// where what changed reaches it (a route attached elsewhere read no policy there).
const VARIANTS = [
  { name: "shared ports", config: CONFIG, ports: false },
  { name: "--gateway-ports", config: Object.freeze({ ...CONFIG, gatewayPorts: { from: 20000, to: 20009 } }), ports: true },
];

/**
 * One Compiler over `store`, its first result, and `step`: apply a change, compile, and check
 * how many Gateway API routes were compiled (`compiled` on the shared ports, `withPorts` with
 * --gateway-ports: status + units), that the result equals a full compile, and, if
 * `sameGateway` is given, whether the Gateway result is the very same object as the last one.
 */
function compileSteps(store: Store, config: CompileConfig, ports: boolean) {
  const compiler = new Compiler(config);
  const first = compiler.compile(store.snapshot());
  let last = first;
  const step = (what: string, change: () => void, compiled: number, withPorts: number, sameGateway?: boolean): CompileResult => {
    change();
    const before = gatewayRouteCompiles.count;
    const snap = store.snapshot();
    const r = compiler.compile(snap);
    expect(gatewayRouteCompiles.count - before, what).toBe(ports ? withPorts : compiled);
    expect(view(r), what).toEqual(view(compile(snap, config)));
    if (sameGateway === true) expect(r.gateway, what).toBe(last.gateway!);
    else if (sameGateway === false) expect(r.gateway === last.gateway, what).toBe(false);
    last = r;
    return r;
  };
  return { first, step };
}

describe.each(VARIANTS)("what a change compiles again in the Gateway API part ($name)", ({ config, ports }) => {
  test("each change compiles the routes that read it and no other; the result equals a full compile", () => {
    const store = cluster();
    const steps = compileSteps(store, config, ports);
    expect(steps.first.gateway?.routes.length).toBe(18);
    // Nothing compiled: the very same Gateway result, so no delta reaches the workers.
    const step = (what: string, change: () => void, compiled: number, withPorts = compiled) =>
      steps.step(what, change, compiled, withPorts, compiled === 0 ? true : undefined);
    step("a ConfigMap the routes read, metadata only", () => apply(store, "MODIFIED", configMap("h", "a", "2")), 0);
    step("a ConfigMap nothing names, its data", () => apply(store, "MODIFIED", configMap("other", "b", "2")), 0);
    const global = step("the add-headers ConfigMap, its data", () => apply(store, "MODIFIED", configMap("global", "b", "2")), 0);
    expect(global.table.globalHeaders?.response).toEqual([{ name: "x-tenant", value: ["b"] }]);
    const h = step("the auth-proxy-set-headers ConfigMap of policy p, its data", () => apply(store, "MODIFIED", configMap("h", "b", "3")), 3, 6);
    const gatewayTable = h.table.gateway ?? [...h.table.gatewayPorts!.values()].find((p) => p.gateway === `${INFRA}/all-namespaces`)!.routes!;
    const setHeaders = gatewayTable.http.get("*")!.exact.get("i0.example")![0]!.choices[0]!.match.route.options.stages!.map((s) => (s.params as { proxySetHeaders?: unknown }).proxySetHeaders);
    expect(setHeaders).toEqual([[{ name: "x-tenant", value: ["b"] }]]);
    step("policy q's basic-auth Secret", () => apply(store, "MODIFIED", users("u:{SHA}kH+B4gw5g7qzRZyPddjm4RQvhvY=\n", "2")), 1, 2);
    step("the same Secret, metadata only", () => apply(store, "MODIFIED", users("u:{SHA}kH+B4gw5g7qzRZyPddjm4RQvhvY=\n", "3")), 0);
    step("policy p", () => apply(store, "MODIFIED", policy("p", { [`${N}auth-url`]: "http://auth2.example/", [`${N}auth-proxy-set-headers`]: `${INFRA}/h` })), 3, 6);
    step("the Namespace of the Selector's routes, metadata only (the same labels)", () => apply(store, "MODIFIED", namespace("backend", "2")), 0);
    step("that Namespace's selected label", () => apply(store, "MODIFIED", namespace("other", "3")), 6, 12);
    step("that Namespace selected again", () => apply(store, "MODIFIED", namespace("backend", "4")), 6, 12);
    step("a ReferenceGrant from the HTTPRoutes of APP", () => apply(store, "ADDED", grant), 6, 18);
    step("each route's status written (status only)", () => {
      for (let i = 0; i < 12; i++) {
        const { object } = objects(route(`i${i}`, INFRA, "all-namespaces", i < 3 ? "p" : i === 3 ? "q" : null))[0]!;
        store.apply({ type: "MODIFIED", kind: "HTTPRoute", object: { ...object, metadata: { ...object.metadata, resourceVersion: "9" }, status: { parents: [] } } } as Parameters<Store["apply"]>[0]);
      }
    }, 0);
    step("the Gateway's status written (status only)", () => {
      const { object } = objects(GATEWAYS["all-namespaces"])[0]!;
      store.apply({ type: "MODIFIED", kind: "Gateway", object: { ...object, metadata: { ...object.metadata, resourceVersion: "9" }, status: { conditions: [] } } } as Parameters<Store["apply"]>[0]);
    }, 0);
    step("one HTTPRoute's spec", () => apply(store, "MODIFIED", route("i7", INFRA, "all-namespaces", "q")), 1, 3);
    // The backend every route names: compared in what is read (compile/changes.ts sameSliceGroup).
    const slice = (rv: string, ip: string) => `
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: infra-backend-v1-x, namespace: ${INFRA}, resourceVersion: "${rv}", labels: { kubernetes.io/service-name: infra-backend-v1 }, annotations: { endpoints.kubernetes.io/last-change-trigger-time: "2026-11-28T00:00:0${rv}Z" } }
addressType: IPv4
endpoints: [{ addresses: ["${ip}"], conditions: { ready: true } }]
ports: [{ name: first-port, port: 3000 }, { name: second-port, port: 3001 }]
`;
    step("the backend's EndpointSlice, resourceVersion and annotation only", () => apply(store, "MODIFIED", slice("2", "127.0.1.1")), 0);
    step("every EndpointSlice and Service relisted, equal", () => {
      store.replace("EndpointSlice", [...store.view("EndpointSlice").values()].map((o) => ({ ...o, metadata: { ...o.metadata } })));
      store.replace("Service", [...store.view("Service").values()].map((o) => ({ ...o, metadata: { ...o.metadata } })));
    }, 0);
    // A route reads a Service's spec only (gateway/rules.ts: its presence, its ports'
    // appProtocol; compile/backend-cache.ts sameService): a status or annotation write of the
    // backend every route names, which the store keeps (store/relevance.ts), compiles no route.
    step("the backend's Service, status and annotation only", () => {
      const svc = store.view("Service").get(`${INFRA}/infra-backend-v1`)!;
      const object = { ...svc, metadata: { ...svc.metadata, resourceVersion: "7", annotations: { "example.com/owner": "team-a" } }, status: { loadBalancer: { ingress: [{ ip: "192.0.2.1" }] } } };
      expect(store.apply({ type: "MODIFIED", kind: "Service", object } as Parameters<Store["apply"]>[0])).toBe(true);
    }, 0);
    step("the backend's endpoint address", () => apply(store, "MODIFIED", slice("3", "127.0.1.9")), 18, 54);
  });
});

// With --gateway-ports the ports are allocated and each unit compiled again only when the
// Gateway part gave a new result (compile/compile.ts #withGateway): a status-only HTTPRoute
// write, which the controller makes after every compile, leaves compileGateways's result the
// same object, so no unit is compiled and the ports and statuses stay the same objects.
describe("a status-only HTTPRoute write with --gateway-ports", () => {
  test("compiles no route and no port unit; the ports and statuses are the same objects", () => {
    const store = cluster();
    const config: CompileConfig = Object.freeze({ ...CONFIG, gatewayPorts: { from: 20000, to: 20009 } });
    const compiler = new Compiler(config);
    const first = compiler.compile(store.snapshot());
    expect(first.table.gatewayPorts?.size).toBe(2);
    for (let round = 1; round <= 2; round++) {
      const written = store.snapshot().httpRoutes;
      for (let i = 0; i < 12; i++) {
        const { object } = objects(route(`i${i}`, INFRA, "all-namespaces", i < 3 ? "p" : i === 3 ? "q" : null))[0]!;
        const status = { parents: [{ parentRef: { name: "all-namespaces", namespace: INFRA }, controllerName: CONTROLLER, conditions: [{ type: "Accepted", status: "True", reason: "Accepted", message: `round ${round}`, lastTransitionTime: "2026-11-28T00:00:00Z", observedGeneration: 1 }] }] };
        store.apply({ type: "MODIFIED", kind: "HTTPRoute", object: { ...object, metadata: { ...object.metadata, resourceVersion: `${10 + round}` }, status } } as Parameters<Store["apply"]>[0]);
      }
      const snap = store.snapshot();
      // The store keeps the newest version (status writers read it): the compiler sees a new map.
      expect(snap.httpRoutes).not.toBe(written);
      const routes = gatewayRouteCompiles.count;
      const units = gatewayPortCompiles.count;
      const r = compiler.compile(snap);
      expect(gatewayRouteCompiles.count - routes).toBe(0);
      expect(gatewayPortCompiles.count - units).toBe(0);
      expect(r.table.gatewayPorts).toBe(first.table.gatewayPorts!);
      expect(r.gatewayPortCertificates).toBe(first.gatewayPortCertificates!);
      expect(r.gateway).toBe(first.gateway!);
      expect(view(r)).toEqual(view(compile(snap, config)));
    }
  });
});

// A listener input (a GatewayClass, a Gateway, a listener's Secret) makes every Gateway's state
// again; the routes on a Gateway whose state changed are compiled again, and no other
// (compile/gateway/table.ts revalidateGateways). With --gateway-ports the status compile counts
// as on the shared ports, a new (Gateway, port) unit compiles every route once (gateway/ports.ts:
// a listener that cannot be served makes no unit), and a unit whose Gateway copy is the same none.
const httpsGateway = (listener: boolean, generation: number) => `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: all-namespaces, namespace: ${INFRA}, generation: ${generation} }
spec:
  gatewayClassName: portico
  listeners:
    - { name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: All } } }
${listener ? `    - { name: https, port: 443, protocol: HTTPS, hostname: i0.example, tls: { certificateRefs: [{ name: gw-cert }] }, allowedRoutes: { namespaces: { from: All } } }` : ""}
`;
const gwCert = (cn: string, rv: string) => {
  const c = createCertificate({ subjectCN: cn, sans: ["i0.example"] });
  return `
apiVersion: v1
kind: Secret
metadata: { name: gw-cert, namespace: ${INFRA}, resourceVersion: "${rv}" }
type: kubernetes.io/tls
data: { tls.crt: ${Buffer.from(c.certPem).toString("base64")}, tls.key: ${Buffer.from(c.keyPem).toString("base64")} }
`;
};
const gatewayClass = (extra: string, generation: number) => `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: portico, generation: ${generation} }
spec: { controllerName: ${CONTROLLER}${extra} }
`;
const third = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: third, namespace: ${INFRA}, generation: 1 }
spec:
  gatewayClassName: portico
  listeners: [{ name: http, port: 8080, protocol: HTTP, hostname: third.example }]
`;

describe.each(VARIANTS)("what a Gateway API listener change compiles again ($name)", ({ config, ports }) => {
  test("the routes of the Gateways whose state changed, and no other; the result equals a full compile", () => {
    const store = cluster();
    const { step } = compileSteps(store, config, ports);
    const listener = (r: CompileResult, name: string) => [...r.gateway!.gateways.values()].find((g) => g.key === `${INFRA}/all-namespaces`)!.listeners.find((l) => l.name === name)!;
    step("the GatewayClass's description (the Gateways' states are the same)", () => apply(store, "MODIFIED", gatewayClass(", description: edge", 2)), 0, 0, false);
    step("the Selector Gateway admits All (its 6 routes)", () => apply(store, "MODIFIED", GATEWAYS["backend-namespaces"].replace("from: Selector, selector: { matchLabels: { gateway-conformance: backend } }", "from: All").replace("generation: 1", "generation: 2")), 6, 12, false);
    let r = step("an HTTPS listener naming a missing Secret (the other Gateway's 12 routes)", () => apply(store, "MODIFIED", httpsGateway(true, 2)), 12, 24, false);
    expect(listener(r, "https").conditions.find((c) => c.type === "ResolvedRefs")?.status).toBe("False");
    r = step("the listener's Secret created", () => apply(store, "ADDED", gwCert("one", "1")), 12, 30, false);
    expect(listener(r, "https").attachedRoutes).toBe(1);
    // With --gateway-ports the listener's certificate is its own port's (gatewayPortCertificates).
    const certOf = (x: CompileResult) => [...x.certificates, ...[...(x.gatewayPortCertificates?.values() ?? [])].flat()].find((c) => c.host === "i0.example")?.cert;
    const cert = certOf(r);
    expect(cert).toBeDefined();
    r = step("the listener's Secret, a new certificate (the listener's state is the same)", () => apply(store, "MODIFIED", gwCert("two", "2")), 0, 0, false);
    expect(certOf(r)).toBeDefined();
    expect(certOf(r)).not.toBe(cert);
    step("the listener's Secret deleted", () => apply(store, "DELETED", gwCert("two", "3")), 12, 12, false);
    step("a third Gateway no route names", () => apply(store, "ADDED", third), 0, 18, false);
    step("the third Gateway deleted", () => apply(store, "DELETED", third), 0, 0, false);
    step("the Selector Gateway deleted (its 6 routes)", () => apply(store, "DELETED", GATEWAYS["backend-namespaces"]), 6, 6, false);
    step("the Selector Gateway created again (its 6 routes)", () => apply(store, "ADDED", GATEWAYS["backend-namespaces"]), 6, 24, false);
    step("a Gateway of a class that is not ours (the same result)", () => apply(store, "ADDED", third.replace("name: third", "name: foreign").replace("gatewayClassName: portico", "gatewayClassName: other")), 0, 0, true);
    step("the GatewayClass not accepted (every Gateway's state changes: all routes)", () => apply(store, "MODIFIED", gatewayClass(", parametersRef: { group: example.com, kind: Config, name: x }", 3)), 18, 18, false);
    step("the GatewayClass accepted again", () => apply(store, "MODIFIED", gatewayClass("", 4)), 18, 54, false);
  });
});

describe("a new Compiler for changed settings", () => {
  test("keeps the Gateway work when the settings it reads are the same", () => {
    const store = cluster();
    const c1 = new Compiler(CONFIG);
    const first = c1.compile(store.snapshot());
    const snap = store.snapshot();
    const next = (config: CompileConfig, previous: Compiler) => {
      const c = new Compiler(config, { previous });
      const before = gatewayRouteCompiles.count;
      const r = c.compile(snap);
      const compiled = gatewayRouteCompiles.count - before;
      expect(view(r)).toEqual(view(compile(snap, config)));
      return { c, r, compiled };
    };
    // An Ingress-only setting (ssl-redirect in the ConfigMap): no route compiled.
    const ssl = next({ ...CONFIG, sslRedirect: !CONFIG.sslRedirect }, c1);
    expect(ssl.compiled).toBe(0);
    expect(ssl.r.gateway).toBe(first.gateway!);
    // A source range: read by the routes' policies only (extension.ts).
    const ranges = next({ ...CONFIG, sslRedirect: !CONFIG.sslRedirect, allowlistSourceRange: ["10.0.0.0/8"] }, ssl.c);
    expect(ranges.compiled).toBe(4);
    // How a Backend is resolved: every route.
    const external = next({ ...CONFIG, allowlistSourceRange: ["10.0.0.0/8"], allowExternalNameServices: !CONFIG.allowExternalNameServices }, ranges.c);
    expect(external.compiled).toBe(18);
  });
});

describe("a settings change through the controller", () => {
  test("ssl-redirect from ingress-nginx's ConfigMap compiles the Ingresses again and no Gateway API route", async () => {
    const parsed = parseArgs(["--manifests", "/dev/null"], {});
    if (parsed.type !== "run") throw new Error("test config did not parse");
    const applied: CompileResult[] = [];
    const controller = createController({ config: parsed.config, log: createLogger({ level: "error", format: "json", write: () => {} }), onApplied: (a) => void applied.push(a.result) });
    try {
      for (const { kind, object } of objects(BASE, GATEWAYS["all-namespaces"], ...Array.from({ length: 12 }, (_, i) => route(`i${i}`, INFRA, "all-namespaces", null)))) {
        controller.sink.apply({ type: "ADDED", kind, object } as Parameters<Store["apply"]>[0]);
      }
      for (const kind of KINDS) controller.sink.synced(kind);
      await eventually(() => applied.length === 1, 10_000, "the first table");
      expect(applied[0]!.gateway?.routes.length).toBe(12);
      const before = gatewayRouteCompiles.count;
      // What runtime/nginx-settings.ts hands over when the ConfigMap's ssl-redirect changes.
      controller.setCompileConfig({ ...parsed.config, sslRedirect: !parsed.config.sslRedirect });
      await eventually(() => applied.length === 2, 10_000, "the table after the settings change");
      expect(gatewayRouteCompiles.count - before).toBe(0);
      expect(applied[1]!.gateway).toBe(applied[0]!.gateway!);
      expect(view(applied[1]!)).toEqual(view(compile(controller.store.snapshot(), { ...parsed.config, sslRedirect: !parsed.config.sslRedirect })));
    } finally {
      controller.dispose();
    }
  });
});

describe("a Gateway's client certificate CA ConfigMap (spec.tls.frontend)", () => {
  test("wakes the compiler and validates the listener again when it comes, changes or goes; a ConfigMap nobody names does not", () => {
    const store = new Store();
    const crt = createCertificate({ subjectCN: "ca.example", sans: ["ca.example"] });
    const ca = createCertificate({ subjectCN: "client-ca", isCA: true }).certPem;
    const caMap = (rv: string, pem: string) => `
apiVersion: v1
kind: ConfigMap
metadata: { name: client-ca, namespace: ${INFRA}, resourceVersion: "${rv}" }
data: { ca.crt: ${JSON.stringify(pem)} }
`;
    apply(store, "ADDED", BASE, `
apiVersion: v1
kind: Secret
metadata: { name: ca-gw-cert, namespace: ${INFRA} }
type: kubernetes.io/tls
data: { tls.crt: ${Buffer.from(crt.certPem).toString("base64")}, tls.key: ${Buffer.from(crt.keyPem).toString("base64")} }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: ca-gw, namespace: ${INFRA}, generation: 1 }
spec:
  gatewayClassName: portico
  tls: { frontend: { default: { validation: { caCertificateRefs: [{ kind: ConfigMap, group: "", name: client-ca }] } } } }
  listeners: [{ name: https, port: 443, protocol: HTTPS, tls: { certificateRefs: [{ name: ca-gw-cert }] } }]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: on-ca-gw, namespace: ${INFRA}, generation: 1 }
spec:
  parentRefs: [{ name: ca-gw }]
  hostnames: [ca.example]
  rules: [{ backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]
`);
    const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
    const listener = (r: CompileResult) => r.gateway!.gateways.get(`${INFRA}/ca-gw`)!.listeners[0]!.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`).slice(0, 2).join(" ");
    let r = compiler.compile(store.snapshot());
    expect(listener(r)).toBe("Accepted=False/NoValidCACertificate ResolvedRefs=False/InvalidCACertificateRef");
    const step = (what: string, change: () => boolean, want: string) => {
      expect(change(), `${what}: the store reports a change`).toBe(true);
      const snap = store.snapshot();
      r = compiler.compile(snap);
      expect(listener(r), what).toBe(want);
      expect(view(r), what).toEqual(view(compile(snap, DEFAULT_COMPILE_CONFIG)));
    };
    const ev = (type: "ADDED" | "MODIFIED" | "DELETED", text: string) => () => objects(text).map(({ kind, object }) => store.apply({ type, kind, object } as Parameters<Store["apply"]>[0])).some(Boolean);
    step("the CA ConfigMap created", ev("ADDED", caMap("1", ca)), "Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs");
    step("its ca.crt no longer a certificate", ev("MODIFIED", caMap("2", "junk")), "Accepted=False/NoValidCACertificate ResolvedRefs=False/InvalidCACertificateRef");
    step("a certificate again", ev("MODIFIED", caMap("3", ca)), "Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs");
    // Another CA: the route's entries check with it (the table equals a full compile's, above).
    const ca2 = createCertificate({ subjectCN: "client-ca-2", isCA: true }).certPem;
    const caOfEntry = () => (r.table.gateway?.https.get("*")?.exact.get("ca.example")?.[0]?.choices[0]!.match.route.options.stages ?? []).find((x) => x.kind === "client-cert")?.params.ca;
    expect(caOfEntry()).toEqual([ca]);
    step("another CA certificate", ev("MODIFIED", caMap("3b", ca2)), "Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs");
    expect(caOfEntry()).toEqual([ca2]);
    step("the CA ConfigMap deleted", ev("DELETED", caMap("4", ca)), "Accepted=False/NoValidCACertificate ResolvedRefs=False/InvalidCACertificateRef");
    // A ConfigMap no Gateway names is held but wakes nothing.
    expect(ev("ADDED", caMap("5", ca).replace("name: client-ca", "name: unrelated"))()).toBe(false);
  });
});
