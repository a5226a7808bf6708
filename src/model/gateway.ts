// Gateway API objects (gateway.networking.k8s.io, standard channel, v1.6) and the Namespaces
// that `allowedRoutes.namespaces.selector` selects. Only the fields Portico reads are
// declared; like schemas.ts, unknown keys are kept out of the types but not rejected. The
// API server has already applied the CRD's OpenAPI validation and defaults to watched
// objects; objects from --manifests have not been through it, so the schemas here stay
// permissive (every defaulted field optional) and the compiler applies the spec's defaults
// itself (docs/design.md "Gateway API").
import * as v from "valibot";
import { ObjectMetaSchema } from "./schemas.ts";

const optStr = v.optional(v.nullable(v.string()));
const port = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(65535));
const optPort = v.optional(v.nullable(port));
const list = <T extends v.GenericSchema>(item: T) => v.optional(v.nullable(v.array(item)));

/**
 * Gateway API Hostname (apis/v1 shared_types.go: at most 253 characters of the pattern below,
 * a leading `*.` allowed), checked here because a --manifests object has not been through the
 * CRD: a route or listener hostname becomes an SNI name of the HTTPS listener (Bun.serve refuses
 * a NUL there, and a refused set would hold every later certificate change back) and a lookup
 * key. Upper case is taken (the compiler lowercases: RFC 4343), the rest of the pattern is the
 * CRD's; the length is checked first, so the pattern never runs on a long text.
 */
const HOSTNAME = /^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/i;
const hostname = v.pipe(
  v.string(),
  v.check((h) => h.length <= 253 && HOSTNAME.test(h), "a hostname is not a DNS name (Gateway API Hostname)"),
);

/**
 * metadata of a Gateway API object: the name a DNS subdomain and the namespace a DNS label
 * (RFC 1123, as the API server requires of every such object), checked for --manifests objects.
 * The compiler keys objects by `namespace/name` and a GRPCRoute's work by `namespace/name#GRPCRoute`
 * (compile/gateway/grpcroute.ts): a `/` or `#` in either would make two objects one key.
 */
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const GatewayObjectMetaSchema = v.pipe(
  ObjectMetaSchema,
  v.check(
    (m) => m.name.length <= 253 && DNS_SUBDOMAIN.test(m.name) && (m.namespace === undefined || (m.namespace.length <= 63 && DNS_LABEL.test(m.namespace))),
    "metadata.name is not a DNS subdomain or metadata.namespace not a DNS label (RFC 1123)",
  ),
);

/** metav1.LabelSelector (matchLabels and matchExpressions). */
export const LabelSelectorSchema = v.looseObject({
  matchLabels: v.optional(v.nullable(v.record(v.string(), v.string()))),
  matchExpressions: list(
    v.looseObject({
      key: v.string(),
      operator: v.string(),
      values: list(v.string()),
    }),
  ),
});

/** A reference to a Secret (or another kind) from a listener's tls.certificateRefs. */
const SecretObjectReferenceSchema = v.looseObject({
  group: optStr,
  kind: optStr,
  name: v.string(),
  namespace: optStr,
});

export const GatewayClassSchema = v.looseObject({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.literal("GatewayClass")),
  metadata: GatewayObjectMetaSchema,
  spec: v.looseObject({
    controllerName: v.string(),
    description: optStr,
  }),
  status: v.optional(v.unknown()),
});

export const ListenerSchema = v.looseObject({
  name: v.string(),
  hostname: v.optional(v.nullable(hostname)),
  port,
  protocol: v.string(),
  tls: v.optional(
    v.nullable(
      v.looseObject({
        mode: optStr,
        certificateRefs: list(SecretObjectReferenceSchema),
      }),
    ),
  ),
  allowedRoutes: v.optional(
    v.nullable(
      v.looseObject({
        namespaces: v.optional(
          v.nullable(
            v.looseObject({
              from: optStr,
              selector: v.optional(v.nullable(LabelSelectorSchema)),
            }),
          ),
        ),
        kinds: list(v.looseObject({ group: optStr, kind: v.string() })),
      }),
    ),
  ),
});

export const GatewaySchema = v.looseObject({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.literal("Gateway")),
  metadata: GatewayObjectMetaSchema,
  spec: v.looseObject({
    gatewayClassName: v.string(),
    listeners: v.array(ListenerSchema),
    // value is optional in the standard CRD (GatewaySpecAddress: "When a value is unspecified,
    // an implementation SHOULD automatically assign an address"); compile/gateway/attach.ts
    // answers such a Gateway Programmed=False AddressNotAssigned.
    addresses: list(v.looseObject({ type: optStr, value: optStr })),
  }),
  status: v.optional(v.unknown()),
});

export const ParentReferenceSchema = v.looseObject({
  group: optStr,
  kind: optStr,
  namespace: optStr,
  name: v.string(),
  sectionName: optStr,
  port: optPort,
});

const HTTPHeaderSchema = v.looseObject({ name: v.string(), value: v.string() });

const HTTPHeaderFilterSchema = v.looseObject({
  set: list(HTTPHeaderSchema),
  add: list(HTTPHeaderSchema),
  remove: list(v.string()),
});

const HTTPPathModifierSchema = v.looseObject({
  type: v.string(),
  replaceFullPath: optStr,
  replacePrefixMatch: optStr,
});

export const HTTPRouteFilterSchema = v.looseObject({
  type: v.string(),
  requestHeaderModifier: v.optional(v.nullable(HTTPHeaderFilterSchema)),
  responseHeaderModifier: v.optional(v.nullable(HTTPHeaderFilterSchema)),
  requestRedirect: v.optional(
    v.nullable(
      v.looseObject({
        scheme: optStr,
        hostname: optStr,
        path: v.optional(v.nullable(HTTPPathModifierSchema)),
        port: optPort,
        statusCode: v.optional(v.nullable(v.number())),
      }),
    ),
  ),
  urlRewrite: v.optional(
    v.nullable(
      v.looseObject({
        hostname: optStr,
        path: v.optional(v.nullable(HTTPPathModifierSchema)),
      }),
    ),
  ),
  requestMirror: v.optional(
    v.nullable(
      v.looseObject({
        backendRef: v.looseObject({ group: optStr, kind: optStr, name: v.string(), namespace: optStr, port: optPort }),
        percent: v.optional(v.nullable(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(100)))),
        fraction: v.optional(v.nullable(v.looseObject({ numerator: v.pipe(v.number(), v.integer(), v.minValue(0)), denominator: v.optional(v.nullable(v.pipe(v.number(), v.integer(), v.minValue(1)))) }))),
      }),
    ),
  ),
  // HTTPCORSFilter (standard channel since v1.6): checked further where compiled.
  cors: v.optional(
    v.nullable(
      v.looseObject({
        allowOrigins: list(v.string()),
        allowMethods: list(v.string()),
        allowHeaders: list(v.string()),
        exposeHeaders: list(v.string()),
        allowCredentials: v.optional(v.nullable(v.boolean())),
        maxAge: v.optional(v.nullable(v.number())),
      }),
    ),
  ),
  extensionRef: v.optional(v.nullable(v.looseObject({ group: v.string(), kind: v.string(), name: v.string() }))),
});

const BackendRefFields = {
  group: optStr,
  kind: optStr,
  name: v.string(),
  namespace: optStr,
  port: optPort,
};

export const HTTPBackendRefSchema = v.looseObject({
  ...BackendRefFields,
  // Gateway API: weight defaults to 1; 0 means "no traffic" (HTTPBackendRef, BackendRef.Weight).
  weight: v.optional(v.nullable(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(1_000_000)))),
  filters: list(HTTPRouteFilterSchema),
});

const HTTPRouteMatchSchema = v.looseObject({
  path: v.optional(v.nullable(v.looseObject({ type: optStr, value: optStr }))),
  headers: list(v.looseObject({ type: optStr, name: v.string(), value: v.string() })),
  queryParams: list(v.looseObject({ type: optStr, name: v.string(), value: v.string() })),
  method: optStr,
});

export const HTTPRouteRuleSchema = v.looseObject({
  name: optStr,
  matches: list(HTTPRouteMatchSchema),
  filters: list(HTTPRouteFilterSchema),
  backendRefs: list(HTTPBackendRefSchema),
  timeouts: v.optional(v.nullable(v.looseObject({ request: optStr, backendRequest: optStr }))),
});

export const HTTPRouteSchema = v.looseObject({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.literal("HTTPRoute")),
  metadata: GatewayObjectMetaSchema,
  spec: v.optional(
    v.looseObject({
      parentRefs: list(ParentReferenceSchema),
      hostnames: list(hostname),
      rules: list(HTTPRouteRuleSchema),
    }),
    {},
  ),
  status: v.optional(v.unknown()),
});

export const ReferenceGrantSchema = v.looseObject({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.literal("ReferenceGrant")),
  metadata: GatewayObjectMetaSchema,
  spec: v.looseObject({
    from: v.array(v.looseObject({ group: v.string(), kind: v.string(), namespace: v.string() })),
    to: v.array(v.looseObject({ group: v.string(), kind: v.string(), name: optStr })),
  }),
});

export const NamespaceSchema = v.looseObject({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.literal("Namespace")),
  metadata: ObjectMetaSchema,
});

export type LabelSelector = v.InferOutput<typeof LabelSelectorSchema>;
export type GatewayClass = v.InferOutput<typeof GatewayClassSchema>;
export type Gateway = v.InferOutput<typeof GatewaySchema>;
export type Listener = v.InferOutput<typeof ListenerSchema>;
export type ParentReference = v.InferOutput<typeof ParentReferenceSchema>;
export type HTTPRoute = v.InferOutput<typeof HTTPRouteSchema>;
export type HTTPRouteRule = v.InferOutput<typeof HTTPRouteRuleSchema>;
export type HTTPRouteFilter = v.InferOutput<typeof HTTPRouteFilterSchema>;
export type HTTPBackendRef = v.InferOutput<typeof HTTPBackendRefSchema>;
export type ReferenceGrant = v.InferOutput<typeof ReferenceGrantSchema>;
export type Namespace = v.InferOutput<typeof NamespaceSchema>;

// GRPCRoute (apis/v1 grpcroute_types.go, standard channel since v1.1). Permissive like the
// HTTPRoute schema: --manifests objects have not been through the CRD's validation, so the
// compiler (compile/gateway/grpcroute.ts) checks what it uses.
const GRPCRouteMatchSchema = v.looseObject({
  method: v.optional(v.nullable(v.looseObject({ type: optStr, service: optStr, method: optStr }))),
  headers: list(v.looseObject({ type: optStr, name: v.string(), value: v.string() })),
});

export const GRPCRouteRuleSchema = v.looseObject({
  name: optStr,
  matches: list(GRPCRouteMatchSchema),
  filters: list(HTTPRouteFilterSchema),
  backendRefs: list(HTTPBackendRefSchema),
});

export const GRPCRouteSchema = v.looseObject({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.literal("GRPCRoute")),
  metadata: GatewayObjectMetaSchema,
  spec: v.optional(
    v.looseObject({
      parentRefs: list(ParentReferenceSchema),
      hostnames: list(hostname),
      rules: list(GRPCRouteRuleSchema),
    }),
    {},
  ),
  status: v.optional(v.unknown()),
});

export type GRPCRoute = v.InferOutput<typeof GRPCRouteSchema>;
export type GRPCRouteRule = v.InferOutput<typeof GRPCRouteRuleSchema>;
