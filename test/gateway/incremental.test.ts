// The Gateway API compile is incremental (docs/design.md "Gateway API"): an HTTPRoute edit
// compiles that route again and re-sorts only the route hostname lists it is on. These tests
// hold the incremental result equal to a full compile of the same snapshot through a seeded
// sequence of edits of every kind the compiler reads, and check that an edit leaves the other
// routes' entries as they were (the same objects).
import { describe, expect, test } from "bun:test";
import { compile, Compiler } from "../../src/compile/compile.ts";
import type { CompileResult } from "../../src/compile/types.ts";
import { Store } from "../../src/store/store.ts";
import type { Kind } from "../../src/model/kinds.ts";
import { serializeTable } from "../../src/table/serialize.ts";
import { applyDelta, decodeTable, encodeDelta, encodeTable, type BackendRegistry, type WireDelta, type WireTable } from "../../src/table/wire.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { seeded } from "../proxy/seeded.ts";
import { APP, BASE, CONTROLLER, GATEWAYS, INFRA, objects } from "./base.ts";
import { createCertificate } from "../tls/pki.ts";

const HOSTS = ["a.example.com", "b.example.com", "*.example.com", "*.wild.example.com", "x.wild.example.com"];
const PATHS = ["/", "/api", "/api/v1", "/static", "/exact"];
const SERVICES = ["infra-backend-v1", "infra-backend-v2", "infra-backend-v3", "missing"];
const GWS = ["same-namespace", "all-namespaces", "backend-namespaces"];

function routeYaml(r: () => number, name: string, ns: string, version: number, time: number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const hostnames = r() < 0.3 ? "" : `  hostnames: [${[pick(HOSTS), ...(r() < 0.3 ? [pick(HOSTS)] : [])].map((h) => `"${h}"`).join(", ")}]\n`;
  const rules: string[] = [];
  for (let i = 0, n = 1 + Math.floor(r() * 3); i < n; i++) {
    const type = r() < 0.3 ? "Exact" : "PathPrefix";
    const method = r() < 0.2 ? ", method: GET" : "";
    const headers = r() < 0.2 ? ", headers: [{ name: x-env, value: canary }]" : "";
    const svc = pick(SERVICES);
    const svcNs = svc.startsWith("infra") && ns !== INFRA ? `, namespace: ${INFRA}` : "";
    const x = r();
    // An ExtensionRef to an IngressNginxPolicy of the route's namespace: it reads the policy's ConfigMap or Secret.
    const filters =
      x < 0.15
        ? `, filters: [{ type: RequestRedirect, requestRedirect: { hostname: moved.example, statusCode: 301 } }]`
        : x < 0.3
          ? `, filters: [{ type: ExtensionRef, extensionRef: { group: portico.dev, kind: IngressNginxPolicy, name: ${pick(["pol", "bas"])} } }]`
          : "";
    rules.push(`    - { matches: [{ path: { type: ${type}, value: ${pick(PATHS)} }${method}${headers} }], backendRefs: [{ name: ${svc}${svcNs}, port: 8080, weight: ${1 + Math.floor(r() * 3)} }]${filters} }`);
  }
  const parents = [pick(GWS), ...(r() < 0.2 ? [pick(GWS)] : [])].map((g) => `{ name: ${g}, namespace: ${INFRA} }`).join(", ");
  return `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: ${name}, namespace: ${ns}, generation: ${version}, resourceVersion: "${version}", creationTimestamp: "2026-01-01T00:00:${String(time).padStart(2, "0")}Z" }
spec:
  parentRefs: [${parents}]
${hostnames}  rules:
${rules.join("\n")}`;
}

const N = "nginx.ingress.kubernetes.io/";
const policy = (ns: string, name: string, annotations: Record<string, string>) => `apiVersion: portico.dev/v1alpha1
kind: IngressNginxPolicy
metadata: { name: ${name}, namespace: ${ns} }
spec: { annotations: ${JSON.stringify(annotations)} }`;
const configMap = (ns: string, name: string, value: string, rv: number) => `apiVersion: v1
kind: ConfigMap
metadata: { name: ${name}, namespace: ${ns}, resourceVersion: "${rv}" }
data: { X-Tenant: "${value}" }`;
const users = (ns: string, user: string, rv: number) => `apiVersion: v1
kind: Secret
metadata: { name: users, namespace: ${ns}, resourceVersion: "${rv}" }
type: Opaque
data: { auth: ${Buffer.from(`${user}:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=\n`).toString("base64")} }`;

function apply(store: Store, type: "ADDED" | "MODIFIED" | "DELETED", ...texts: string[]): void {
  for (const { kind, object } of objects(...texts)) store.apply({ type, kind, object } as Parameters<Store["apply"]>[0]);
}

/** Two certificates for the same-namespace Gateway's HTTPS listener (tls Secret gw-cert). */
const CERTS = ["one", "two"].map((cn) => {
  const c = createCertificate({ subjectCN: cn, sans: ["*.example.com"] });
  return `apiVersion: v1
kind: Secret
metadata: { name: gw-cert, namespace: ${INFRA}, resourceVersion: "${cn}" }
type: kubernetes.io/tls
data: { tls.crt: ${Buffer.from(c.certPem).toString("base64")}, tls.key: ${Buffer.from(c.keyPem).toString("base64")} }`;
});

/** What a compile says about the Gateway API objects, in comparable form. */
function view(r: CompileResult) {
  const gw = r.gateway;
  return {
    table: serializeTable(r.table).gateway ?? null,
    routes: (gw?.routes ?? []).map((x) => ({ key: x.key, generation: x.generation, parents: x.parents.map((p) => ({ ref: p.state.parentRef, conditions: p.conditions })) })),
    classes: [...(gw?.classes.values() ?? [])],
    listeners: [...(gw?.gateways.values() ?? [])].map((g) => ({ key: g.key, conditions: g.conditions, listeners: g.listeners.map((l) => ({ name: l.name, attachedRoutes: l.attachedRoutes, conditions: l.conditions })) })),
    diagnostics: r.diagnostics.filter((d) => d.kind !== "Ingress"),
    certificates: r.certificates,
  };
}

describe("the incremental Gateway API compile", () => {
  test("equals a full compile after each of a seeded sequence of edits", () => {
    const r = seeded(28);
    const store = new Store();
    apply(store, "ADDED", BASE, ...Object.values(GATEWAYS));
    for (const ns of [APP, INFRA]) {
      apply(
        store,
        "ADDED",
        policy(ns, "pol", { [`${N}auth-url`]: "http://auth.example/", [`${N}auth-proxy-set-headers`]: `${ns}/h` }),
        policy(ns, "bas", { [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "users" }),
        configMap(ns, "h", "a", 1),
        users(ns, "u", 1),
      );
    }
    let time = 0;
    const names: { name: string; ns: string }[] = [];
    for (let i = 0; i < 30; i++) {
      const ns = i % 3 === 0 ? APP : INFRA;
      names.push({ name: `r${i}`, ns });
      apply(store, "ADDED", routeYaml(r, `r${i}`, ns, 1, time++ % 60));
    }
    const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
    expect(view(compiler.compile(store.snapshot()))).toEqual(view(compile(store.snapshot(), DEFAULT_COMPILE_CONFIG)));
    const kinds: Record<string, number> = {};
    for (let step = 0; step < 240; step++) {
      const x = r();
      const { name, ns } = names[Math.floor(r() * names.length)]!;
      let what: string;
      if (x < 0.4) {
        what = "route edited";
        apply(store, "MODIFIED", routeYaml(r, name, ns, step + 2, Math.floor(r() * 60)));
      } else if (x < 0.46) {
        what = "route deleted";
        apply(store, "DELETED", routeYaml(r, name, ns, 1, 0));
      } else if (x < 0.52) {
        what = "route added";
        const n = `n${step}`;
        names.push({ name: n, ns });
        apply(store, "ADDED", routeYaml(r, n, ns, 1, time++ % 60));
      } else if (x < 0.58) {
        what = "Service created or deleted";
        const svc = `apiVersion: v1
kind: Service
metadata: { name: missing, namespace: ${ns} }
spec: { ports: [{ name: first-port, port: 8080 }] }`;
        apply(store, store.snapshot().services.has(`${ns}/missing`) ? "DELETED" : "ADDED", svc);
      } else if (x < 0.63) {
        what = "endpoints changed";
        apply(store, "MODIFIED", `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: infra-backend-v2-x, namespace: ${INFRA}, resourceVersion: "${step}", labels: { kubernetes.io/service-name: infra-backend-v2 } }
addressType: IPv4
endpoints: [{ addresses: ["127.0.2.${step % 250}"], conditions: { ready: true } }]
ports: [{ name: first-port, port: 3000 }]`);
      } else if (x < 0.67) {
        what = "ReferenceGrant changed";
        const grant = `apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: from-app, namespace: ${INFRA} }
spec: { from: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: ${APP} }], to: [{ group: "", kind: Service }] }`;
        apply(store, store.snapshot().referenceGrants.has(`${INFRA}/from-app`) ? "DELETED" : "ADDED", grant);
      } else if (x < 0.72) {
        what = "policy ConfigMap changed";
        const y = r();
        if (y < 0.2) apply(store, store.snapshot().configMaps?.has(`${ns}/h`) ? "DELETED" : "ADDED", configMap(ns, "h", "a", step));
        // Half of the edits change the data, half only the metadata.
        else apply(store, "MODIFIED", configMap(ns, "h", y < 0.6 ? `v${step}` : (store.snapshot().configMaps?.get(`${ns}/h`)?.data?.["X-Tenant"] ?? "a"), step));
      } else if (x < 0.76) {
        what = "ConfigMap nothing reads changed";
        apply(store, "MODIFIED", configMap(ns, "unread", `v${step}`, step));
      } else if (x < 0.8) {
        what = "policy changed";
        apply(store, "MODIFIED", policy(ns, "pol", { [`${N}auth-url`]: `http://auth${step % 3}.example/`, [`${N}auth-proxy-set-headers`]: `${ns}/${r() < 0.7 ? "h" : "h2"}` }));
      } else if (x < 0.84) {
        what = "policy Secret changed";
        apply(store, "MODIFIED", users(ns, r() < 0.5 ? "u" : `u${step}`, step));
      } else if (x < 0.88) {
        what = "Namespace labels changed";
        apply(store, "MODIFIED", `apiVersion: v1
kind: Namespace
metadata: { name: ${APP}, resourceVersion: "${step}", labels: { gateway-conformance: ${r() < 0.5 ? "backend" : "other"} } }`);
      } else if (x < 0.92) {
        what = "route status written";
        const current = store.snapshot().httpRoutes.get(`${ns}/${name}`);
        if (current !== undefined) store.apply({ type: "MODIFIED", kind: "HTTPRoute", object: { ...current, metadata: { ...current.metadata, resourceVersion: `s${step}` }, status: { parents: [] } } });
      } else {
        // A listener input: one Gateway's listener, the same-namespace Gateway's HTTPS listener
        // and its Secret, or the GatewayClass (compile/gateway/table.ts revalidateGateways).
        what = "Gateway listener changed";
        const y = r();
        if (y < 0.4)
          apply(store, "MODIFIED", `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: all-namespaces, namespace: ${INFRA}, generation: ${step} }
spec:
  gatewayClassName: portico
  listeners:
    - { name: http, port: 80, protocol: HTTP, ${r() < 0.5 ? 'hostname: "*.example.com", ' : ""}allowedRoutes: { namespaces: { from: All } } }`);
        else if (y < 0.6)
          apply(store, "MODIFIED", `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: same-namespace, namespace: ${INFRA}, generation: ${step} }
spec:
  gatewayClassName: portico
  listeners:
    - { name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: Same } } }
${r() < 0.7 ? "    - { name: https, port: 443, protocol: HTTPS, tls: { certificateRefs: [{ name: gw-cert }] }, allowedRoutes: { namespaces: { from: Same } } }" : ""}`);
        else if (y < 0.8) {
          const has = store.snapshot().secrets.has(`${INFRA}/gw-cert`);
          apply(store, has && r() < 0.4 ? "DELETED" : has ? "MODIFIED" : "ADDED", CERTS[step % 2]!);
        } else
          apply(store, "MODIFIED", `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: portico, generation: ${step} }
spec: { controllerName: ${CONTROLLER}${r() < 0.3 ? ", parametersRef: { group: example.com, kind: Config, name: x }" : r() < 0.5 ? ", description: d" : ""} }`);
      }
      kinds[what] = (kinds[what] ?? 0) + 1;
      const snap = store.snapshot();
      expect(view(compiler.compile(snap)), `step ${step}: ${what}`).toEqual(view(compile(snap, DEFAULT_COMPILE_CONFIG)));
    }
    // The GatewayClass accepted at the end (the sequence may leave it refused: no table).
    apply(store, "MODIFIED", `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: portico, generation: 999 }
spec: { controllerName: ${CONTROLLER} }`);
    expect(view(compiler.compile(store.snapshot()))).toEqual(view(compile(store.snapshot(), DEFAULT_COMPILE_CONFIG)));
    const last = view(compile(store.snapshot(), DEFAULT_COMPILE_CONFIG));
    expect(last.table?.length ?? 0).toBeGreaterThan(0);
    expect(last.routes.length).toBeGreaterThan(20);
    expect(last.diagnostics.length).toBeGreaterThan(0);
    // Routes reading a policy (and through it a ConfigMap or a Secret) were among them.
    expect([...store.snapshot().httpRoutes.values()].filter((x) => JSON.stringify(x.spec).includes("ExtensionRef")).length).toBeGreaterThan(2);
    // Every kind of edit happened.
    expect(Object.keys(kinds).sort()).toEqual([
      "ConfigMap nothing reads changed",
      "Gateway listener changed",
      "Namespace labels changed",
      "ReferenceGrant changed",
      "Service created or deleted",
      "endpoints changed",
      "policy ConfigMap changed",
      "policy Secret changed",
      "policy changed",
      "route added",
      "route deleted",
      "route edited",
      "route status written",
    ]);
  });

  test("an HTTPRoute edit compiles that route again and leaves the other routes' entries as they were", () => {
    const route = (name: string, host: string, path: string) => `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: ${name}, namespace: ${INFRA}, generation: 1 }
spec:
  parentRefs: [{ name: same-namespace }]
  hostnames: [${host}]
  rules: [{ matches: [{ path: { type: PathPrefix, value: ${path} } }], backendRefs: [{ name: infra-backend-v1, port: 8080 }] }]`;
    const store = new Store();
    apply(store, "ADDED", BASE, GATEWAYS["same-namespace"], route("one", "one.example", "/a"), route("two", "two.example", "/b"));
    const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
    const before = compiler.compile(store.snapshot()).table.gateway!.http.get("*")!;
    apply(store, "MODIFIED", route("one", "one.example", "/c"));
    const after = compiler.compile(store.snapshot()).table.gateway!.http.get("*")!;
    expect(after.exact.get("one.example")![0]!.match.path).toBe("/c");
    // The route hostname list of the route not edited is the very same (not compiled again).
    expect(after.exact.get("two.example")).toBe(before.exact.get("two.example")!);
    // The earlier table is left as it was.
    expect(before.exact.get("one.example")![0]!.match.path).toBe("/a");
  });
});

describe("the Gateway API part through the workers' wire", () => {
  test("an HTTPRoute edit sends its route hostname lists, not the whole Gateway part, and the receiver's table equals the primary's", () => {
    const route = (i: number, path: string) => `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: r${i}, namespace: ${INFRA}, generation: 1 }
spec:
  parentRefs: [{ name: all-namespaces }]
  hostnames: [h${i}.example.com${i === 10 ? ", '*.w.example.com'" : ""}]
  rules: [{ matches: [{ path: { type: PathPrefix, value: ${path} } }], backendRefs: [{ name: infra-backend-v${1 + (i % 3)}, port: 8080 }] }]`;
    const store = new Store();
    apply(store, "ADDED", BASE, GATEWAYS["all-namespaces"], ...Array.from({ length: 300 }, (_, i) => route(i, "/a")));
    const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
    let prev = compiler.compile(store.snapshot()).table;
    const primary: BackendRegistry = new Map();
    const full = JSON.stringify(encodeTable(prev, primary));
    const worker: BackendRegistry = new Map();
    let held = decodeTable(JSON.parse(full) as WireTable, worker);
    const edits: [string, () => void][] = [
      ["edit", () => apply(store, "MODIFIED", route(7, "/b"))],
      ["edit with a wildcard hostname", () => apply(store, "MODIFIED", route(10, "/c"))],
      ["add", () => apply(store, "ADDED", route(300, "/d"))],
      ["delete", () => apply(store, "DELETED", route(8, "/a"))],
    ];
    for (const [what, edit] of edits) {
      edit();
      const next = compiler.compile(store.snapshot()).table;
      const json = JSON.stringify(encodeDelta(prev, next, primary));
      // The whole Gateway part of 300 routes is tens of kilobytes; one route's lists are not.
      expect(json.length, what).toBeLessThan(full.length / 20);
      held = applyDelta(held, JSON.parse(json) as WireDelta, worker);
      expect(serializeTable(held).gateway, what).toEqual(serializeTable(next).gateway!);
      prev = next;
    }
    // Removing the last Gateway drops the part on the receiver too.
    apply(store, "DELETED", GATEWAYS["all-namespaces"]);
    const none = compiler.compile(store.snapshot()).table;
    held = applyDelta(held, JSON.parse(JSON.stringify(encodeDelta(prev, none, primary))) as WireDelta, worker);
    expect(held.gateway ?? null).toBeNull();
  });
});
