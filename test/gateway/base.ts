// The conformance suite's base objects (conformance/base/manifests.yaml in
// kubernetes-sigs/gateway-api v1.6: the infra namespaces, the shared Gateways, the infra
// backends), written here as data for Portico's tests, and a compile-level harness.
import { load, loadAll } from "js-yaml";
import { isKind, parseObject, type Kind, type KindObjects } from "../../src/model/kinds.ts";
import { snapshotOf } from "../compile/snapshot.ts";
import { compileGateways } from "../../src/compile/gateway/table.ts";
import { type GatewayCompileResult } from "../../src/compile/types.ts";
import { resolveRef } from "../../src/compile/backends.ts";
import { findGatewayEntry, requestHostname } from "../../src/table/gateway.ts";
import { type GatewayEntry } from "../../src/table/types.ts";
import type { Snapshot } from "../../src/store/types.ts";
import * as K from "../../src/kinds/index.ts";

/** A status condition as the Gateway API tests compare it (metav1.Condition's type, status, reason). */
export type Condition = { readonly type: string; readonly status: string; readonly reason: string };
/** `Type=Status/Reason` of one condition. */
export const conditionText = (c: Condition): string => `${c.type}=${c.status}/${c.reason}`;
/** `Type=Status/Reason` of each condition, in order, space-separated. */
export const conditionsText = (cs: readonly Condition[]): string => cs.map(conditionText).join(" ");

export const INFRA = "gateway-conformance-infra";
export const APP = "gateway-conformance-app-backend";
export const WEB = "gateway-conformance-web-backend";
export const CONTROLLER = "portico.dev/gateway-controller";

function service(ns: string, name: string, ip: string): string {
  return `
apiVersion: v1
kind: Service
metadata: { name: ${name}, namespace: ${ns} }
spec: { clusterIP: 10.96.0.${ip.split(".")[3]}, ports: [{ name: first-port, port: 8080, targetPort: 3000 }, { name: second-port, port: 8081, targetPort: 3001 }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: ${name}-x, namespace: ${ns}, labels: { kubernetes.io/service-name: ${name} } }
addressType: IPv4
endpoints: [{ addresses: ["${ip}"], conditions: { ready: true } }]
ports: [{ name: first-port, port: 3000 }, { name: second-port, port: 3001 }]
`;
}

function gateway(name: string, from: string, extra = ""): string {
  return `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: ${name}, namespace: ${INFRA}, generation: 1 }
spec:
  gatewayClassName: portico
  listeners:
    - { name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: ${from}${extra} } } }
`;
}

/** Service `pod` (port 8080) in INFRA and its one ready endpoint: a test's own backend on loopback `port`. */
export const podService = (port: number): string => `
apiVersion: v1
kind: Service
metadata: { name: pod, namespace: ${INFRA} }
spec: { ports: [{ name: http, port: 8080, targetPort: ${port} }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: pod-x, namespace: ${INFRA}, labels: { kubernetes.io/service-name: pod } }
addressType: IPv4
endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true } }]
ports: [{ name: http, port: ${port} }]`;

/** Namespaces, the GatewayClass, the hostless HTTP Gateways and the backends. */
export const BASE = [
  `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: portico, generation: 1 }
spec: { controllerName: ${CONTROLLER} }`,
  `apiVersion: v1
kind: Namespace
metadata: { name: ${INFRA}, labels: { gateway-conformance: infra } }`,
  `apiVersion: v1
kind: Namespace
metadata: { name: ${APP}, labels: { gateway-conformance: backend } }`,
  `apiVersion: v1
kind: Namespace
metadata: { name: ${WEB}, labels: { gateway-conformance: backend } }`,
  service(INFRA, "infra-backend-v1", "127.0.1.1"),
  service(INFRA, "infra-backend-v2", "127.0.1.2"),
  service(INFRA, "infra-backend-v3", "127.0.1.3"),
  service(APP, "app-backend-v1", "127.0.1.4"),
  service(APP, "app-backend-v2", "127.0.1.5"),
  service(WEB, "web-backend", "127.0.1.6"),
].join("\n---\n");

export const GATEWAYS = {
  "same-namespace": gateway("same-namespace", "Same"),
  "all-namespaces": gateway("all-namespaces", "All"),
  "backend-namespaces": gateway("backend-namespaces", "Selector", ", selector: { matchLabels: { gateway-conformance: backend } }"),
} as const;

/** Parse YAML documents into validated objects (a failure is a test bug: it throws). */
export function objects(...texts: string[]): { kind: Kind; object: KindObjects[Kind] }[] {
  const out: { kind: Kind; object: KindObjects[Kind] }[] = [];
  for (const t of texts) {
    for (const doc of loadAll(t)) {
      if (doc === null || doc === undefined) continue;
      const kind = (doc as { kind?: unknown }).kind;
      if (!isKind(kind)) throw new Error(`unknown kind ${String(kind)}`);
      const r = parseObject(kind, doc);
      if (!r.ok) throw new Error(`${kind}: ${r.diagnostic.message}`);
      out.push({ kind, object: r.object });
    }
  }
  return out;
}

export function snapshot(...texts: string[]): Snapshot {
  return snapshotOf(objects(...texts));
}

/** A compiled Gateway API world, asked the way the proxy asks. */
export class World {
  readonly result: GatewayCompileResult;
  constructor(readonly snap: Snapshot) {
    this.result = compileGateways(snap, CONTROLLER, (ref) => resolveRef(snap, ref, { allowExternalNameServices: false }));
  }
  static of(...texts: string[]): World {
    return new World(snapshot(BASE, ...texts));
  }
  match(req: { host?: string; path: string; method?: string; headers?: Record<string, string>; https?: boolean }): GatewayEntry | null {
    if (this.result.table === null) return null;
    const [path, query = ""] = req.path.split("?", 2) as [string, string?];
    const headers = new Headers(req.headers ?? {});
    return findGatewayEntry(this.result.table, req.https === true, {
      host: requestHostname(req.host ?? "example.com"),
      method: req.method ?? "GET",
      path,
      query,
      header: (n) => headers.get(n),
    });
  }
  /** `ns/service` the request goes to (first backend), "404", "500" or "redirect". */
  answer(req: Parameters<World["match"]>[0]): string {
    const e = this.match(req);
    if (e === null) return "404";
    const route = e.choices[0]!.match.route;
    const kinds = (route.options.stages ?? []).map((s) => s.kind);
    if (kinds.includes(K.GATEWAY_ERROR.id)) return "500";
    if (kinds.includes(K.GATEWAY_REDIRECT.id)) return "redirect";
    return `${route.backend.namespace}/${route.backend.service}`;
  }
  route(ns: string, name: string) {
    const r = this.result.routes.find((x) => x.key === `${ns}/${name}`);
    if (!r) throw new Error(`no status for route ${ns}/${name}`);
    return r;
  }
  /** `Accepted=True/Accepted ResolvedRefs=True/ResolvedRefs` per parent. */
  routeConditions(ns: string, name: string): string[] {
    return this.route(ns, name).parents.map((p) => conditionsText(p.conditions));
  }
  listener(gw: string, name: string) {
    const g = this.result.gateways.get(gw);
    const l = g?.listeners.find((x) => x.name === name);
    if (!l) throw new Error(`no listener ${gw} ${name}`);
    return l;
  }
}

export { load };
