// What part of each object routing depends on. Two versions of an object with equal
// relevant parts compile to the same table, so the store does not wake the compiler for
// them. Status, resourceVersion and managedFields are noise.
import { UNWATCHED_SECRET_TYPES, type Kind, type KindObjects } from "../model/kinds.ts";
import type { Secret } from "../model/schemas.ts";

type Annotations = Readonly<Record<string, string>> | null | undefined;

// kubectl's last-applied-configuration, rewritten on every apply and read by no routing
// decision, never reaches here: validation drops it (model/schemas.ts ObjectMetaSchema).
function relevantAnnotations(a: Annotations): Readonly<Record<string, string>> {
  return a ?? {};
}

export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";
/**
 * The label on the Services Portico makes for Gateways (--gateway-ports): the compiler keeps a
 * Gateway's port only from a Service carrying it (compile/gateway/ports.ts isGatewayService).
 */
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";

/** The parts of an object of `kind` the compiler reads. */
export function relevantPart<K extends Kind>(kind: K, object: KindObjects[K]): unknown {
  switch (kind) {
    case "Ingress": {
      const o = object as KindObjects["Ingress"];
      const m = o.metadata;
      // The class annotation lives among the annotations; creationTimestamp orders conflicts
      // (the oldest wins).
      return [o.spec, relevantAnnotations(m.annotations), m.creationTimestamp ?? null, m.deletionTimestamp ?? null, m.uid ?? null];
    }
    case "IngressClass": {
      const o = object as KindObjects["IngressClass"];
      return [o.spec, relevantAnnotations(o.metadata.annotations)];
    }
    case "Service": {
      const o = object as KindObjects["Service"];
      // status.loadBalancer feeds --publish-service addresses; the managed-by label says whether
      // a Gateway's Service records its ports (compile/gateway/ports.ts).
      return [o.spec, relevantAnnotations(o.metadata.annotations), o.status ?? null, o.metadata.labels?.[MANAGED_BY_LABEL] ?? null];
    }
    case "EndpointSlice": {
      // What compile/endpoints.ts upstreamsFromSlices reads: per endpoint its first address, its
      // three conditions (discovery.k8s.io/v1 EndpointConditions) and its Pod's name; per port
      // its name and number. nodeName, zone, hints, hostname and the other addresses are not
      // read: a topology-hint or zone update wakes nothing.
      const o = object as KindObjects["EndpointSlice"];
      const endpoints = (o.endpoints ?? []).map((e) => [e.addresses[0] ?? null, e.conditions?.ready ?? null, e.conditions?.serving ?? null, e.conditions?.terminating ?? null, e.targetRef?.name ?? null]);
      const ports = (o.ports ?? []).map((p) => [p.name ?? null, p.port ?? null]);
      return [o.addressType, endpoints, ports, o.metadata.labels?.[SERVICE_NAME_LABEL] ?? null];
    }
    case "Secret": {
      const o = object as KindObjects["Secret"];
      return [o.type ?? null, o.data ?? null, o.stringData ?? null, o.metadata.uid ?? null];
    }
    case "ConfigMap": {
      // auth-proxy-set-headers reads `data` (model/schemas.ts ConfigMapSchema).
      const o = object as KindObjects["ConfigMap"];
      return [o.data ?? null, o.metadata.uid ?? null];
    }
    case "Namespace":
      // allowedRoutes.namespaces.selector reads labels only.
      return object.metadata.labels ?? null;
    case "GatewayClass":
    case "Gateway":
    case "HTTPRoute":
    case "GRPCRoute":
    case "ReferenceGrant": {
      // generation feeds observedGeneration in status; creationTimestamp orders route precedence
      // (Gateway API: the oldest route wins a tie).
      const m = object.metadata;
      return [(object as { spec?: unknown }).spec ?? null, m.generation ?? null, m.creationTimestamp ?? null, m.uid ?? null, m.deletionTimestamp ?? null];
    }
    case "IngressNginxPolicy": {
      // Read by the rules naming it: its annotations, as an Ingress's (compile/gateway/extension.ts).
      const o = object as KindObjects["IngressNginxPolicy"];
      return [relevantAnnotations(o.spec.annotations), o.metadata.uid ?? null, o.metadata.deletionTimestamp ?? null];
    }
  }
  return object;
}

export function relevantEqual<K extends Kind>(kind: K, a: KindObjects[K], b: KindObjects[K]): boolean {
  return deepEqual(relevantPart(kind, a), relevantPart(kind, b));
}

/**
 * TLS Secrets matter to routing whoever names them. Untyped Secrets carrying tls.crt come from
 * --manifests files.
 */
export function isTlsSecret(s: Secret): boolean {
  if (s.type === "kubernetes.io/tls") return true;
  if (s.type !== undefined && s.type !== null && s.type !== "") return false;
  return s.data?.["tls.crt"] !== undefined || s.stringData?.["tls.crt"] !== undefined;
}

/**
 * Secrets the store keeps: all but the types Portico never reads (model/kinds.ts), which the
 * API watch already leaves out and --manifests files may still hold.
 */
export function isKeptSecret(s: Secret): boolean {
  return s.type === undefined || s.type === null || !UNWATCHED_SECRET_TYPES.includes(s.type);
}

/** Structural equality of JSON-like values (key order does not matter; undefined keys = absent). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], bb[i])) return false;
    return true;
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  // Count defined keys instead of allocating filtered key arrays (this runs per object on relists).
  let defined = 0;
  for (const k in ao) {
    if (ao[k] === undefined) continue;
    defined++;
    if (!deepEqual(ao[k], bo[k])) return false;
  }
  for (const k in bo) if (bo[k] !== undefined) defined--;
  return defined === 0;
}
