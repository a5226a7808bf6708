// The five kinds Portico watches, their API paths, and validation of one raw object.
import * as v from "valibot";
import {
  EndpointSliceSchema,
  IngressClassSchema,
  IngressSchema,
  SecretSchema,
  ServiceSchema,
  type EndpointSlice,
  type Ingress,
  type IngressClass,
  type Secret,
  type Service,
} from "./schemas.ts";
import type { Diagnostic } from "./diagnostic.ts";

export const KINDS = ["IngressClass", "Ingress", "Service", "EndpointSlice", "Secret"] as const;
export type Kind = (typeof KINDS)[number];

export interface KindObjects {
  Ingress: Ingress;
  IngressClass: IngressClass;
  Service: Service;
  EndpointSlice: EndpointSlice;
  Secret: Secret;
}
export type KubeObject = KindObjects[Kind];

/** API group/version and plural resource of each kind, as kube-apiserver serves them. */
export const KIND_API: Readonly<Record<Kind, { group: string; version: string; resource: string; namespaced: boolean }>> = {
  Ingress: { group: "networking.k8s.io", version: "v1", resource: "ingresses", namespaced: true },
  IngressClass: { group: "networking.k8s.io", version: "v1", resource: "ingressclasses", namespaced: false },
  Service: { group: "", version: "v1", resource: "services", namespaced: true },
  EndpointSlice: { group: "discovery.k8s.io", version: "v1", resource: "endpointslices", namespaced: true },
  Secret: { group: "", version: "v1", resource: "secrets", namespaced: true },
};

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
