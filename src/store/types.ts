import type { Diagnostic } from "../model/diagnostic.ts";
import type { Kind, KindObjects } from "../model/kinds.ts";
import type { ConfigMap, EndpointSlice, Ingress, IngressClass, Secret, Service } from "../model/schemas.ts";
import type { IngressNginxPolicy } from "../model/portico-policy.ts";
import type { Gateway, GatewayClass, GRPCRoute, HTTPRoute, Namespace, ReferenceGrant } from "../model/gateway.ts";

/** One change from a source (a watch stream or the --manifests files), already validated. */
export type StoreEvent<K extends Kind = Kind> =
  | { readonly type: "ADDED" | "MODIFIED"; readonly kind: K; readonly object: KindObjects[K] }
  | { readonly type: "DELETED"; readonly kind: K; readonly object: KindObjects[K] };

/** A read-only view of everything the compiler needs, keyed by `namespace/name`. */
export interface Snapshot {
  readonly ingresses: ReadonlyMap<string, Ingress>;
  readonly ingressClasses: ReadonlyMap<string, IngressClass>;
  readonly services: ReadonlyMap<string, Service>;
  /** EndpointSlices grouped by `namespace/<kubernetes.io/service-name label>`. */
  readonly endpointSlices: ReadonlyMap<string, readonly EndpointSlice[]>;
  readonly secrets: ReadonlyMap<string, Secret>;
  /** Gateway API (empty when its CRDs are absent) and the Namespaces its selectors read. */
  readonly namespaces: ReadonlyMap<string, Namespace>;
  readonly gatewayClasses: ReadonlyMap<string, GatewayClass>;
  readonly gateways: ReadonlyMap<string, Gateway>;
  readonly httpRoutes: ReadonlyMap<string, HTTPRoute>;
  readonly grpcRoutes: ReadonlyMap<string, GRPCRoute>;
  readonly referenceGrants: ReadonlyMap<string, ReferenceGrant>;
  /** Portico's IngressNginxPolicy objects (ExtensionRef filters; empty when its CRD is absent). */
  readonly ingressNginxPolicies?: ReadonlyMap<string, IngressNginxPolicy>;
  /**
   * The ConfigMaps Ingresses name in auth-proxy-set-headers (kube/configmap-refs.ts watches
   * those alone; --manifests gives every ConfigMap of its files). Absent: none.
   */
  readonly configMaps?: ReadonlyMap<string, ConfigMap>;
}

/**
 * Where objects come from. A source emits validated events and says when each kind's first
 * full list has been applied (readiness). `replace` is a full relist of one kind.
 */
export interface SourceSink {
  apply(event: StoreEvent): void;
  replace<K extends Kind>(kind: K, objects: readonly KindObjects[K][]): void;
  synced(kind: Kind): void;
}

/**
 * A source's current diagnostics for one owner: a manifest file, or one object of a watched
 * kind. Each call replaces that owner's whole set and an empty list clears it, so a diagnostic
 * goes away with its cause (file fixed or deleted, object fixed, deleted, or gone at a relist).
 */
export type DiagnosticsReport = (owner: string, diagnostics: readonly Diagnostic[]) => void;

export interface Source {
  start(sink: SourceSink): Promise<void>;
  stop(): Promise<void>;
}
