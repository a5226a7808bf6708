// What a change of a Secret or ConfigMap an Ingress names plans again (docs/design.md "What a
// change compiles again"): the Ingresses naming it, and only when what the compiler reads of it
// (store/relevance.ts) changed; a label, annotation or resourceVersion update plans none. Each
// step applies one change to a real Store, compiles with one long-lived Compiler, counts the
// served plans that are new objects, and holds the result equal to a full compile.
import { describe, expect, test } from "bun:test";
import { compile, Compiler, hostEntryChecks } from "../../src/compile/compile.ts";
import type { CompileResult } from "../../src/compile/types.ts";
import { parseObject, type Kind } from "../../src/model/kinds.ts";
import { Store } from "../../src/store/store.ts";
import { allRoutes } from "../../src/table/routes.ts";
import { serializeTable } from "../../src/table/serialize.ts";
import { DEFAULT_COMPILE_CONFIG } from "./config.ts";

const N = "nginx.ingress.kubernetes.io/";
const NS = "shop";
const b64 = (s: string) => Buffer.from(s, "latin1").toString("base64");

function put(store: Store, kind: Kind, raw: unknown, type: "MODIFIED" | "DELETED" = "MODIFIED"): void {
  const p = parseObject(kind, raw);
  if (!p.ok) throw new Error(p.diagnostic.message);
  store.apply({ type, kind, object: p.object } as Parameters<Store["apply"]>[0]);
}

const ingress = (name: string, annotations: Record<string, string>) => ({
  metadata: { name, namespace: NS, annotations, creationTimestamp: "2026-01-01T00:00:00Z" },
  spec: { ingressClassName: "portico", rules: [{ host: `${name}.test`, http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }] } }] },
});
const secret = (user: string, meta: Record<string, unknown>) => ({
  metadata: { name: "users", namespace: NS, uid: "u1", ...meta },
  type: "Opaque",
  data: { auth: b64(`${user}:{PLAIN}pw\n`) },
});
const configMap = (value: string, meta: Record<string, unknown>) => ({ metadata: { name: "h", namespace: NS, uid: "c1", ...meta }, data: { "X-Tenant": value } });

function view(r: CompileResult): string {
  const stages = allRoutes(r.table).map((route) => route.options.stages);
  return JSON.stringify({ table: serializeTable(r.table), stages, certificates: r.certificates, statuses: r.statuses, diagnostics: r.diagnostics });
}

describe("a Secret or ConfigMap named by Ingresses", () => {
  test("a metadata-only update plans no Ingress again; a data change plans those naming it", () => {
    const store = new Store();
    // 3 name the basic-auth Secret (auth-secret), 2 the auth-proxy-set-headers ConfigMap, 3 neither.
    for (let i = 0; i < 3; i++) put(store, "Ingress", ingress(`basic${i}`, { [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "users" }));
    for (let i = 0; i < 2; i++) put(store, "Ingress", ingress(`ext${i}`, { [`${N}auth-url`]: "http://auth.example/", [`${N}auth-proxy-set-headers`]: `${NS}/h` }));
    for (let i = 0; i < 3; i++) put(store, "Ingress", ingress(`plain${i}`, {}));
    put(store, "Secret", secret("alice", { resourceVersion: "1" }));
    put(store, "ConfigMap", configMap("a", { resourceVersion: "1" }));
    const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
    let snap = store.snapshot();
    let last = compiler.compile(snap);
    expect(compiler.inspect(snap, []).served.length).toBe(8);
    const step = (what: string, change: () => void, replanned: number) => {
      // The served list is updated in place: keep a copy of its plans.
      const before = new Set(compiler.inspect(snap, []).served);
      change();
      snap = store.snapshot();
      const r = compiler.compile(snap);
      const after = compiler.inspect(snap, []).served;
      expect(after.filter((p) => !before.has(p)).length, what).toBe(replanned);
      expect(view(r), what).toBe(view(compile(snap, DEFAULT_COMPILE_CONFIG)));
      if (replanned === 0) expect(r.table, what).toBe(last.table);
      last = r;
    };
    step("the Secret's labels, annotations and resourceVersion", () => put(store, "Secret", secret("alice", { resourceVersion: "2", labels: { team: "a" }, annotations: { note: "x" } })), 0);
    step("the ConfigMap's labels and resourceVersion", () => put(store, "ConfigMap", configMap("a", { resourceVersion: "2", labels: { team: "a" } })), 0);
    step("the Secret's data", () => put(store, "Secret", secret("bob", { resourceVersion: "3", labels: { team: "a" } })), 3);
    step("the ConfigMap's data", () => put(store, "ConfigMap", configMap("b", { resourceVersion: "3" })), 2);
    // After a metadata-only update the plans keep the earlier object: a later data change is still seen.
    step("the Secret's resourceVersion again", () => put(store, "Secret", secret("bob", { resourceVersion: "4" })), 0);
    step("the Secret's data again", () => put(store, "Secret", secret("carol", { resourceVersion: "5" })), 3);
    const users = allRoutes(last.table).find((r) => r.host === "basic0.test")!.options.stages!.map((s) => JSON.stringify(s.params));
    expect(users.some((p) => p.includes("carol"))).toBe(true);
    step("the Secret deleted", () => put(store, "Secret", secret("carol", { resourceVersion: "6" }), "DELETED"), 3);
  });
});

describe("Services and EndpointSlices compared in what is read", () => {
  const service = (i: number, meta: Record<string, unknown> = {}, status: unknown = undefined) => ({
    metadata: { name: `web${i}`, namespace: NS, uid: `s${i}`, resourceVersion: "1", ...meta },
    spec: { ports: [{ name: "http", port: 80, targetPort: 8080 }] },
    ...(status === undefined ? {} : { status }),
  });
  const slice = (i: number, ready: boolean, meta: Record<string, unknown> = {}) => ({
    metadata: { name: `web${i}-x`, namespace: NS, uid: `e${i}`, resourceVersion: "1", labels: { "kubernetes.io/service-name": `web${i}` }, ...meta },
    addressType: "IPv4",
    endpoints: [
      { addresses: ["10.0.0.1"], conditions: { ready: true, serving: true, terminating: false }, targetRef: { kind: "Pod", name: `p${i}a` } },
      { addresses: ["10.0.0.2"], conditions: { ready, serving: ready, terminating: false }, targetRef: { kind: "Pod", name: `p${i}b` } },
    ],
    ports: [{ name: "http", port: 8080 }],
  });
  const ing = (i: number) => ({
    metadata: { name: `app${i}`, namespace: NS, creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: { ingressClassName: "portico", rules: [{ host: `app${i}.test`, http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: `web${i}`, port: { number: 80 } } } }] } }] },
  });

  /** Four Ingresses, each with its Service and a ready EndpointSlice. */
  const fourApps = (): Store => {
    const store = new Store();
    for (let i = 0; i < 4; i++) {
      put(store, "Ingress", ing(i));
      put(store, "Service", service(i));
      put(store, "EndpointSlice", slice(i, true));
    }
    return store;
  };

  test("a resourceVersion, annotation or status write, or a relist of equal objects, builds no host again; a ready flip builds its host", () => {
    const store = fourApps();
    const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
    let snap = store.snapshot();
    let last = compiler.compile(snap);
    const backendOf = (r: CompileResult, host: string) => allRoutes(r.table).find((route) => route.host === host)!.backend;
    expect(backendOf(last, "app1.test").endpoints.length).toBe(2);
    /** The hosts whose entry is not the previous compile's object. */
    const step = (what: string, change: () => void, rebuilt: readonly string[]) => {
      change();
      snap = store.snapshot();
      const r = compiler.compile(snap);
      const hosts = [...r.table.exact].filter(([h, e]) => last.table.exact.get(h) !== e).map(([h]) => h);
      expect(hosts, what).toEqual([...rebuilt]);
      expect(view(r), what).toBe(view(compile(snap, DEFAULT_COMPILE_CONFIG)));
      // An unchanged host keeps its Backend object (the proxy keeps per-backend state on it).
      for (let i = 0; i < 4; i++) if (!rebuilt.includes(`app${i}.test`)) expect(backendOf(r, `app${i}.test`), what).toBe(backendOf(last, `app${i}.test`));
      last = r;
    };
    step("a slice's resourceVersion and trigger-time annotation", () => put(store, "EndpointSlice", slice(1, true, { resourceVersion: "2", annotations: { "endpoints.kubernetes.io/last-change-trigger-time": "2026-11-28T00:00:00Z" } })), []);
    step("a slice's nodeName, zone, hints and second address (not read)", () => {
      const s = slice(2, true, { resourceVersion: "2" });
      const endpoints = s.endpoints.map((e, i) => ({ ...e, addresses: [...e.addresses, `fd00::${i}`], nodeName: `node-${i}`, zone: "zone-b", hints: { forZones: [{ name: "zone-b" }] } }));
      const p = parseObject("EndpointSlice", { ...s, endpoints });
      if (!p.ok) throw new Error(p.diagnostic.message);
      // The store does not wake the compiler for it either (store/relevance.ts).
      expect(store.apply({ type: "MODIFIED", kind: "EndpointSlice", object: p.object })).toBe(false);
    }, []);
    step("a Service's resourceVersion and status", () => put(store, "Service", service(2, { resourceVersion: "2" }, { loadBalancer: {} })), []);
    step("every EndpointSlice relisted, equal", () => store.replace("EndpointSlice", [...store.view("EndpointSlice").values()].map((s) => ({ ...s, metadata: { ...s.metadata } }))), []);
    step("every Service relisted, equal", () => store.replace("Service", [...store.view("Service").values()].map((s) => ({ ...s, metadata: { ...s.metadata } }))), []);
    step("an endpoint of web1 not ready", () => put(store, "EndpointSlice", slice(1, false, { resourceVersion: "3" })), ["app1.test"]);
    expect(backendOf(last, "app1.test").endpoints.map((u) => u.address)).toEqual(["10.0.0.1"]);
    step("a Service's port", () => put(store, "Service", { ...service(3, { resourceVersion: "3" }), spec: { ports: [{ name: "http", port: 81, targetPort: 8080 }] } }), ["app3.test"]);
  });

  // A host reads a Service through resolveRef, which reads its spec only (backend-cache.ts
  // sameService): a status or annotation write, which the store keeps (store/relevance.ts counts
  // both), checks no host again; a spec change checks the hosts using it.
  test("a Service's status or annotation write checks no host again; its spec checks its host", () => {
    const store = fourApps();
    const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
    let last = compiler.compile(store.snapshot());
    const step = (what: string, change: () => boolean, checked: number) => {
      expect(change(), `${what}: the store keeps it`).toBe(true);
      const snap = store.snapshot();
      const before = hostEntryChecks.count;
      const r = compiler.compile(snap);
      expect(hostEntryChecks.count - before, what).toBe(checked);
      expect(view(r), what).toBe(view(compile(snap, DEFAULT_COMPILE_CONFIG)));
      if (checked === 0) expect(r.table, what).toBe(last.table);
      last = r;
    };
    const apply = (raw: unknown) => {
      const p = parseObject("Service", raw);
      if (!p.ok) throw new Error(p.diagnostic.message);
      return store.apply({ type: "MODIFIED", kind: "Service", object: p.object });
    };
    step("web1's status", () => apply(service(1, { resourceVersion: "2" }, { loadBalancer: { ingress: [{ ip: "192.0.2.1" }] } })), 0);
    step("web2's annotations", () => apply(service(2, { resourceVersion: "2", annotations: { "example.com/owner": "team-a" } })), 0);
    step("web3's managed-by label", () => apply(service(3, { resourceVersion: "2", labels: { "app.kubernetes.io/managed-by": "someone" } })), 0);
    step("web1's port", () => apply({ ...service(1, { resourceVersion: "3" }), spec: { ports: [{ name: "http", port: 81, targetPort: 8080 }] } }), 1);
  });
});
