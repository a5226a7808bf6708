// What an applied configuration changed: objects netted over a burst, routes gained and lost
// between two real compiled tables, and Ingresses that are not served said once.
import { describe, expect, test } from "bun:test";
import { Compiler } from "../../src/compile/compile.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { parseObject, type Kind } from "../../src/model/kinds.ts";
import type { Ingress } from "../../src/model/schemas.ts";
import { ChangeTracker, LIST_LIMIT, NotServedLog, routeChanges } from "../../src/runtime/changes.ts";
import { Store } from "../../src/store/store.ts";

function obj<K extends Kind>(kind: K, raw: Record<string, unknown>) {
  const p = parseObject(kind, raw);
  if (!p.ok) throw new Error(p.diagnostic.message);
  return p.object;
}

const svc = (name: string, port = 80) => obj("Service", { apiVersion: "v1", kind: "Service", metadata: { name, namespace: "a" }, spec: { ports: [{ name: "http", port }] } });
const ing = (name: string, paths: { host: string; path: string; service?: string }[], cls: string | null = "portico") =>
  obj("Ingress", {
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: { name, namespace: "a" },
    spec: {
      ...(cls ? { ingressClassName: cls } : {}),
      rules: paths.map((p) => ({ host: p.host, http: { paths: [{ path: p.path, pathType: "Prefix", backend: { service: { name: p.service ?? "web", port: { number: 80 } } } }] } })),
    },
  }) as Ingress;

describe("ChangeTracker", () => {
  test("added, updated and removed, netted over the burst; irrelevant updates are not recorded by the caller", () => {
    const store = new Store();
    const t = new ChangeTracker();
    const apply = (type: "ADDED" | "MODIFIED" | "DELETED", o: ReturnType<typeof svc>) => {
      const key = `a/${o.metadata.name}`;
      const existed = store.get("Service", key) !== undefined;
      if (store.apply({ type, kind: "Service", object: o })) t.touch("Service", key, existed);
    };
    apply("ADDED", svc("kept"));
    apply("ADDED", svc("gone"));
    t.take(store); // the first burst
    apply("MODIFIED", svc("kept", 81));
    apply("DELETED", svc("gone"));
    apply("ADDED", svc("new"));
    apply("ADDED", svc("flash"));
    apply("DELETED", svc("flash")); // added and removed within the burst: nothing
    const c = t.take(store);
    expect(c).toMatchObject({ added: ["Service a/new"], updated: ["Service a/kept"], removed: ["Service a/gone"] });
    expect([...c.kinds]).toEqual(["Service"]);
    expect(t.take(store)).toMatchObject({ added: [], updated: [], removed: [] });
  });

  test("a relist records only what differs; long lists are capped with a count", () => {
    const store = new Store();
    const t = new ChangeTracker();
    store.replace("Service", [svc("a"), svc("b")]);
    const before = store.view("Service");
    const many = Array.from({ length: LIST_LIMIT + 5 }, (_, i) => svc(`n${String(i).padStart(2, "0")}`));
    store.replace("Service", [svc("a"), svc("b", 99), ...many]);
    t.touchReplaced("Service", before, store.view("Service"));
    const c = t.take(store);
    expect(c.updated).toEqual(["Service a/b"]);
    expect(c.added).toHaveLength(LIST_LIMIT + 1);
    expect(c.added.at(-1)).toBe("… and 5 more");
  });
});

describe("routeChanges", () => {
  test("between two incremental compiles: the path that changed, nothing else", () => {
    const store = new Store();
    for (const k of ["Ingress", "IngressClass", "Service", "EndpointSlice", "Secret"] as const) store.replace(k, []);
    store.apply({ type: "ADDED", kind: "Service", object: svc("web") });
    store.apply({ type: "ADDED", kind: "Ingress", object: ing("one", [{ host: "a.test", path: "/x" }, { host: "b.test", path: "/" }]) });
    const compiler = new Compiler(DEFAULT_COMPILE_CONFIG);
    const t1 = compiler.compile(store.snapshot()).table;
    store.apply({ type: "MODIFIED", kind: "Ingress", object: ing("one", [{ host: "a.test", path: "/y" }, { host: "b.test", path: "/" }]) });
    const t2 = compiler.compile(store.snapshot()).table;
    expect(routeChanges(t1, t2)).toEqual({ gained: ["a.test/y Prefix → a/web:80"], lost: ["a.test/x Prefix → a/web:80"] });
    expect(routeChanges(t2, t2)).toEqual({ gained: [], lost: [] });
    store.apply({ type: "DELETED", kind: "Ingress", object: ing("one", []) });
    const t3 = compiler.compile(store.snapshot()).table;
    expect(routeChanges(t2, t3)).toEqual({ gained: [], lost: ["a.test/y Prefix → a/web:80", "b.test/ Prefix → a/web:80"] });
  });
});

describe("NotServedLog", () => {
  test("says why once per Ingress, again when the reason changes, and forgets served or deleted ones", () => {
    const store = new Store();
    store.replace("Ingress", [ing("other", [{ host: "o.test", path: "/" }], "nginx"), ing("none", [{ host: "n.test", path: "/" }], null), ing("ours", [{ host: "p.test", path: "/" }])]);
    const log = new NotServedLog(DEFAULT_COMPILE_CONFIG);
    const first = log.check(store.snapshot(), null);
    expect([...first.keys()].sort()).toEqual(["a/none", "a/other"]);
    expect(first.get("a/other")).toContain("nginx");
    expect(first.get("a/none")).toContain("no class");
    expect(log.check(store.snapshot(), null).size).toBe(0); // once
    store.apply({ type: "MODIFIED", kind: "Ingress", object: ing("other", [{ host: "o.test", path: "/" }], "traefik") });
    expect([...log.check(store.snapshot(), new Set(["a/other"])).values()]).toEqual([expect.stringContaining("traefik")]);
    // Served now, then not again: said again.
    store.apply({ type: "MODIFIED", kind: "Ingress", object: ing("other", [{ host: "o.test", path: "/" }]) });
    expect(log.check(store.snapshot(), new Set(["a/other"])).size).toBe(0);
    store.apply({ type: "MODIFIED", kind: "Ingress", object: ing("other", [{ host: "o.test", path: "/" }], "traefik") });
    expect(log.check(store.snapshot(), new Set(["a/other"])).size).toBe(1);
  });
});
