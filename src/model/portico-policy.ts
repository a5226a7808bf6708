// Portico's own extension kind (portico.dev/v1alpha1 IngressNginxPolicy): ingress-nginx
// annotations, as written on an Ingress, that an HTTPRoute or GRPCRoute rule names in an
// ExtensionRef filter (docs/design.md "Gateway API", "IngressNginxPolicy"). `portico migrate
// --to gateway-api` writes one for what Gateway API cannot say; the compiler reads the
// annotations with the same families an Ingress's go through. Permissive like gateway.ts: a
// --manifests object has not been through the CRD.
import * as v from "valibot";
import { ObjectMetaSchema } from "./schemas.ts";

export const PORTICO_GROUP = "portico.dev";

export const IngressNginxPolicySchema = v.looseObject({
  apiVersion: v.optional(v.string()),
  kind: v.optional(v.literal("IngressNginxPolicy")),
  metadata: ObjectMetaSchema,
  spec: v.optional(
    v.looseObject({
      annotations: v.optional(v.nullable(v.record(v.string(), v.string()))),
    }),
    {},
  ),
});

export type IngressNginxPolicy = v.InferOutput<typeof IngressNginxPolicySchema>;
