// Test helper: multi-document YAML → Snapshot, the way a source + store would build one.
// Objects that fail validation become InvalidObject diagnostics (kept for golden files).
import { loadAll } from "js-yaml";
import { isKind, objectKey, parseObject, type Kind, type KindObjects } from "../../src/model/kinds.ts";
import type { Diagnostic } from "../../src/model/diagnostic.ts";
import type { ConfigMap, EndpointSlice, Ingress, IngressClass, Secret, Service } from "../../src/model/schemas.ts";
import type { Snapshot } from "../../src/store/types.ts";
import type { IngressNginxPolicy } from "../../src/model/portico-policy.ts";
import type { Gateway, GatewayClass, GRPCRoute, HTTPRoute, Namespace, ReferenceGrant } from "../../src/model/gateway.ts";

export interface FixtureRequest {
  readonly host: string;
  readonly path: string;
  /** `"<Type> <path>"`, optionally followed by ` <namespace/name>`; or "404"; or "default". */
  readonly expect: string;
}

export interface Fixture {
  readonly snapshot: Snapshot;
  readonly parseDiagnostics: Diagnostic[];
  readonly requests: FixtureRequest[];
  readonly config: Record<string, unknown>;
}

/** Build a Snapshot from already-parsed objects. */
export function snapshotOf(objects: readonly { kind: Kind; object: KindObjects[Kind] }[]): Snapshot {
  const ingresses = new Map<string, Ingress>();
  const ingressClasses = new Map<string, IngressClass>();
  const services = new Map<string, Service>();
  const endpointSlices = new Map<string, EndpointSlice[]>();
  const secrets = new Map<string, Secret>();
  const namespaces = new Map<string, Namespace>();
  const gatewayClasses = new Map<string, GatewayClass>();
  const gateways = new Map<string, Gateway>();
  const httpRoutes = new Map<string, HTTPRoute>();
  const grpcRoutes = new Map<string, GRPCRoute>();
  const referenceGrants = new Map<string, ReferenceGrant>();
  const ingressNginxPolicies = new Map<string, IngressNginxPolicy>();
  const configMaps = new Map<string, ConfigMap>();
  const key = (o: { metadata: { name: string; namespace?: string } }) =>
    objectKey({ name: o.metadata.name, namespace: o.metadata.namespace ?? "default" });
  for (const { kind, object } of objects) {
    switch (kind) {
      case "Ingress": ingresses.set(key(object as Ingress), object as Ingress); break;
      case "IngressClass": ingressClasses.set(object.metadata.name, object as IngressClass); break;
      case "Service": services.set(key(object as Service), object as Service); break;
      case "Secret": secrets.set(key(object as Secret), object as Secret); break;
      case "Namespace": namespaces.set(object.metadata.name, object as Namespace); break;
      case "GatewayClass": gatewayClasses.set(object.metadata.name, object as GatewayClass); break;
      case "Gateway": gateways.set(key(object), object as Gateway); break;
      case "HTTPRoute": httpRoutes.set(key(object), object as HTTPRoute); break;
      case "GRPCRoute": grpcRoutes.set(key(object), object as GRPCRoute); break;
      case "ReferenceGrant": referenceGrants.set(key(object), object as ReferenceGrant); break;
      case "IngressNginxPolicy": ingressNginxPolicies.set(key(object), object as IngressNginxPolicy); break;
      case "ConfigMap": configMaps.set(key(object), object as ConfigMap); break;
      case "EndpointSlice": {
        const s = object as EndpointSlice;
        const svc = s.metadata.labels?.["kubernetes.io/service-name"];
        if (!svc) break;
        const k = `${s.metadata.namespace ?? "default"}/${svc}`;
        endpointSlices.set(k, [...(endpointSlices.get(k) ?? []), s]);
        break;
      }
    }
  }
  return { ingresses, ingressClasses, services, endpointSlices, secrets, namespaces, gatewayClasses, gateways, httpRoutes, grpcRoutes, referenceGrants, ingressNginxPolicies, configMaps };
}

export function loadFixture(text: string): Fixture {
  const parseDiagnostics: Diagnostic[] = [];
  const objects: { kind: Kind; object: KindObjects[Kind] }[] = [];
  const requests: FixtureRequest[] = [];
  let config: Record<string, unknown> = {};
  for (const doc of loadAll(text)) {
    if (doc === null || typeof doc !== "object") continue;
    const kind = (doc as { kind?: unknown }).kind;
    if (kind === "TestRequests") {
      requests.push(...((doc as { requests?: FixtureRequest[] }).requests ?? []));
      continue;
    }
    if (kind === "TestConfig") {
      config = (doc as { config?: Record<string, unknown> }).config ?? {};
      continue;
    }
    if (!isKind(kind)) throw new Error(`fixture document of unknown kind ${String(kind)}`);
    const r = parseObject(kind, doc);
    if (r.ok) objects.push({ kind, object: r.object });
    else parseDiagnostics.push(r.diagnostic);
  }
  return { snapshot: snapshotOf(objects), parseDiagnostics, requests, config };
}
