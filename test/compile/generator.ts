// The random edit generator of the compile tests (incremental.test.ts, and the wire test that
// runs its tables through a worker's decoding: test/workers/wire-compile.test.ts): events as a
// source would deliver them, over a small world where collisions are frequent.
import { rng } from "../../bench/lib/cp-gen.ts";
import { parseObject, type Kind } from "../../src/model/kinds.ts";
import type { Store } from "../../src/store/store.ts";
import type { StoreEvent } from "../../src/store/types.ts";

type Obj = Record<string, unknown>;

/**
 * A small world where collisions are frequent: few hosts, paths, services, timestamps.
 * `hostile` adds what a tenant's typo or malice gives the compiler in regex mode: paths RE2
 * refuses (a lookahead, a backreference, `{2,1}`, an unclosed class), rewrite targets naming a
 * group the path lacks, use-regex more often, and `www.` pairs with from-to-www-redirect.
 * Without it the event sequence of a seed is the same as it always was.
 */
export function generator(seed: number, o: { readonly hostile?: boolean } = {}) {
  const hostile = o.hostile === true;
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const chance = (p: number) => r() < p;
  const NS = ["a", "b"];
  const HOSTS = ["x.test", "y.test", "*.w.test", "q.w.test", "", "Bad_Host", "10.0.0.1", "*.x.test", ...(hostile ? ["a.test", "www.a.test", "www.x.test"] : [])];
  const PATHS = [
    ...["/", "/api", "/api/", "/api/v1", "/static", "/a//b", "/%7Euser", "relative", "/bad?q", "/API", "/api/(v[0-9])(/|$)(.*)", "/(a)\\1", "/a;b"],
    ...(hostile ? ["/(?=x)", "/a{2,1}", "/[", "/a", "/a/(.*)", "/(.*)"] : []),
  ];
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
    if (chance(hostile ? 0.4 : 0.1)) a["nginx.ingress.kubernetes.io/use-regex"] = pick(["true", "false"]);
    if (hostile && chance(0.2)) a["nginx.ingress.kubernetes.io/rewrite-target"] = pick(["/$1", "/$2", "/x/$1"]);
    if (hostile && chance(0.15)) a["nginx.ingress.kubernetes.io/from-to-www-redirect"] = "true";
    if (hostile && chance(0.1)) a["nginx.ingress.kubernetes.io/app-root"] = "/app";
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
