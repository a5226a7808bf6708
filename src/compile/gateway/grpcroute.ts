// GRPCRoute (gateway.networking.k8s.io/v1, apis/v1 grpcroute_types.go) compiled through the
// HTTPRoute path (docs/design.md "Gateway API", "GRPCRoute"). A gRPC call is an HTTP/2 POST
// whose `:path` is `/<service>/<method>` (gRPC's PROTOCOL-HTTP2.md), so a GRPCMethodMatch is a
// path match on that form and a GRPCHeaderMatch is an HTTP header match:
// - service and method: path Exact `/<service>/<method>`;
// - service only: PathPrefix `/<service>` (per segment: every method of that service);
// - method only: GRPCMethod `/<method>` (table/gateway.ts: any one service, then this method);
// - no method match: every call (PathPrefix `/`).
// With these paths the HTTPRoute precedence (Exact, longest PathPrefix, GRPCMethod, the
// match-everything prefix, then header count, the oldest route and namespace/name) orders rules
// as GRPCRouteRule.matches asks (characters of the matching service, then of the method, then
// header count, then the same ties), within each hostname list the lookup already walks by
// hostname precedence.
//
// Not served, each UnsupportedValue on Accepted with only the affected match dropped: the
// implementation-specific RegularExpression method match, and RequestMirror (the copy is sent
// by fetch without the request's body, and a gRPC call's message is its body).
//
// Each converted route keeps the GRPCRoute's metadata (generation, creationTimestamp) and is
// compiled in table.ts under its own work key, `namespace/name#GRPCRoute`: an HTTPRoute and a
// GRPCRoute may share a name. Its backends get the `grpc` scheme (HTTP/2 to the pod, with
// trailers: proxy/upstream/grpc.ts), the same as an Ingress with backend-protocol GRPC.
import type { GRPCRoute, HTTPRoute } from "../../model/gateway.ts";
import { intersectHostname } from "./hostnames.ts";
import { cond, type Condition, type ListenerState, type RouteParentState } from "./attach.ts";
import type { RouteKind } from "./rules.ts";

export const GRPC_ROUTE_KIND: RouteKind = Object.freeze({ kind: "GRPCRoute", scheme: "grpc" });

const SUFFIX = "#GRPCRoute";

/** The work key of a GRPCRoute's `namespace/name` ('#' is not allowed in an object name). */
export const grpcWorkKey = (key: string): string => key + SUFFIX;

/** The GRPCRoute's `namespace/name` for its work key, or null for an HTTPRoute's. */
export function grpcObjectKey(workKey: string): string | null {
  return workKey.endsWith(SUFFIX) ? workKey.slice(0, -SUFFIX.length) : null;
}

/** GRPCMethodMatch.service (the CRD's pattern). */
const SERVICE = /^\.?[A-Za-z_][A-Za-z_0-9]*(\.[A-Za-z_][A-Za-z_0-9]*)*$/;
/** GRPCMethodMatch.method (the CRD's pattern). */
const METHOD = /^[A-Za-z_][A-Za-z_0-9]*$/;

/** A path type rules.ts does not serve: the match is dropped there (never matches), as for an HTTPRoute's. */
const DROPPED = { type: "GRPCUnsupported", value: "/" } as const;

export interface GrpcConversion {
  /** The GRPCRoute as an HTTPRoute (same metadata, parentRefs, hostnames, backendRefs). */
  readonly route: HTTPRoute;
  /** Accepted=False UnsupportedValue for what cannot be served, or null. */
  readonly unsupported: Condition | null;
}

type HttpRules = NonNullable<HTTPRoute["spec"]["rules"]>;
type HttpMatch = NonNullable<HttpRules[number]["matches"]>[number];
type HttpFilter = NonNullable<HttpRules[number]["filters"]>[number];

/** One GRPCRoute as the HTTPRoute that routes the same calls. Pure. */
export function grpcAsHttpRoute(route: GRPCRoute): GrpcConversion {
  let unsupported: Condition | null = null;
  const fail = (message: string) => {
    unsupported ??= cond("Accepted", "False", "UnsupportedValue", message);
  };
  const rules: HttpRules = [];
  for (const rule of route.spec.rules ?? []) {
    const matches: HttpMatch[] = [];
    for (const m of rule.matches ?? []) {
      const headers = m.headers ?? null;
      const method = m.method ?? null;
      let path: { type: string; value: string } | null = null;
      if (method !== null) {
        const type = method.type ?? "Exact";
        const service = method.service ?? null;
        const name = method.method ?? null;
        if (type !== "Exact") {
          fail(`gRPC method match type ${type} is not supported`);
          path = DROPPED;
        } else if ((service === null || service === "") && (name === null || name === "")) {
          // GRPCMethodMatch's CEL rule: at least one of service and method.
          fail("a gRPC method match names neither a service nor a method");
          path = DROPPED;
        } else if ((service !== null && service !== "" && !SERVICE.test(service)) || (name !== null && name !== "" && !METHOD.test(name))) {
          fail("a gRPC method match names an invalid service or method");
          path = DROPPED;
        } else if (service === null || service === "") path = { type: "GRPCMethod", value: `/${name}` };
        else path = name === null || name === "" ? { type: "PathPrefix", value: `/${service}` } : { type: "Exact", value: `/${service}/${name}` };
      }
      matches.push({ path, headers, queryParams: null, method: null });
    }
    const filters: HttpFilter[] = [];
    for (const f of rule.filters ?? []) {
      // GRPCRouteFilterType: RequestHeaderModifier (core) and ResponseHeaderModifier (extended)
      // are served as for an HTTPRoute, and so is ExtensionRef (an IngressNginxPolicy:
      // compile/gateway/extension.ts); RequestMirror is not (above), and the HTTPRoute-only types
      // (redirects, rewrites, CORS) are not GRPCRoute filters at all (--manifests objects have
      // not been through the CRD's enum).
      if (f.type === "RequestHeaderModifier" || f.type === "ResponseHeaderModifier" || f.type === "ExtensionRef") filters.push(f);
      else {
        fail(`filter ${f.type} is not supported on a GRPCRoute`);
        // rules.ts answers 500 for a filter type it does not know: this rule does not serve.
        filters.push({ type: `${f.type} (GRPCRoute)` });
      }
    }
    rules.push({ name: rule.name ?? null, matches, filters, backendRefs: rule.backendRefs ?? null, timeouts: null });
  }
  const converted: HTTPRoute = {
    apiVersion: route.apiVersion,
    kind: "HTTPRoute",
    metadata: route.metadata,
    spec: { parentRefs: route.spec.parentRefs ?? null, hostnames: route.spec.hostnames ?? null, rules },
  } as HTTPRoute;
  return { route: converted, unsupported };
}

/** One route's attachments as attachRoute found them, before the cross-kind check. */
export interface KindAttachments {
  /** Work key (`namespace/name`, or `namespace/name#GRPCRoute`). */
  readonly key: string;
  /** creationTimestamp. */
  readonly time: string;
  readonly parents: readonly RouteParentState[];
}

/** Do two hostname lists of attachments (`*` = any host) share a host? */
function hostsOverlap(a: readonly string[], b: readonly string[]): boolean {
  for (const x of a) {
    for (const y of b) {
      if (x === "*" || y === "*" || intersectHostname(x, y) !== null) return true;
    }
  }
  return false;
}

const objectKeyOf = (workKey: string) => grpcObjectKey(workKey) ?? workKey;

/**
 * GRPCRouteSpec.hostnames (and GEP-1016 "Cross Serving"): on one listener an HTTPRoute and a
 * GRPCRoute whose hostnames intersect cannot both be accepted; the older route (creationTimestamp,
 * then `namespace/name`; an HTTPRoute before a GRPCRoute of the same name and age) keeps the
 * listener and the other is refused there. Routes are taken oldest first, so a route refused
 * on a listener refuses nothing there itself. Returns, per work key, the listeners a route is
 * refused on; only listeners with routes of both kinds are looked at.
 */
export function kindConflicts(routes: Iterable<KindAttachments>): Map<string, Set<ListenerState>> {
  const byListener = new Map<ListenerState, { route: KindAttachments; hosts: readonly string[]; grpc: boolean }[]>();
  const kinds = new Map<ListenerState, number>();
  for (const r of routes) {
    const grpc = grpcObjectKey(r.key) !== null;
    for (const p of r.parents) {
      for (const a of p.attachments) {
        let list = byListener.get(a.listener);
        if (!list) byListener.set(a.listener, (list = []));
        list.push({ route: r, hosts: a.hostnames, grpc });
        kinds.set(a.listener, (kinds.get(a.listener) ?? 0) | (grpc ? 2 : 1));
      }
    }
  }
  const out = new Map<string, Set<ListenerState>>();
  for (const [listener, list] of byListener) {
    if (kinds.get(listener) !== 3) continue;
    list.sort((a, b) => {
      if (a.route.time !== b.route.time) return a.route.time < b.route.time ? -1 : 1;
      const ka = objectKeyOf(a.route.key);
      const kb = objectKeyOf(b.route.key);
      if (ka !== kb) return ka < kb ? -1 : 1;
      return a.grpc === b.grpc ? 0 : a.grpc ? 1 : -1;
    });
    const kept: { http: (readonly string[])[]; grpc: (readonly string[])[] } = { http: [], grpc: [] };
    const refused = new Set<string>();
    for (const e of list) {
      if (refused.has(e.route.key)) continue;
      const others = e.grpc ? kept.http : kept.grpc;
      if (others.some((h) => hostsOverlap(h, e.hosts))) {
        refused.add(e.route.key);
        let set = out.get(e.route.key);
        if (!set) out.set(e.route.key, (set = new Set()));
        set.add(listener);
      } else (e.grpc ? kept.grpc : kept.http).push(e.hosts);
    }
  }
  return out;
}

/** Did any route's refused listeners change? The work keys whose did. */
export function changedConflicts(prev: ReadonlyMap<string, ReadonlySet<ListenerState>>, next: ReadonlyMap<string, ReadonlySet<ListenerState>>): string[] {
  const out: string[] = [];
  for (const [k, set] of next) {
    const old = prev.get(k);
    if (old === undefined || old.size !== set.size || [...set].some((l) => !old.has(l))) out.push(k);
  }
  for (const k of prev.keys()) if (!next.has(k)) out.push(k);
  return out;
}

/**
 * A route's parents without the listeners it is refused on (kindConflicts): a parent left with
 * no listener is Accepted=False NotAllowedByListeners (the closest reason RouteConditionReason
 * has), its message naming the conflict.
 */
export function withoutRefused(parents: readonly RouteParentState[], refused: ReadonlySet<ListenerState>, grpc: boolean): RouteParentState[] {
  return parents.map((p) => {
    if (!p.attachments.some((a) => refused.has(a.listener))) return p;
    const attachments = p.attachments.filter((a) => !refused.has(a.listener));
    if (attachments.length > 0) return { ...p, attachments };
    const other = grpc ? "an HTTPRoute" : "a GRPCRoute";
    return { ...p, attachments, accepted: cond("Accepted", "False", "NotAllowedByListeners", `${other} with an overlapping hostname is attached to the listener first (older)`) };
  });
}
