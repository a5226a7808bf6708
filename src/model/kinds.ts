// The kinds Portico watches, their API paths, and validation of one raw object.
import * as v from "valibot";
import {
  GatewayClassSchema,
  GatewaySchema,
  GRPCRouteSchema,
  HTTPRouteSchema,
  NamespaceSchema,
  ReferenceGrantSchema,
  type Gateway,
  type GatewayClass,
  type GRPCRoute,
  type HTTPRoute,
  type Namespace,
  type ReferenceGrant,
} from "./gateway.ts";
import {
  ConfigMapSchema,
  EndpointSliceSchema,
  IngressClassSchema,
  IngressSchema,
  SecretSchema,
  ServiceSchema,
  type ConfigMap,
  type EndpointSlice,
  type Ingress,
  type IngressClass,
  type Secret,
  type Service,
} from "./schemas.ts";
import type { Diagnostic } from "./diagnostic.ts";
import { IngressNginxPolicySchema, PORTICO_GROUP, type IngressNginxPolicy } from "./portico-policy.ts";

export const KINDS = [
  "IngressClass",
  "Ingress",
  "Service",
  "EndpointSlice",
  "Secret",
  "Namespace",
  "GatewayClass",
  "Gateway",
  "HTTPRoute",
  "GRPCRoute",
  "ReferenceGrant",
  "IngressNginxPolicy",
  "ConfigMap",
] as const;
export type Kind = (typeof KINDS)[number];

export const GATEWAY_GROUP = "gateway.networking.k8s.io";

export interface KindObjects {
  Ingress: Ingress;
  IngressClass: IngressClass;
  Service: Service;
  EndpointSlice: EndpointSlice;
  Secret: Secret;
  Namespace: Namespace;
  GatewayClass: GatewayClass;
  Gateway: Gateway;
  HTTPRoute: HTTPRoute;
  GRPCRoute: GRPCRoute;
  ReferenceGrant: ReferenceGrant;
  IngressNginxPolicy: IngressNginxPolicy;
  ConfigMap: ConfigMap;
}
export type KubeObject = KindObjects[Kind];

/** The Gateway API kinds and Portico's IngressNginxPolicy: their CRDs may be absent. */
export const isOptionalKind = (kind: Kind): boolean => KIND_API[kind].optional === true;

export interface KindApi {
  group: string;
  version: string;
  resource: string;
  namespaced: boolean;
  /**
   * Served only once the user installs its CRD: a list answering 404 means "not installed",
   * which counts as an empty, synced kind until the CRD appears (docs/design.md "Gateway API").
   */
  optional?: true;
  /**
   * Not listed and watched as a kind: only the objects the Ingresses name are, one watch each
   * (kube/configmap-refs.ts), so a cluster's other objects of the kind are never held.
   */
  byReference?: true;
  /** Other versions a --manifests document may be written in (the same schema). */
  alsoServed?: readonly string[];
}

/** API group/version and plural resource of each kind, as kube-apiserver serves them. */
export const KIND_API: Readonly<Record<Kind, KindApi>> = {
  Ingress: { group: "networking.k8s.io", version: "v1", resource: "ingresses", namespaced: true },
  IngressClass: { group: "networking.k8s.io", version: "v1", resource: "ingressclasses", namespaced: false },
  Service: { group: "", version: "v1", resource: "services", namespaced: true },
  EndpointSlice: { group: "discovery.k8s.io", version: "v1", resource: "endpointslices", namespaced: true },
  Secret: { group: "", version: "v1", resource: "secrets", namespaced: true },
  // allowedRoutes.namespaces.selector selects Namespaces by label (Gateway API, RouteNamespaces).
  Namespace: { group: "", version: "v1", resource: "namespaces", namespaced: false },
  GatewayClass: { group: GATEWAY_GROUP, version: "v1", resource: "gatewayclasses", namespaced: false, optional: true },
  Gateway: { group: GATEWAY_GROUP, version: "v1", resource: "gateways", namespaced: true, optional: true },
  HTTPRoute: { group: GATEWAY_GROUP, version: "v1", resource: "httproutes", namespaced: true, optional: true },
  GRPCRoute: { group: GATEWAY_GROUP, version: "v1", resource: "grpcroutes", namespaced: true, optional: true },
  // v1beta1 is served by every standard-channel release (and is still the storage version in
  // v1.6); v1 is served only from v1.5 on, so watching v1beta1 works with older CRDs too.
  ReferenceGrant: { group: GATEWAY_GROUP, version: "v1beta1", resource: "referencegrants", namespaced: true, optional: true, alsoServed: ["v1"] },
  // Portico's extension (model/portico-policy.ts): k8s/crd-ingressnginxpolicy.yaml installs it.
  IngressNginxPolicy: { group: PORTICO_GROUP, version: "v1alpha1", resource: "ingressnginxpolicies", namespaced: true, optional: true },
  // The ConfigMaps auth-proxy-set-headers names (docs/design.md "External authentication"):
  // watching every ConfigMap of a cluster would hold each namespace's kube-root-ca.crt and any
  // large one in memory for a rarely used annotation.
  ConfigMap: { group: "", version: "v1", resource: "configmaps", namespaced: true, byReference: true },
};

/** The kinds listed and watched whole (createKubeSource's default). */
export const LISTED_KINDS: readonly Kind[] = KINDS.filter((k) => KIND_API[k].byReference !== true);

/**
 * Secret types Portico never reads: service-account and bootstrap tokens, registry
 * credentials and Helm release records (the bulk of a cluster's Secrets, and large). The
 * rest are watched: kubernetes.io/tls for certificates, any other type for basic-auth users
 * (ingress-nginx reads an auth-secret of any type; `kubectl create secret generic` makes Opaque).
 */
export const UNWATCHED_SECRET_TYPES: readonly string[] = Object.freeze([
  "kubernetes.io/service-account-token",
  "bootstrap.kubernetes.io/token",
  "kubernetes.io/dockercfg",
  "kubernetes.io/dockerconfigjson",
  "helm.sh/release.v1",
]);

const SCHEMAS = {
  Ingress: IngressSchema,
  IngressClass: IngressClassSchema,
  Service: ServiceSchema,
  EndpointSlice: EndpointSliceSchema,
  Secret: SecretSchema,
  Namespace: NamespaceSchema,
  GatewayClass: GatewayClassSchema,
  Gateway: GatewaySchema,
  HTTPRoute: HTTPRouteSchema,
  GRPCRoute: GRPCRouteSchema,
  ReferenceGrant: ReferenceGrantSchema,
  IngressNginxPolicy: IngressNginxPolicySchema,
  ConfigMap: ConfigMapSchema,
} as const;

export function isKind(s: unknown): s is Kind {
  return typeof s === "string" && (KINDS as readonly string[]).includes(s);
}

/** `namespace/name` (or `name` for cluster-scoped kinds). */
export function objectKey(meta: { name: string; namespace?: string | undefined }): string {
  return meta.namespace ? `${meta.namespace}/${meta.name}` : meta.name;
}

export type ParseResult<K extends Kind> =
  | { ok: true; object: KindObjects[K] }
  | { ok: false; diagnostic: Diagnostic };

/** Validate one raw object of a known kind; failures become a diagnostic, never a throw. */
export function parseObject<K extends Kind>(kind: K, raw: unknown): ParseResult<K> {
  const r = v.safeParse(SCHEMAS[kind] as v.GenericSchema, raw);
  if (r.success) return { ok: true, object: r.output as KindObjects[K] };
  const meta = (raw as { metadata?: { name?: unknown; namespace?: unknown } } | null)?.metadata;
  const issue = r.issues[0];
  const where = issue ? v.getDotPath(issue) : null;
  return {
    ok: false,
    diagnostic: {
      kind,
      namespace: typeof meta?.namespace === "string" ? meta.namespace : "",
      name: typeof meta?.name === "string" ? meta.name : "",
      reason: "InvalidObject",
      message: `${where ? `${where}: ` : ""}${issue?.message ?? "invalid object"}`,
    },
  };
}
