// A long-lived Compiler (src/compile/compile.ts) must give exactly what the same rules give
// from empty caches. Random edit sequences go through the real Store (so snapshots share
// unchanged objects the way they do in production); after each burst of edits the long-lived
// Compiler is compared with a fresh one (compile()): routes, precedence, backends,
// certificates, statuses, diagnostics, and what explain says from each. What the rules
// themselves say is held by the goldens.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Compiler, compile } from "../../src/compile/compile.ts";
import type { CompileConfig } from "../../src/compile/config.ts";
import { DEFAULT_COMPILE_CONFIG } from "./config.ts";
import { explain, type ExplainRequest } from "../../src/compile/explain.ts";
import type { CompileResult } from "../../src/compile/types.ts";
import { parseObject, type Kind } from "../../src/model/kinds.ts";
import { Store } from "../../src/store/store.ts";
import type { StoreEvent } from "../../src/store/types.ts";
import { allRoutes } from "../../src/table/routes.ts";
import { serializeTable } from "../../src/table/serialize.ts";
import type { Backend } from "../../src/table/types.ts";
import { rng } from "../../bench/lib/cp-gen.ts";
import { loadFixture } from "./snapshot.ts";

type Obj = Record<string, unknown>;

/** Everything a compile result says, as one string (key order as produced). */
function view(r: CompileResult): string {
  // serializeTable redacts basic-auth users: the stages are compared as they are too.
  const stages = allRoutes(r.table).map((route) => route.options.stages);
  return JSON.stringify({ table: serializeTable(r.table), stages, certificates: r.certificates, statuses: r.statuses, diagnostics: r.diagnostics });
}

/** Within one table, one Backend object per id (the proxy keys per-backend state on it). */
function backendsShared(r: CompileResult): boolean {
  const seen = new Map<string, Backend>();
  const routes = allRoutes(r.table);
  if (r.table.defaultRoute) routes.push(r.table.defaultRoute);
  for (const route of routes) {
    const prev = seen.get(route.backend.id);
    if (prev !== undefined && prev !== route.backend) return false;
    seen.set(route.backend.id, route.backend);
  }
  return true;
}

/** A small world where collisions are frequent: few hosts, paths, services, timestamps. */
function generator(seed: number) {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const chance = (p: number) => r() < p;
  const NS = ["a", "b"];
  const HOSTS = ["x.test", "y.test", "*.w.test", "q.w.test", "", "Bad_Host", "10.0.0.1", "*.x.test"];
  const PATHS = ["/", "/api", "/api/", "/api/v1", "/static", "/a//b", "/%7Euser", "relative", "/bad?q", "/API", "/api/(v[0-9])(/|$)(.*)", "/(a)\\1", "/a;b"];
  const TYPES = ["Prefix", "Exact", "ImplementationSpecific"] as const;
  const SVCS = ["s1", "s2", "s3", "ext"];
  const TIMES = ["2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z", undefined];
  let rv = 0;
  const meta = (ns: string, name: string, extra: Obj = {}): Obj => ({ name, namespace: ns, uid: `u-${ns}-${name}`, resourceVersion: String(++rv), ...extra });

  const backend = (): Obj => {
    const x = r();
    if (x < 0.04) return {};
    if (x < 0.08) return { resource: { kind: "Bucket", name: "b" } };
    if (x < 0.1) return { service: { name: "s1" } };
    const port = chance(0.8) ? { number: pick([80, 443, 8080]) } : { name: pick(["http", "https", "nope"]) };
    return { service: { name: pick(SVCS), port } };
  };
  const annotations = (): Obj | undefined => {
    if (chance(0.6)) return undefined;
    const a: Record<string, string> = {};
    if (chance(0.3)) a["portico.dev/backend-protocol"] = pick(["HTTPS", "HTTP", "gopher"]);
    if (chance(0.2)) a["nginx.ingress.kubernetes.io/ssl-redirect"] = pick(["false", "maybe"]);
    if (chance(0.2)) a["portico.dev/max-body-size"] = pick(["0", "10m", "huge"]);
    if (chance(0.1)) a["nginx.ingress.kubernetes.io/rewrite-target"] = pick(["/", "/$3", "/$host"]);
    if (chance(0.1)) a["nginx.ingress.kubernetes.io/use-regex"] = pick(["true", "false"]);
    if (chance(0.15)) a["kubernetes.io/ingress.class"] = pick(["portico", "other", "mine"]);
    if (chance(0.25)) {
      // Basic authentication against Secrets that come, change and go (compile/access.ts).
      a["nginx.ingress.kubernetes.io/auth-type"] = pick(["basic", "basic", "digest"]);
      a["nginx.ingress.kubernetes.io/auth-secret"] = pick(["u1", "u2", "b/u1", "missing"]);
      if (chance(0.3)) a["nginx.ingress.kubernetes.io/auth-secret-type"] = pick(["auth-file", "auth-map"]);
    }
    if (chance(0.1)) a["nginx.ingress.kubernetes.io/denylist-source-range"] = pick(["10.1.0.0/16", "bad"]);
    // Host-wide policies, which --host-policy-scope=namespace keeps to the host's owner namespace.
    if (chance(0.1)) a[`nginx.ingress.kubernetes.io/${pick(["app-root", "from-to-www-redirect", "server-alias", "auth-tls-secret"])}`] = pick(["/home", "true", "alias.test", "missing"]);
    return a;
  };
  const ingress = (ns: string, name: string): Obj => {
    const rules = Array.from({ length: Math.floor(r() * 3) }, () => ({
      ...(chance(0.9) ? { host: pick(HOSTS) } : {}),
      http: { paths: Array.from({ length: 1 + Math.floor(r() * 3) }, () => ({ path: pick(PATHS), pathType: pick(TYPES), backend: backend() })) },
    }));
    const tls = chance(0.4)
      ? Array.from({ length: 1 + Math.floor(r() * 2) }, () => ({
          hosts: Array.from({ length: Math.floor(r() * 3) }, () => pick(HOSTS)),
          ...(chance(0.8) ? { secretName: pick(["t1", "t2", "missing"]) } : {}),
        }))
      : undefined;
    const cls = r();
    const created = pick(TIMES);
    return {
      metadata: meta(ns, name, { ...(created ? { creationTimestamp: created } : {}), ...(annotations() ? { annotations: annotations() } : {}) }),
      spec: {
        ...(cls < 0.75 ? { ingressClassName: "portico" } : cls < 0.85 ? { ingressClassName: pick(["other", "mine"]) } : {}),
        ...(chance(0.15) ? { defaultBackend: backend() } : {}),
        ...(tls ? { tls } : {}),
        rules,
      },
    };
  };
  const service = (ns: string, name: string): Obj => {
    if (name === "ext" || chance(0.1)) {
      return { metadata: meta(ns, name), spec: { type: "ExternalName", ...(chance(0.8) ? { externalName: "Backend.Example" } : {}), ports: [{ name: "http", port: 80 }] } };
    }
    const ports = [{ name: "http", port: 80 }, { name: "https", port: 443 }, { port: 8080 }].filter(() => chance(0.7));
    return { metadata: meta(ns, name), spec: { ports } };
  };
  const slice = (ns: string, svc: string, k: number): Obj => ({
    metadata: meta(ns, `${svc}-${k}`, { labels: { "kubernetes.io/service-name": svc } }),
    addressType: "IPv4",
    endpoints: Array.from({ length: Math.floor(r() * 3) }, () => ({
      addresses: [`10.0.${k}.${1 + Math.floor(r() * 4)}`],
      conditions: { ready: chance(0.7), serving: chance(0.8), terminating: chance(0.3) },
    })),
    ports: [{ name: "http", port: 8080 }, { name: "https", port: 8443 }, { name: "", port: 9000 }].filter(() => chance(0.8)),
  });
  const secret = (ns: string, name: string): Obj => ({
    metadata: meta(ns, name),
    type: "kubernetes.io/tls",
    data: chance(0.8) ? { "tls.crt": btoa(`cert ${rv}`), "tls.key": btoa("key") } : { "tls.crt": btoa("only cert") },
  });
  const authSecret = (ns: string, name: string): Obj => ({
    metadata: meta(ns, name),
    type: "Opaque",
    data: chance(0.5) ? { auth: btoa(`alice:{PLAIN}${rv}\nbob:{SHA}x`) } : { alice: btoa(`{PLAIN}${rv}`), carol: btoa("plain") },
  });
  const ingressClass = (name: string): Obj => ({
    metadata: { name, resourceVersion: String(++rv), ...(chance(0.3) ? { annotations: { "ingressclass.kubernetes.io/is-default-class": "true" } } : {}) },
    spec: { controller: chance(0.7) ? "portico.dev/ingress-controller" : "example.com/other" },
  });

  /** A small edit of an existing Ingress: one field, so most of its routes stay as they were. */
  const tweak = (current: Obj): Obj => {
    const o = structuredClone(current) as { metadata: Obj & { annotations?: Record<string, string> }; spec: { rules?: { host?: string; http?: { paths: Obj[] } }[]; tls?: Obj[]; ingressClassName?: string } };
    o.metadata.resourceVersion = String(++rv);
    const paths = o.spec.rules?.flatMap((rule) => rule.http?.paths ?? []) ?? [];
    const x = r();
    if (x < 0.3 && paths.length > 0) pick(paths).path = pick(PATHS);
    else if (x < 0.45 && paths.length > 0) pick(paths).pathType = pick(TYPES);
    else if (x < 0.55) o.metadata.annotations = { ...o.metadata.annotations, "portico.dev/ssl-redirect": pick(["true", "false"]), "portico.dev/hsts": pick(["true", "false"]) };
    else if (x < 0.6) o.metadata.annotations = { ...o.metadata.annotations, "nginx.ingress.kubernetes.io/use-regex": pick(["true", "false"]) };
    else if (x < 0.7) o.metadata.creationTimestamp = pick(TIMES);
    else if (x < 0.8) o.spec.ingressClassName = pick(["portico", "mine", "other"]);
    else if (x < 0.9 && o.spec.rules?.length) pick(o.spec.rules).host = pick(HOSTS);
    else o.spec.tls = [{ hosts: [pick(HOSTS)], secretName: pick(["t1", "t2", "missing"]) }];
    return o as unknown as Obj;
  };

  /** One random event (validated as a source would; invalid objects are not generated here). */
  return (store: Store): StoreEvent => {
    const ns = pick(NS);
    const x = r();
    let kind: Kind;
    let object: Obj;
    const existing = store.get("Ingress", `${ns}/ing-${Math.floor(r() * 8)}`);
    if (x < 0.25 && existing) [kind, object] = ["Ingress", tweak(existing as unknown as Obj)];
    else if (x < 0.45) [kind, object] = ["Ingress", ingress(ns, `ing-${Math.floor(r() * 8)}`)];
    else if (x < 0.6) [kind, object] = ["Service", service(ns, pick(SVCS))];
    else if (x < 0.78) [kind, object] = ["EndpointSlice", slice(ns, pick(SVCS), Math.floor(r() * 2))];
    else if (x < 0.83) [kind, object] = ["Secret", secret(ns, pick(["t1", "t2"]))];
    else if (x < 0.88) [kind, object] = ["Secret", authSecret(ns, pick(["u1", "u2"]))];
    else [kind, object] = ["IngressClass", ingressClass(pick(["portico", "mine", "other"]))];
    const parsed = parseObject(kind, object);
    if (!parsed.ok) throw new Error(`generator made an invalid ${kind}: ${parsed.diagnostic.message}`);
    return { type: chance(0.1) ? "DELETED" : "MODIFIED", kind, object: parsed.object } as StoreEvent;
  };
}

const EXPLAINED: readonly ExplainRequest[] = [
  { host: "x.test", path: "/api/v1", scheme: "https" },
  { host: "q.w.test", path: "/static", scheme: "http" },
  { host: "nomatch.test", path: "/", scheme: "http" },
];

const CONFIGS: readonly CompileConfig[] = [
  DEFAULT_COMPILE_CONFIG,
  {
    ...DEFAULT_COMPILE_CONFIG,
    watchIngressWithoutClass: true,
    allowExternalNameServices: true,
    defaultBackendService: { namespace: "a", name: "s2", port: 80 },
    defaultSslCertificate: { namespace: "b", name: "t1" },
    allowlistSourceRange: ["10.0.0.0/8"],
    // Host ownership (host-scope.ts) follows every Ingress edit, spec.tls coverage with it.
    hostPolicyScope: "namespace",
  },
];

describe("a long-lived Compiler equals one with empty caches", () => {
  // Per change (the usual path) and bulk (one sort, as after a relist or an IngressClass change).
  const modes = [["per change", undefined], ["bulk", 0]] as const;
  for (const [ci, config] of CONFIGS.entries()) {
    for (const seed of [1, 2, 3, 4]) {
      const [mode, bulkAbove] = modes[seed % 2] as (typeof modes)[number];
      test(`config ${ci}, seed ${seed}, ${mode}: 250 bursts of random edits`, () => {
        const next = generator(seed * 7919 + ci);
        const store = new Store();
        const incremental = new Compiler(config, bulkAbove === undefined ? {} : { bulkAbove });
        let compared = 0;
        let reusedHosts = 0;
        let prev: CompileResult | null = null;
        for (let step = 0; step < 250; step++) {
          // Bursts of 1..4 events per compile, as the coalescer would batch them.
          const burst = 1 + (step % 4);
          for (let k = 0; k < burst; k++) store.apply(next(store));
          const snap = store.snapshot();
          const got = incremental.compile(snap);
          const want = view(compile(snap, config));
          const actual = view(got);
          // On a mismatch, toEqual shows the difference as objects.
          if (actual !== want) expect({ step, result: JSON.parse(actual) }).toEqual({ step, result: JSON.parse(want) });
          expect(backendsShared(got)).toBe(true);
          // Explain reads the long-lived Compiler's plans and host entries: the same answer.
          if (step % 10 === 0) {
            for (const q of EXPLAINED) expect({ step, q, r: explain(snap, config, q, incremental) }).toEqual({ step, q, r: explain(snap, config, q) });
          }
          if (prev) for (const [h, e] of got.table.exact) if (prev.table.exact.get(h) === e) reusedHosts++;
          prev = got;
          compared++;
        }
        expect(compared).toBe(250);
        // The caches are actually used (otherwise this test would prove nothing about them).
        expect(reusedHosts).toBeGreaterThan(0);
      });
    }
  }

  test("every golden fixture, compiled after another one by the same Compiler, gives its own full result", () => {
    const dir = join(import.meta.dir, "..", "fixtures");
    const files = readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort();
    const compilers = new Map<string, Compiler>();
    // Twice through, so every fixture is also compiled with caches filled by all the others.
    for (const file of [...files, ...files]) {
      const fx = loadFixture(readFileSync(join(dir, file), "utf8"));
      const config = { ...DEFAULT_COMPILE_CONFIG, ...fx.config } as CompileConfig;
      const key = JSON.stringify(config);
      let c = compilers.get(key);
      if (!c) compilers.set(key, (c = new Compiler(config)));
      expect({ file, r: view(c.compile(fx.snapshot)) }).toEqual({ file, r: view(compile(fx.snapshot, config)) });
    }
  });

  test("a host with many paths and conflicts (past the claim list's switch to a map), edited path by path", () => {
    const paths = (n: number, svc: string) =>
      Array.from({ length: n }, (_, i) => ({ path: `/p${i % 13}`, pathType: i % 3 === 0 ? "Exact" : "Prefix", backend: { service: { name: svc, port: { number: 80 } } } }));
    const ing = (name: string, created: string, n: number, svc: string) => {
      const p = parseObject("Ingress", {
        metadata: { name, namespace: "a", creationTimestamp: created },
        spec: { ingressClassName: "portico", rules: [{ host: "big.test", http: { paths: paths(n, svc) } }, { http: { paths: paths(n, svc) } }] },
      });
      if (!p.ok) throw new Error(p.diagnostic.message);
      return p.object;
    };
    const store = new Store();
    const c = new Compiler(DEFAULT_COMPILE_CONFIG);
    for (let n = 1; n <= 30; n++) {
      store.apply({ type: "MODIFIED", kind: "Ingress", object: ing("old", "2024-01-01T00:00:00Z", n, "s1") });
      store.apply({ type: "MODIFIED", kind: "Ingress", object: ing("new", "2024-01-02T00:00:00Z", 31 - n, "s2") });
      const snap = store.snapshot();
      const got = c.compile(snap);
      expect(view(got)).toBe(view(compile(snap, DEFAULT_COMPILE_CONFIG)));
      expect(got.diagnostics.some((d) => d.reason === "PathConflict")).toBe(true);
    }
  });

  test("an unchanged snapshot gives back the same host entries and Backend objects", () => {
    const next = generator(99);
    const store = new Store();
    for (let k = 0; k < 60; k++) store.apply(next(store));
    const c = new Compiler({ ...DEFAULT_COMPILE_CONFIG, watchIngressWithoutClass: true });
    const a = c.compile(store.snapshot());
    const b = c.compile(store.snapshot());
    expect(view(b)).toBe(view(a));
    expect(a.table.exact.size).toBeGreaterThan(0);
    for (const [h, e] of a.table.exact) expect(b.table.exact.get(h)).toBe(e);
    expect(b.statuses).toBe(a.statuses);
  });
});
