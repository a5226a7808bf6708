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
import { cond, type Condition } from "./attach.ts";
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
      if (f.type === "RequestMirror") {
        fail("filter RequestMirror is not supported on a GRPCRoute");
        // rules.ts answers 500 for a filter type it does not know: this rule does not serve.
        filters.push({ type: "RequestMirror (gRPC)" });
      } else filters.push(f);
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
