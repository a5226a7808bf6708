// The narrowed shapes of the Kubernetes objects Portico uses, validated at the edge with
// valibot. Only the fields the compiler reads are declared; everything else is ignored
// (looseObject keeps unknown keys out of the types but does not reject them).
// API versions: networking.k8s.io/v1 (Ingress, IngressClass), v1 (Service, Secret),
// discovery.k8s.io/v1 (EndpointSlice).
import * as v from "valibot";

/** A JSON object (not null, not an array), as untyped data from YAML, JSON or the API is checked. */
export function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

const str = v.string();
const optStr = v.optional(v.nullable(v.string()));
const stringMap = v.optional(v.nullable(v.record(v.string(), v.string())));

/** kubectl's client-side apply record (k8s.io/kubectl `LastAppliedConfigAnnotation`). */
export const LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration";

// Annotations dropped at validation, for every kind. `kubectl apply` writes the whole applied
// object as JSON into last-applied-configuration, so it is about as large as the object itself
// (a TLS Secret's holds its certificate and key again), and it is on most objects a user
// applies. Portico reads no annotation outside its own and ingress-nginx's prefixes besides a
// few named ones (the class annotations, its Gateway Services' own), and every annotation
// report (migrate, to-gateway, explain) lists only those prefixes, so nothing reads or reports
// it (docs/design.md "Sources at start-up"). Only large, provably unread annotations belong
// here: small ones (Helm's meta.helm.sh/*) are not worth a rule.
const UNREAD_ANNOTATIONS: readonly string[] = [LAST_APPLIED_ANNOTATION];

function withoutUnread(a: Record<string, string>): Record<string, string> {
  if (!UNREAD_ANNOTATIONS.some((k) => Object.hasOwn(a, k))) return a;
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(a)) if (!UNREAD_ANNOTATIONS.includes(k)) out[k] = val;
  return out;
}

// ObjectMeta keeps only the fields declared here: the rest (managedFields above all, which
// the API server adds to every object since Kubernetes 1.18 and which often outweighs the
// spec, ownerReferences, finalizers, generateName) is read by nothing in Portico, and every
// stored object would otherwise hold it for the process's life (docs/design.md "Sources at
// start-up").
export const ObjectMetaSchema = v.object({
  name: v.pipe(v.string(), v.minLength(1, "metadata.name is empty")),
  namespace: v.optional(v.string()),
  uid: v.optional(v.string()),
  resourceVersion: v.optional(v.string()),
  generation: v.optional(v.number()),
  creationTimestamp: optStr,
  deletionTimestamp: optStr,
  labels: stringMap,
  annotations: v.optional(v.nullable(v.pipe(v.record(v.string(), v.string()), v.transform(withoutUnread)))),
});

const ServiceBackendPortSchema = v.looseObject({
  number: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(65535))),
  name: v.optional(v.string()),
});

const TypedLocalObjectReferenceSchema = v.looseObject({
  apiGroup: optStr,
  kind: str,
  name: str,
});

export const IngressBackendSchema = v.looseObject({
  service: v.optional(
    v.looseObject({
      name: v.pipe(v.string(), v.minLength(1, "backend service name is empty")),
      port: v.optional(ServiceBackendPortSchema),
    }),
  ),
  resource: v.optional(TypedLocalObjectReferenceSchema),
});

export const HTTPIngressPathSchema = v.looseObject({
  path: v.optional(v.string()),
  pathType: v.picklist(["Exact", "Prefix", "ImplementationSpecific"], "pathType must be Exact, Prefix or ImplementationSpecific"),
  backend: IngressBackendSchema,
});

export const IngressRuleSchema = v.looseObject({
  host: optStr,
  http: v.optional(
    v.nullable(
      v.looseObject({
        paths: v.array(HTTPIngressPathSchema),
      }),
    ),
  ),
});

export const IngressTLSSchema = v.looseObject({
  hosts: v.optional(v.nullable(v.array(v.string()))),
  secretName: optStr,
});

export const IngressSchema = v.looseObject({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.literal("Ingress")),
  metadata: ObjectMetaSchema,
  spec: v.optional(
    v.looseObject({
      ingressClassName: optStr,
      defaultBackend: v.optional(v.nullable(IngressBackendSchema)),
      tls: v.optional(v.nullable(v.array(IngressTLSSchema))),
      rules: v.optional(v.nullable(v.array(IngressRuleSchema))),
    }),
    {},
  ),
  status: v.optional(v.unknown()),
});

export const IngressClassSchema = v.looseObject({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.literal("IngressClass")),
  metadata: ObjectMetaSchema,
  spec: v.optional(
    v.looseObject({
      controller: optStr,
    }),
    {},
  ),
});

export const ServicePortSchema = v.looseObject({
  name: optStr,
  port: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(65535)),
  targetPort: v.optional(v.union([v.number(), v.string()])),
  protocol: optStr,
  appProtocol: optStr,
});

export const ServiceSchema = v.looseObject({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.literal("Service")),
  metadata: ObjectMetaSchema,
  spec: v.optional(
    v.looseObject({
      type: optStr,
      clusterIP: optStr,
      externalName: optStr,
      externalIPs: v.optional(v.nullable(v.array(v.string()))),
      ports: v.optional(v.nullable(v.array(ServicePortSchema))),
    }),
    {},
  ),
  status: v.optional(
    v.nullable(
      v.looseObject({
        loadBalancer: v.optional(
          v.nullable(
            v.looseObject({
              ingress: v.optional(
                v.nullable(v.array(v.looseObject({ ip: optStr, hostname: optStr }))),
              ),
            }),
          ),
        ),
      }),
    ),
  ),
});

const EndpointConditionsSchema = v.looseObject({
  ready: v.optional(v.nullable(v.boolean())),
  serving: v.optional(v.nullable(v.boolean())),
  terminating: v.optional(v.nullable(v.boolean())),
});

export const EndpointSchema = v.looseObject({
  addresses: v.array(v.string()),
  conditions: v.optional(v.nullable(EndpointConditionsSchema)),
  hostname: optStr,
  nodeName: optStr,
  targetRef: v.optional(v.nullable(v.looseObject({ kind: optStr, name: optStr, namespace: optStr }))),
});

export const EndpointPortSchema = v.looseObject({
  name: optStr,
  port: v.optional(v.nullable(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(65535)))),
  protocol: optStr,
  appProtocol: optStr,
});

export const EndpointSliceSchema = v.looseObject({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.literal("EndpointSlice")),
  metadata: ObjectMetaSchema,
  addressType: v.picklist(["IPv4", "IPv6", "FQDN"]),
  endpoints: v.optional(v.nullable(v.array(EndpointSchema)), []),
  ports: v.optional(v.nullable(v.array(EndpointPortSchema))),
});

export const SecretSchema = v.looseObject({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.literal("Secret")),
  metadata: ObjectMetaSchema,
  type: optStr,
  // base64 as on the wire (`data`); `stringData` is accepted from --manifests files only.
  data: stringMap,
  stringData: stringMap,
});

/**
 * A ConfigMap an Ingress names (auth-proxy-set-headers): only `data`, the text entries;
 * `binaryData` is not read (ingress-nginx reads `.Data` alone, authreq/main.go).
 */
export const ConfigMapSchema = v.looseObject({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.literal("ConfigMap")),
  metadata: ObjectMetaSchema,
  data: stringMap,
});

export type IngressBackend = v.InferOutput<typeof IngressBackendSchema>;
export type HTTPIngressPath = v.InferOutput<typeof HTTPIngressPathSchema>;
export type IngressRule = v.InferOutput<typeof IngressRuleSchema>;
export type Ingress = v.InferOutput<typeof IngressSchema>;
export type IngressClass = v.InferOutput<typeof IngressClassSchema>;
export type Service = v.InferOutput<typeof ServiceSchema>;
export type EndpointSlice = v.InferOutput<typeof EndpointSliceSchema>;
export type ConfigMap = v.InferOutput<typeof ConfigMapSchema>;
export type Endpoint = v.InferOutput<typeof EndpointSchema>;
export type Secret = v.InferOutput<typeof SecretSchema>;

/** A Secret's value under `key` as text: `stringData` (--manifests only) first, else `data` decoded from base64; null when absent. */
export function secretText(secret: Secret, key: string): string | null {
  const plain = secret.stringData?.[key];
  if (plain !== undefined) return plain;
  const b64 = secret.data?.[key];
  return b64 === undefined ? null : Buffer.from(b64, "base64").toString("utf8");
}
