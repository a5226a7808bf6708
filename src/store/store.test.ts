import { describe, expect, test } from "bun:test";
import type { EndpointSlice, Ingress, IngressClass, Secret, Service } from "../model/schemas.ts";
import { Store } from "./store.ts";
import { parseObject, type KindObjects } from "../model/kinds.ts";

function ingress(name: string, extra: Partial<Ingress> & { rv?: string; annotations?: Record<string, string> } = {}): Ingress {
  const { rv, annotations, ...rest } = extra;
  return {
    metadata: { name, namespace: "default", resourceVersion: rv ?? "1", creationTimestamp: "2026-01-01T00:00:00Z", annotations },
    spec: { rules: [{ host: "a.test", http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }] } }] },
    ...rest,
  } as Ingress;
}

function slice(name: string, service: string | null, ips: string[], ns = "default"): EndpointSlice {
  return {
    metadata: { name, namespace: ns, labels: service ? { "kubernetes.io/service-name": service } : {} },
    addressType: "IPv4",
    endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })),
    ports: [{ name: "http", port: 8080 }],
  } as EndpointSlice;
}

function secret(name: string, type: string | undefined, data: Record<string, string>, rv = "1"): Secret {
  return { metadata: { name, namespace: "default", resourceVersion: rv }, type, data } as Secret;
}

const service = (name: string, port = 80, rv = "1"): Service =>
  ({ metadata: { name, namespace: "default", resourceVersion: rv }, spec: { type: "ClusterIP", ports: [{ name: "http", port }] } }) as Service;

describe("Ingress relevance", () => {
  test("add, then status/resourceVersion/managedFields-only change is not relevant", () => {
    const s = new Store();
    expect(s.apply({ type: "ADDED", kind: "Ingress", object: ingress("a") })).toBe(true);
    const noisy = { ...ingress("a", { rv: "2", status: { loadBalancer: { ingress: [{ ip: "1.2.3.4" }] } } }) };
    (noisy.metadata as Record<string, unknown>).managedFields = [{ manager: "kubectl" }];
    expect(s.apply({ type: "MODIFIED", kind: "Ingress", object: noisy })).toBe(false);
    // The newest version is still kept (status writers read it).
    expect(s.get("Ingress", "default/a")?.metadata.resourceVersion).toBe("2");
    // kubectl's last-applied-configuration, rewritten on every apply, is dropped at validation.
    const applied = parseObject("Ingress", ingress("a", { rv: "3", annotations: { "kubectl.kubernetes.io/last-applied-configuration": "{}" } }));
    expect(applied.ok && s.apply({ type: "MODIFIED", kind: "Ingress", object: applied.object })).toBe(false);
  });

  test("spec, class annotation and creationTimestamp changes are relevant", () => {
    const s = new Store();
    s.apply({ type: "ADDED", kind: "Ingress", object: ingress("a") });
    const changedSpec = ingress("a", { rv: "2" });
    (changedSpec.spec as { ingressClassName?: string }).ingressClassName = "portico";
    expect(s.apply({ type: "MODIFIED", kind: "Ingress", object: changedSpec })).toBe(true);
    expect(s.apply({ type: "MODIFIED", kind: "Ingress", object: ingress("a", { annotations: { "kubernetes.io/ingress.class": "portico" } }) })).toBe(true);
    const older = ingress("a", { annotations: { "kubernetes.io/ingress.class": "portico" } });
    (older.metadata as { creationTimestamp: string }).creationTimestamp = "2020-01-01T00:00:00Z";
    expect(s.apply({ type: "MODIFIED", kind: "Ingress", object: older })).toBe(true);
  });

  test("delete is relevant once; deleting an unknown object is not", () => {
    const s = new Store();
    s.apply({ type: "ADDED", kind: "Ingress", object: ingress("a") });
    expect(s.apply({ type: "DELETED", kind: "Ingress", object: ingress("a") })).toBe(true);
    expect(s.apply({ type: "DELETED", kind: "Ingress", object: ingress("a") })).toBe(false);
    expect(s.snapshot().ingresses.size).toBe(0);
  });

  test("a duplicate ADDED with equal content is not relevant", () => {
    const s = new Store();
    s.apply({ type: "ADDED", kind: "Ingress", object: ingress("a") });
    expect(s.apply({ type: "ADDED", kind: "Ingress", object: ingress("a", { rv: "9" }) })).toBe(false);
  });
});

describe("other kinds", () => {
  test("Service: ports and type matter, resourceVersion does not", () => {
    const s = new Store();
    expect(s.apply({ type: "ADDED", kind: "Service", object: service("web") })).toBe(true);
    expect(s.apply({ type: "MODIFIED", kind: "Service", object: service("web", 80, "2") })).toBe(false);
    expect(s.apply({ type: "MODIFIED", kind: "Service", object: service("web", 81, "3") })).toBe(true);
  });

  test("IngressClass: default-class annotation matters; cluster-scoped key is the name", () => {
    const s = new Store();
    const ic = (ann?: Record<string, string>): IngressClass =>
      ({ metadata: { name: "portico", annotations: ann }, spec: { controller: "portico.dev/ingress-controller" } }) as IngressClass;
    s.apply({ type: "ADDED", kind: "IngressClass", object: ic() });
    expect(s.apply({ type: "MODIFIED", kind: "IngressClass", object: ic({ "ingressclass.kubernetes.io/is-default-class": "true" }) })).toBe(true);
    expect(s.snapshot().ingressClasses.has("portico")).toBe(true);
  });

  test("Secrets: TLS ones matter; others are kept without waking the compiler; a type Portico never reads deletes", () => {
    const s = new Store();
    expect(s.apply({ type: "ADDED", kind: "Secret", object: secret("db", "Opaque", { password: "eA==" }) })).toBe(false);
    expect(s.apply({ type: "ADDED", kind: "Secret", object: secret("plain", undefined, { "tls.crt": "x", "tls.key": "y" }) })).toBe(true);
    expect(s.apply({ type: "ADDED", kind: "Secret", object: secret("tls", "kubernetes.io/tls", { "tls.crt": "x" }) })).toBe(true);
    expect(s.apply({ type: "MODIFIED", kind: "Secret", object: secret("tls", "kubernetes.io/tls", { "tls.crt": "x" }, "2") })).toBe(false);
    expect(s.apply({ type: "MODIFIED", kind: "Secret", object: secret("tls", "kubernetes.io/tls", { "tls.crt": "z" }, "3") })).toBe(true);
    expect(s.apply({ type: "ADDED", kind: "Secret", object: secret("token", "kubernetes.io/service-account-token", { token: "eA==" }) })).toBe(false);
    expect([...s.snapshot().secrets.keys()].sort()).toEqual(["default/db", "default/plain", "default/tls"]);
    // TLS → Opaque: still kept (an Ingress may name it in auth-secret), and the change matters.
    expect(s.apply({ type: "MODIFIED", kind: "Secret", object: secret("tls", "Opaque", { "tls.crt": "z" }, "4") })).toBe(true);
    expect(s.apply({ type: "MODIFIED", kind: "Secret", object: secret("tls", "Opaque", { "tls.crt": "w" }, "5") })).toBe(false);
    expect(s.apply({ type: "MODIFIED", kind: "Secret", object: secret("db", "helm.sh/release.v1", {}, "2") })).toBe(false);
    expect([...s.snapshot().secrets.keys()].sort()).toEqual(["default/plain", "default/tls"]);
  });

  test("a Secret an IngressNginxPolicy names in auth-secret matters like an Ingress's; a relist of either kind keeps the other's", () => {
    const s = new Store();
    const policy = (name: string, secretName: string) =>
      ({ metadata: { name, namespace: "default", resourceVersion: "1" }, spec: { annotations: { "nginx.ingress.kubernetes.io/auth-secret": secretName } } }) as KindObjects["IngressNginxPolicy"];
    expect(s.apply({ type: "ADDED", kind: "Secret", object: secret("users", "Opaque", { auth: "eA==" }) })).toBe(false);
    expect(s.apply({ type: "ADDED", kind: "IngressNginxPolicy", object: policy("p", "users") })).toBe(true);
    expect(s.apply({ type: "MODIFIED", kind: "Secret", object: secret("users", "Opaque", { auth: "eQ==" }, "2") })).toBe(true);
    // An Ingress relist does not forget the policy's reference.
    s.replace("Ingress", []);
    expect(s.apply({ type: "MODIFIED", kind: "Secret", object: secret("users", "Opaque", { auth: "eg==" }, "3") })).toBe(true);
    s.replace("IngressNginxPolicy", []);
    expect(s.apply({ type: "MODIFIED", kind: "Secret", object: secret("users", "Opaque", { auth: "eA==" }, "4") })).toBe(false);
    expect(s.snapshot().ingressNginxPolicies?.size).toBe(0);
  });

  test("a Secret an Ingress names in auth-secret matters while it is named, whichever arrives first", () => {
    const seen: string[] = [];
    const s = new Store({ onChange: (k) => seen.push(k) });
    // The Secret first: kept quietly, then read when the Ingress arrives (an Ingress change).
    expect(s.apply({ type: "ADDED", kind: "Secret", object: secret("users", "Opaque", { auth: "eA==" }) })).toBe(false);
    expect(s.apply({ type: "ADDED", kind: "Ingress", object: ingress("a", { annotations: { "nginx.ingress.kubernetes.io/auth-secret": "users" } }) })).toBe(true);
    expect(s.snapshot().secrets.has("default/users")).toBe(true);
    expect(s.apply({ type: "MODIFIED", kind: "Secret", object: secret("users", "Opaque", { auth: "eQ==" }, "2") })).toBe(true);
    expect(s.apply({ type: "MODIFIED", kind: "Secret", object: secret("users", "Opaque", { auth: "eQ==" }, "3") })).toBe(false);
    // Named as namespace/name, by a second Ingress, and under the portico.dev name.
    s.apply({ type: "ADDED", kind: "Ingress", object: ingress("b", { annotations: { "portico.dev/auth-secret": "default/users" } }) });
    s.apply({ type: "DELETED", kind: "Ingress", object: ingress("a") });
    expect(s.apply({ type: "MODIFIED", kind: "Secret", object: secret("users", "Opaque", { auth: "eg==" }, "4") })).toBe(true);
    s.apply({ type: "MODIFIED", kind: "Ingress", object: ingress("b", { rv: "2" }) });
    expect(s.apply({ type: "MODIFIED", kind: "Secret", object: secret("users", "Opaque", { auth: "eA==" }, "5") })).toBe(false);
    // Named again, then deleted: the deletion matters (the route must fail closed).
    s.apply({ type: "MODIFIED", kind: "Ingress", object: ingress("b", { rv: "3", annotations: { "nginx.ingress.kubernetes.io/auth-secret": "users" } }) });
    expect(s.apply({ type: "DELETED", kind: "Secret", object: secret("users", "Opaque", {}) })).toBe(true);
    expect(s.snapshot().secrets.has("default/users")).toBe(false);
    // A relist of Ingresses rebuilds who names what; a relist of Secrets reports named ones only.
    s.replace("Ingress", [ingress("c", { annotations: { "nginx.ingress.kubernetes.io/auth-secret": "other" } })]);
    expect(s.replace("Secret", [secret("users", "Opaque", { auth: "eA==" })])).toBe(false);
    expect(s.replace("Secret", [secret("users", "Opaque", { auth: "eA==" }), secret("other", "Opaque", { auth: "eA==" })])).toBe(true);
    expect(s.replace("Secret", [secret("other", "Opaque", { auth: "eA==" })])).toBe(false);
    expect(s.replace("Secret", [])).toBe(true);
    expect(seen.filter((k) => k === "Secret").length).toBe(5);
  });

  test("a Secret an Ingress names in proxy-ssl-secret matters while it is named", () => {
    const s = new Store();
    expect(s.apply({ type: "ADDED", kind: "Secret", object: secret("upstream", "Opaque", { "ca.crt": "eA==" }) })).toBe(false);
    s.apply({ type: "ADDED", kind: "Ingress", object: ingress("a", { annotations: { "nginx.ingress.kubernetes.io/proxy-ssl-secret": "default/upstream" } }) });
    expect(s.apply({ type: "MODIFIED", kind: "Secret", object: secret("upstream", "Opaque", { "ca.crt": "eQ==" }, "2") })).toBe(true);
    s.apply({ type: "MODIFIED", kind: "Ingress", object: ingress("a", { rv: "2" }) });
    expect(s.apply({ type: "MODIFIED", kind: "Secret", object: secret("upstream", "Opaque", { "ca.crt": "eg==" }, "3") })).toBe(false);
  });

  test("a ConfigMap matters only while an Ingress names it in auth-proxy-set-headers as <own namespace>/<name>", () => {
    const cm = (name: string, value: string, rv = "1") => ({ metadata: { name, namespace: "default", resourceVersion: rv }, data: { "X-A": value } });
    const names = (v: string) => ({ annotations: { "nginx.ingress.kubernetes.io/auth-url": "http://a.example/", "nginx.ingress.kubernetes.io/auth-proxy-set-headers": v } });
    const s = new Store();
    // Kept (a --manifests file holds any ConfigMap), but not named: no compile.
    expect(s.apply({ type: "ADDED", kind: "ConfigMap", object: cm("h", "1") })).toBe(false);
    expect(s.apply({ type: "ADDED", kind: "Ingress", object: ingress("a", names("default/h")) })).toBe(true);
    expect(s.apply({ type: "MODIFIED", kind: "ConfigMap", object: cm("h", "2", "2") })).toBe(true);
    expect(s.apply({ type: "MODIFIED", kind: "ConfigMap", object: cm("h", "2", "3") })).toBe(false);
    // A bare name, or another namespace, can never be found (authreq/main.go): nothing is named.
    s.apply({ type: "MODIFIED", kind: "Ingress", object: ingress("a", { rv: "2", ...names("h") }) });
    expect(s.apply({ type: "MODIFIED", kind: "ConfigMap", object: cm("h", "3", "4") })).toBe(false);
    s.apply({ type: "MODIFIED", kind: "Ingress", object: ingress("a", { rv: "3", ...names("other/h") }) });
    expect(s.apply({ type: "MODIFIED", kind: "ConfigMap", object: cm("h", "4", "5") })).toBe(false);
    // Named again; a relist of Ingresses without it forgets the name.
    s.apply({ type: "MODIFIED", kind: "Ingress", object: ingress("a", { rv: "4", ...names("default/h") }) });
    expect(s.apply({ type: "DELETED", kind: "ConfigMap", object: cm("h", "4") })).toBe(true);
    expect(s.replace("ConfigMap", [cm("h", "5")])).toBe(true);
    s.replace("Ingress", [ingress("b")]);
    expect(s.replace("ConfigMap", [cm("h", "6")])).toBe(false);
    expect(s.snapshot().configMaps?.get("default/h")?.data).toEqual({ "X-A": "6" });
  });
});

describe("EndpointSlice index", () => {
  test("grouped by namespace/service label, sorted by slice name; unlabelled slices ignored", () => {
    const s = new Store();
    s.apply({ type: "ADDED", kind: "EndpointSlice", object: slice("web-b", "web", ["10.0.0.2"]) });
    s.apply({ type: "ADDED", kind: "EndpointSlice", object: slice("web-a", "web", ["10.0.0.1"]) });
    s.apply({ type: "ADDED", kind: "EndpointSlice", object: slice("other-ns", "web", ["10.0.0.9"], "prod") });
    s.apply({ type: "ADDED", kind: "EndpointSlice", object: slice("orphan", null, ["10.0.0.3"]) });
    const snap = s.snapshot();
    expect(snap.endpointSlices.get("default/web")?.map((x) => x.metadata.name)).toEqual(["web-a", "web-b"]);
    expect(snap.endpointSlices.get("prod/web")?.length).toBe(1);
    expect(snap.endpointSlices.size).toBe(2);
  });

  test("endpoint changes are relevant; a relabelled slice moves; deleting the last slice drops the group", () => {
    const s = new Store();
    s.apply({ type: "ADDED", kind: "EndpointSlice", object: slice("x", "web", ["10.0.0.1"]) });
    expect(s.apply({ type: "MODIFIED", kind: "EndpointSlice", object: slice("x", "web", ["10.0.0.1"]) })).toBe(false);
    expect(s.apply({ type: "MODIFIED", kind: "EndpointSlice", object: slice("x", "web", ["10.0.0.2"]) })).toBe(true);
    expect(s.snapshot().endpointSlices.get("default/web")?.[0]?.endpoints?.[0]?.addresses).toEqual(["10.0.0.2"]);
    expect(s.apply({ type: "MODIFIED", kind: "EndpointSlice", object: slice("x", "api", ["10.0.0.2"]) })).toBe(true);
    expect([...s.snapshot().endpointSlices.keys()]).toEqual(["default/api"]);
    expect(s.apply({ type: "DELETED", kind: "EndpointSlice", object: slice("x", "api", []) })).toBe(true);
    expect(s.snapshot().endpointSlices.size).toBe(0);
  });
});

describe("replace (relist)", () => {
  test("objects deleted in between disappear; identical relist is not relevant", () => {
    const s = new Store();
    s.replace("Ingress", [ingress("a"), ingress("b")]);
    expect(s.replace("Ingress", [ingress("a", { rv: "5" }), ingress("b", { rv: "6" })])).toBe(false);
    expect(s.replace("Ingress", [ingress("a")])).toBe(true);
    expect([...s.snapshot().ingresses.keys()]).toEqual(["default/a"]);
    expect(s.replace("Ingress", [ingress("c")])).toBe(true); // same size, different key
  });

  test("relisting slices rebuilds the index; secrets are filtered", () => {
    const s = new Store();
    s.apply({ type: "ADDED", kind: "EndpointSlice", object: slice("old", "gone", ["10.0.0.1"]) });
    s.replace("EndpointSlice", [slice("n1", "web", ["10.0.0.5"]), slice("n0", "web", ["10.0.0.4"])]);
    const snap = s.snapshot();
    expect([...snap.endpointSlices.keys()]).toEqual(["default/web"]);
    expect(snap.endpointSlices.get("default/web")?.map((x) => x.metadata.name)).toEqual(["n0", "n1"]);
    expect(s.replace("Secret", [secret("db", "Opaque", {}), secret("t", "kubernetes.io/tls", { "tls.crt": "x" }), secret("k", "kubernetes.io/dockerconfigjson", {})])).toBe(true);
    expect([...s.snapshot().secrets.keys()].sort()).toEqual(["default/db", "default/t"]);
  });
});

describe("sync state and listener", () => {
  test("allSynced needs every listed kind", () => {
    const s = new Store();
    expect(s.allSynced(["Ingress", "Service"])).toBe(false);
    s.synced("Ingress");
    expect(s.allSynced(["Ingress", "Service"])).toBe(false);
    s.synced("Service");
    expect(s.allSynced(["Ingress", "Service"])).toBe(true);
    expect(s.allSynced()).toBe(false);
  });

  test("onChange fires once per relevant change and never for an irrelevant one", () => {
    const seen: string[] = [];
    const s = new Store({ onChange: (k) => seen.push(k) });
    s.apply({ type: "ADDED", kind: "Service", object: service("web") });
    s.apply({ type: "MODIFIED", kind: "Service", object: service("web", 80, "2") });
    s.replace("Ingress", [ingress("a")]);
    s.replace("Ingress", [ingress("a", { rv: "2" })]); // a relist that changes nothing relevant
    expect(seen).toEqual(["Service", "Ingress"]);
  });
});

describe("snapshots", () => {
  test("a snapshot does not change after later applies", () => {
    const s = new Store();
    s.apply({ type: "ADDED", kind: "Ingress", object: ingress("a") });
    s.apply({ type: "ADDED", kind: "EndpointSlice", object: slice("x", "web", ["10.0.0.1"]) });
    const before = s.snapshot();
    s.apply({ type: "ADDED", kind: "Ingress", object: ingress("b") });
    s.apply({ type: "DELETED", kind: "Ingress", object: ingress("a") });
    s.apply({ type: "ADDED", kind: "EndpointSlice", object: slice("y", "web", ["10.0.0.2"]) });
    s.replace("Service", [service("web")]);
    expect([...before.ingresses.keys()]).toEqual(["default/a"]);
    expect(before.endpointSlices.get("default/web")?.length).toBe(1);
    expect(before.services.size).toBe(0);
    const after = s.snapshot();
    expect([...after.ingresses.keys()]).toEqual(["default/b"]);
    expect(after.endpointSlices.get("default/web")?.length).toBe(2);
  });

  test("10k Ingresses: a snapshot copies nothing, and a write copies only the kind it changes", () => {
    const s = new Store();
    s.replace("Ingress", Array.from({ length: 10_000 }, (_, i) => ingress(`ing-${i}`)));
    s.replace("Service", [service("web")]);
    // Snapshots without a write between them share every map (copy-on-write: cow-map.ts).
    const a = s.snapshot();
    const b = s.snapshot();
    expect(b.ingresses).toBe(a.ingresses);
    expect(b.services).toBe(a.services);
    // A write gives the next snapshot a new map of that kind only; the earlier one is untouched.
    s.apply({ type: "MODIFIED", kind: "Ingress", object: ingress("ing-1", { annotations: { n: "1" } }) });
    const c = s.snapshot();
    expect(c.ingresses).not.toBe(a.ingresses);
    expect(c.services).toBe(a.services);
    expect(a.ingresses.get("default/ing-1")?.metadata.annotations).toBeUndefined();
    expect(c.ingresses.get("default/ing-1")?.metadata.annotations).toEqual({ n: "1" });
    expect(c.ingresses.size).toBe(10_000);
  });
});

describe("deepEqual", () => {
  test("key order and undefined keys do not matter; values and array order do", async () => {
    const { deepEqual } = await import("./relevance.ts");
    expect(deepEqual({ a: 1, b: [1, { c: "x" }] }, { b: [1, { c: "x" }], a: 1 })).toBe(true);
    expect(deepEqual({ a: 1, u: undefined }, { a: 1 })).toBe(true);
    expect(deepEqual({ a: 1 }, { a: 1, b: null })).toBe(false);
    expect(deepEqual([1, 2], [2, 1])).toBe(false);
    expect(deepEqual({ a: [] }, { a: {} })).toBe(false);
    expect(deepEqual(null, {})).toBe(false);
  });
});
