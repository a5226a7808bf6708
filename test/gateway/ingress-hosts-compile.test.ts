// The hosts an Ingress names, at the compile and wire level (docs/design.md "Gateway API",
// "Ingress and HTTPRoute on one host"): the held lists the compile works out are what the
// proxy's lookup asks, they cross the workers' wire whole and as deltas, and the incremental
// compile equals a full one through a seeded sequence of Ingress and route edits.
import { describe, expect, test } from "bun:test";
import { compile, Compiler } from "../../src/compile/compile.ts";
import type { CompileResult } from "../../src/compile/types.ts";
import { Store } from "../../src/store/store.ts";
import { findGatewayEntry } from "../../src/table/gateway.ts";
import { serializeTable } from "../../src/table/serialize.ts";
import type { GatewayRoutes, RouteTable } from "../../src/table/types.ts";
import { applyDelta, decodeTable, encodeDelta, encodeTable, type BackendRegistry, type WireDelta, type WireTable } from "../../src/table/wire.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { seeded } from "../proxy/seeded.ts";
import { APP, BASE, GATEWAYS, INFRA, objects, WEB } from "./base.ts";

const CLASS = `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: { name: portico }
spec: { controller: portico.dev/ingress-controller }`;

const ingressYaml = (ns: string, name: string, hosts: readonly string[], version = 1, extra: { tls?: readonly string[]; alias?: string } = {}) => `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: ${name}, namespace: ${ns}, resourceVersion: "${version}", creationTimestamp: "2026-01-01T00:00:00Z"${extra.alias === undefined ? "" : `, annotations: { nginx.ingress.kubernetes.io/server-alias: "${extra.alias}" }`} }
spec:
  ingressClassName: portico
${extra.tls === undefined ? "" : `  tls: [{ hosts: [${extra.tls.map((h) => `"${h}"`).join(", ")}] }]
`}  rules:
${hosts.map((h) => `    - host: "${h}"\n      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: web-backend, port: { number: 8080 } } } }] }`).join("\n")}`;

const routeYaml = (ns: string, name: string, hostnames: readonly string[], path: string, svc: string, version = 1) => `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: ${name}, namespace: ${ns}, generation: ${version}, resourceVersion: "${version}", creationTimestamp: "2026-01-01T00:00:00Z" }
spec:
  parentRefs: [{ name: all-namespaces, namespace: ${INFRA} }]
${hostnames.length === 0 ? "" : `  hostnames: [${hostnames.map((h) => `"${h}"`).join(", ")}]\n`}  rules: [{ matches: [{ path: { type: PathPrefix, value: ${path} } }], backendRefs: [{ name: ${svc}, port: 8080 }] }]`;

function apply(store: Store, type: "ADDED" | "MODIFIED" | "DELETED", ...texts: string[]): void {
  for (const { kind, object } of objects(...texts)) store.apply({ type, kind, object } as Parameters<Store["apply"]>[0]);
}

/** Which route answers `host` + `path` on the HTTP port (`namespace/name`), or null (the Ingress table). */
function answer(g: GatewayRoutes | null | undefined, host: string, path: string): string | null {
  if (g == null) return null;
  const e = findGatewayEntry(g, false, { host, method: "GET", path, query: "", header: () => null });
  const r = e?.choices[0]?.match.route.ingress;
  return r === undefined ? null : `${r.namespace}/${r.name}`;
}

const CASES: readonly (readonly [string, string, string | null])[] = [
  ["secure.example", "/admin", null],
  ["secure.example", "/moved/x", `${WEB}/moved`],
  ["other.example", "/admin", `${APP}/tenant-any`],
  ["a.wild.example", "/admin", null],
  ["a.b.wild.example", "/admin", `${APP}/tenant-any`],
  ["tenant.example", "/admin", `${APP}/tenant-named`],
];

function world(store: Store): void {
  apply(store, "ADDED", BASE, GATEWAYS["all-namespaces"], CLASS);
  apply(store, "ADDED", ingressYaml(WEB, "secure", ["secure.example", "*.wild.example"]));
  apply(store, "ADDED", routeYaml(APP, "tenant-any", [], "/admin", "app-backend-v1"));
  apply(store, "ADDED", routeYaml(APP, "tenant-named", ["secure.example", "tenant.example"], "/admin", "app-backend-v1"));
  apply(store, "ADDED", routeYaml(WEB, "moved", ["secure.example"], "/moved", "web-backend"));
}

describe("held hosts in the compiled table", () => {
  test("the lookup asks only the owners' routes on an Ingress's hosts, the same after the workers' wire", () => {
    const store = new Store();
    world(store);
    const table = compile(store.snapshot(), DEFAULT_COMPILE_CONFIG).table;
    for (const [host, path, want] of CASES) expect(answer(table.gateway, host, path), `${host}${path}`).toBe(want);
    const registry: BackendRegistry = new Map();
    const decoded = decodeTable(JSON.parse(JSON.stringify(encodeTable(table, registry))) as WireTable, new Map());
    for (const [host, path, want] of CASES) expect(answer(decoded.gateway, host, path), `wire ${host}${path}`).toBe(want);
    expect(serializeTable(decoded).gateway).toEqual(serializeTable(table).gateway!);
    expect(serializeTable(table).gateway!.find((l) => l.port === "http")!.held).toEqual([
      { host: "secure.example", entries: [`${WEB}/moved rule 0 match 0 (secure.example)`] },
      { host: "*.wild.example", entries: [] },
    ]);
  });

  test("a delta carries the held lists: an Ingress added, a route added, the Ingress removed", () => {
    const store = new Store();
    apply(store, "ADDED", BASE, GATEWAYS["all-namespaces"], CLASS, routeYaml(APP, "tenant-any", [], "/admin", "app-backend-v1"));
    const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
    let prev: RouteTable = compiler.compile(store.snapshot()).table;
    const primary: BackendRegistry = new Map();
    const worker: BackendRegistry = new Map();
    let held = decodeTable(JSON.parse(JSON.stringify(encodeTable(prev, primary))) as WireTable, worker);
    expect(answer(held.gateway, "secure.example", "/admin")).toBe(`${APP}/tenant-any`);
    const steps: [string, () => void, string | null][] = [
      ["Ingress added", () => apply(store, "ADDED", ingressYaml(WEB, "secure", ["secure.example"])), null],
      ["Ingress edited, the same hosts", () => apply(store, "MODIFIED", ingressYaml(WEB, "secure", ["secure.example"], 2)), null],
      ["owner's route added", () => apply(store, "ADDED", routeYaml(WEB, "moved", ["secure.example"], "/admin", "web-backend")), `${WEB}/moved`],
      ["owner's route removed", () => apply(store, "DELETED", routeYaml(WEB, "moved", ["secure.example"], "/admin", "web-backend")), null],
      ["Ingress removed", () => apply(store, "DELETED", ingressYaml(WEB, "secure", ["secure.example"], 2)), `${APP}/tenant-any`],
    ];
    for (const [what, step, want] of steps) {
      step();
      const next = compiler.compile(store.snapshot()).table;
      // Claims unchanged: the Gateway part stays the same objects (the delta carries none of it).
      if (what === "Ingress edited, the same hosts") expect(next.gateway).toBe(prev.gateway);
      held = applyDelta(held, JSON.parse(JSON.stringify(encodeDelta(prev, next, primary))) as WireDelta, worker);
      expect(answer(next.gateway, "secure.example", "/admin"), what).toBe(want);
      expect(answer(held.gateway, "secure.example", "/admin"), `${what} (worker)`).toBe(want);
      expect(serializeTable(held).gateway, what).toEqual(serializeTable(next).gateway!);
      prev = next;
    }
  });

  test("a route naming another namespace's Ingress host stays Accepted, with a warning naming the host (not the other tenant's Ingress)", () => {
    const store = new Store();
    world(store);
    const r = compile(store.snapshot(), DEFAULT_COMPILE_CONFIG);
    const named = r.gateway!.routes.find((x) => x.key === `${APP}/tenant-named`)!;
    expect(named.parents.map((p) => p.conditions[0]!.status)).toEqual(["True"]);
    expect(r.diagnostics.filter((d) => d.reason === "RouteHostHeldByIngress")).toEqual([
      {
        kind: "HTTPRoute",
        namespace: APP,
        name: "tenant-named",
        reason: "RouteHostHeldByIngress",
        message: "hostname secure.example is named by an Ingress of another namespace: only routes of the namespaces of its Ingresses are asked there; this route's rules are not",
        severity: "warning",
      },
    ]);
  });
});

/** What a compile says that the held hosts change, in comparable form. */
function view(r: CompileResult) {
  return {
    table: serializeTable(r.table).gateway ?? null,
    diagnostics: r.diagnostics.filter((d) => d.kind !== "Ingress"),
    certificates: r.certificates,
  };
}

describe("the incremental compile with Ingress hosts held", () => {
  test("equals a full compile after each of a seeded sequence of Ingress and route edits", () => {
    const r = seeded(33);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
    const HOSTS = ["a.example.com", "b.example.com", "*.example.com", "x.wild.example.com", "*.wild.example.com", "alias.example.com", "tls-only.example.com"];
    const NAMESPACES = [INFRA, APP, WEB];
    const store = new Store();
    apply(store, "ADDED", BASE, GATEWAYS["all-namespaces"], CLASS);
    const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
    const ingresses = new Map<string, string>();
    const routes = new Map<string, string>();
    let held = 0;
    for (let step = 0; step < 80; step++) {
      const ns = pick(NAMESPACES);
      const n = Math.floor(r() * 4);
      const hosts = [pick(HOSTS), ...(r() < 0.4 ? [pick(HOSTS)] : [])];
      if (r() < 0.5) {
        const key = `${ns}/i${n}`;
        const was = ingresses.get(key);
        if (was !== undefined && r() < 0.3) {
          apply(store, "DELETED", was);
          ingresses.delete(key);
        } else {
          const extra = { ...(r() < 0.3 ? { tls: [pick(HOSTS), "tls-only.example.com"] } : {}), ...(r() < 0.2 ? { alias: "alias.example.com" } : {}) };
          const y = ingressYaml(ns, `i${n}`, [...new Set(hosts)], step + 2, extra);
          apply(store, was === undefined ? "ADDED" : "MODIFIED", y);
          ingresses.set(key, y);
        }
      } else {
        const key = `${ns}/r${n}`;
        const was = routes.get(key);
        if (was !== undefined && r() < 0.3) {
          apply(store, "DELETED", was);
          routes.delete(key);
        } else {
          const y = routeYaml(ns, `r${n}`, r() < 0.3 ? [] : hosts, pick(["/", "/admin", "/api"]), ns === INFRA ? "infra-backend-v1" : ns === APP ? "app-backend-v1" : "web-backend", step + 2);
          apply(store, was === undefined ? "ADDED" : "MODIFIED", y);
          routes.set(key, y);
        }
      }
      const snap = store.snapshot();
      const inc = view(compiler.compile(snap));
      expect(inc, `step ${step}`).toEqual(view(compile(snap, DEFAULT_COMPILE_CONFIG)));
      if (inc.table?.some((l) => (l.held?.length ?? 0) > 0)) held++;
    }
    // The sequence did reach held hosts, many times.
    expect(held).toBeGreaterThan(20);
  });
});
