// Every Kubernetes API call Portico makes, declared once. kube/ code asks this table for the
// calls it performs (see `assertDeclared`), and test/packaging/rbac.test.ts checks that
// k8s/*.yaml grants exactly these: no call without a grant, no grant without a call.
export interface ApiPermission {
  readonly group: string; // "" for the core group
  readonly resource: string; // plural, with "/status" for the subresource
  readonly verbs: readonly string[];
  /** "cluster": ClusterRole; "namespace": Role in the controller's own namespace. */
  readonly scope: "cluster" | "namespace";
  readonly why: string;
}

export const API_PERMISSIONS: readonly ApiPermission[] = [
  { group: "networking.k8s.io", resource: "ingresses", verbs: ["get", "list", "watch"], scope: "cluster", why: "routes" },
  { group: "networking.k8s.io", resource: "ingressclasses", verbs: ["get", "list", "watch"], scope: "cluster", why: "class selection" },
  { group: "", resource: "services", verbs: ["get", "list", "watch"], scope: "cluster", why: "backend ports, ExternalName, publish-service" },
  { group: "discovery.k8s.io", resource: "endpointslices", verbs: ["get", "list", "watch"], scope: "cluster", why: "pod endpoints" },
  { group: "", resource: "secrets", verbs: ["get", "list", "watch"], scope: "cluster", why: "TLS certificates and basic-auth users (all types but tokens, registry credentials and Helm releases)" },
  { group: "", resource: "configmaps", verbs: ["get", "list", "watch"], scope: "cluster", why: "ingress-nginx's ConfigMap (--nginx-configmap) by name, in whatever namespace it is, and those auth-proxy-set-headers names: by name, or above 16 one collection list+watch keeping only those (kube/configmap-refs.ts)" },
  { group: "", resource: "namespaces", verbs: ["get", "list", "watch"], scope: "cluster", why: "labels for Gateway allowedRoutes.namespaces.selector" },
  { group: "gateway.networking.k8s.io", resource: "gatewayclasses", verbs: ["get", "list", "watch"], scope: "cluster", why: "Gateway API: classes naming our controller" },
  { group: "gateway.networking.k8s.io", resource: "gateways", verbs: ["get", "list", "watch"], scope: "cluster", why: "Gateway API: listeners" },
  { group: "gateway.networking.k8s.io", resource: "httproutes", verbs: ["get", "list", "watch"], scope: "cluster", why: "Gateway API: routes" },
  { group: "gateway.networking.k8s.io", resource: "grpcroutes", verbs: ["get", "list", "watch"], scope: "cluster", why: "Gateway API: gRPC routes" },
  { group: "gateway.networking.k8s.io", resource: "referencegrants", verbs: ["get", "list", "watch"], scope: "cluster", why: "Gateway API: cross-namespace references" },
  { group: "networking.k8s.io", resource: "ingresses/status", verbs: ["patch"], scope: "cluster", why: "status.loadBalancer" },
  { group: "portico.dev", resource: "ingressnginxpolicies", verbs: ["get", "list", "watch"], scope: "cluster", why: "Gateway API: IngressNginxPolicy objects that route rules name in ExtensionRef filters" },
  { group: "gateway.networking.k8s.io", resource: "gatewayclasses/status", verbs: ["patch"], scope: "cluster", why: "Gateway API: GatewayClass Accepted" },
  { group: "gateway.networking.k8s.io", resource: "gateways/status", verbs: ["patch"], scope: "cluster", why: "Gateway API: Gateway and listener conditions, addresses" },
  { group: "gateway.networking.k8s.io", resource: "httproutes/status", verbs: ["patch"], scope: "cluster", why: "Gateway API: route parent conditions" },
  { group: "gateway.networking.k8s.io", resource: "grpcroutes/status", verbs: ["patch"], scope: "cluster", why: "Gateway API: gRPC route parent conditions" },
  { group: "events.k8s.io", resource: "events", verbs: ["create", "patch"], scope: "cluster", why: "diagnostics as Events on Ingresses, Gateways, HTTPRoutes and GRPCRoutes (in their namespaces: cluster scope)" },
  { group: "coordination.k8s.io", resource: "leases", verbs: ["get", "create", "update"], scope: "namespace", why: "leader election" },
  { group: "", resource: "services", verbs: ["create", "patch", "delete"], scope: "namespace", why: "--gateway-ports: each Gateway's Service, beside --publish-service (kube/gateway-services.ts)" },
];

/** Throws at start-up (not per call) when code uses an undeclared call: keeps RBAC honest. */
export function assertDeclared(group: string, resource: string, verb: string): void {
  const ok = API_PERMISSIONS.some((p) => p.group === group && p.resource === resource && p.verbs.includes(verb));
  if (!ok) throw new Error(`API call ${verb} ${group || "core"}/${resource} is not declared in src/kube/permissions.ts`);
}
