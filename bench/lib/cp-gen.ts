// A generated cluster for the control-plane benchmark: N Ingresses, each with its own Service
// and EndpointSlice, the first `tlsCount` with a TLS Secret. Hosts are `app-<i>.bench.test`,
// so one wildcard certificate (`*.bench.test`) serves every Secret.
import { endpointSlice, gatewayBase, httpRoute, ingress, ingressClass, service, tlsSecret, type IngressPath, type Obj } from "./cluster.ts";
import { seeded } from "../../test/proxy/seeded.ts";

export interface Cluster {
  readonly objects: readonly { kind: string; object: Obj }[];
  readonly hosts: readonly string[];
  /** Paths every Ingress routes (Prefix unless noted), for the lookup mix. */
  readonly paths: readonly string[];
  /** Hosts of the HTTPRoutes (none unless asked for). */
  readonly routeHosts: readonly string[];
}

export const NAMESPACES = 50;

export function nsOf(i: number): string {
  return `team-${i % NAMESPACES}`;
}

export function hostOf(i: number): string {
  return `app-${i}.bench.test`;
}

/** Paths of Ingress i; `edit` adds one more Exact path (the change-to-served probe). */
export function pathsOf(i: number, edit: string | null): IngressPath[] {
  const svc = `svc-${i}`;
  const p: IngressPath[] = [
    { path: "/api", pathType: "Prefix", service: svc },
    { path: "/static/assets", pathType: "Prefix", service: svc },
    { path: "/healthz", pathType: "Exact", service: svc },
  ];
  if (edit) p.push({ path: edit, pathType: "Exact", service: svc });
  return p;
}

export function ingressOf(i: number, tls: boolean, edit: string | null, rv = "1"): Obj {
  return ingress(nsOf(i), `ing-${i}`, hostOf(i), pathsOf(i, edit), tls ? `tls-${i}` : null, rv);
}

/** Host of HTTPRoute i (beside Ingress i, to the same Service). */
export function routeHostOf(i: number): string {
  return `gw-${i}.bench.test`;
}

export function httpRouteOf(i: number, edit: string | null, rv = "1"): Obj {
  return httpRoute(nsOf(i), `hr-${i}`, routeHostOf(i), pathsOf(i, edit), rv);
}

export interface GenOptions {
  readonly ingresses: number;
  /** HTTPRoutes beside the Ingresses (at most one per Ingress: HTTPRoute i uses Service i), on one Gateway. */
  readonly httpRoutes?: number;
  readonly tlsCount: number;
  /** Endpoint addresses and port every Service resolves to (loopback listeners). */
  readonly addresses: readonly string[];
  readonly port: number;
  readonly cert: { readonly cert: string; readonly key: string };
  /**
   * Give every object the metadata a real API server adds: managedFields (one field manager
   * whose FieldsV1 set mirrors the object, as server-side field tracking writes since
   * Kubernetes 1.18), creationTimestamp and generation, and EndpointSlices the ownerReference
   * to their Service that the EndpointSlice controller sets. Objects a user applies (all but
   * EndpointSlices, which a controller writes) also carry the
   * `kubectl.kubernetes.io/last-applied-configuration` annotation `kubectl apply` writes: the
   * applied object's own JSON, one line.
   */
  readonly apiMetadata?: boolean;
}

/** A FieldsV1 set naming every field of `x` (`f:<name>` for fields, `k:{...}` for list items; leaves `{}`). */
function fieldsV1(x: unknown): unknown {
  if (Array.isArray(x)) return Object.fromEntries(x.map((v, i) => [`k:{"i":${i}}`, fieldsV1(v)]));
  if (x !== null && typeof x === "object") return Object.fromEntries(Object.entries(x).map(([k, v]) => [`f:${k}`, fieldsV1(v)]));
  return {};
}

/** kubectl's client-side apply record (k8s.io/kubectl apply: `LastAppliedConfigAnnotation`). */
const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

function withApiMetadata(o: Obj): Obj {
  const { metadata, ...rest } = o as Obj & { metadata: Record<string, unknown> };
  const manager = o.kind === "EndpointSlice" ? "endpointslice-controller.k8s.io" : "kubectl-client-side-apply";
  const applied = o.kind !== "EndpointSlice";
  const annotations = metadata.annotations as Record<string, string> | undefined;
  const out: Record<string, unknown> = {
    ...metadata,
    ...(applied ? { annotations: { ...annotations, [LAST_APPLIED]: `${JSON.stringify(o)}\n` } } : {}),
    creationTimestamp: "2026-11-01T10:00:00Z",
    generation: 1,
    managedFields: [{ manager, operation: "Update", apiVersion: o.apiVersion, time: "2026-11-01T10:00:00Z", fieldsType: "FieldsV1", fieldsV1: fieldsV1(rest) }],
  };
  if (o.kind === "EndpointSlice") {
    const svc = (metadata.labels as Record<string, string>)["kubernetes.io/service-name"];
    out.ownerReferences = [{ apiVersion: "v1", kind: "Service", name: svc, uid: `uid-svc-${String(metadata.namespace)}-${svc}`, controller: true, blockOwnerDeletion: true }];
  }
  return { ...o, metadata: out } as Obj;
}

export function generate(o: GenOptions): Cluster {
  const objects: { kind: string; object: Obj }[] = [{ kind: "IngressClass", object: ingressClass() }];
  const hosts: string[] = [];
  for (let i = 0; i < o.ingresses; i++) {
    const ns = nsOf(i);
    const tls = i < o.tlsCount;
    objects.push({ kind: "Service", object: service(ns, `svc-${i}`, o.port) });
    objects.push({ kind: "EndpointSlice", object: endpointSlice(ns, `svc-${i}`, o.addresses, o.port) });
    if (tls) objects.push({ kind: "Secret", object: tlsSecret(ns, `tls-${i}`, o.cert.cert, o.cert.key) });
    objects.push({ kind: "Ingress", object: ingressOf(i, tls, null) });
    hosts.push(hostOf(i));
  }
  const routeHosts: string[] = [];
  const routes = Math.min(o.httpRoutes ?? 0, o.ingresses);
  if (routes > 0) for (const g of gatewayBase()) objects.push({ kind: g.kind as string, object: g });
  for (let i = 0; i < routes; i++) {
    objects.push({ kind: "HTTPRoute", object: httpRouteOf(i, null) });
    routeHosts.push(routeHostOf(i));
  }
  if (o.apiMetadata) for (const x of objects) x.object = withApiMetadata(x.object);
  return { objects, hosts, paths: ["/api", "/api/v1/users/42", "/static/assets/app.js", "/healthz"], routeHosts };
}

/** A deterministic PRNG (mulberry32, the tests' one) so runs are comparable. */
export const rng = seeded;

/** Request mix for lookup: 80% hits (known host, routed path), 20% misses (unknown host or path). */
export function requestMix(c: Cluster, n: number, seed = 1): { hosts: string[]; paths: string[] } {
  const r = rng(seed);
  const hosts: string[] = [];
  const paths: string[] = [];
  const miss = ["/", "/nothing/here", "/apix", "/static/other.css"];
  for (let k = 0; k < n; k++) {
    const x = r();
    if (x < 0.8) {
      hosts.push(c.hosts[Math.floor(r() * c.hosts.length)] as string);
      paths.push(c.paths[Math.floor(r() * c.paths.length)] as string);
    } else if (x < 0.9) {
      hosts.push(`nope-${k}.bench.test`);
      paths.push("/api");
    } else {
      hosts.push(c.hosts[Math.floor(r() * c.hosts.length)] as string);
      paths.push(miss[Math.floor(r() * miss.length)] as string);
    }
  }
  return { hosts, paths };
}
