// Route tables with Gateway API HTTPS listeners, HTTPRoutes and GRPCRoutes, compiled from the
// objects by the real compiler (compile/compile.ts), so the effective hostnames (a route's
// hostnames intersected with its listener's, compile/gateway/hostnames.ts) are the ones a
// running Portico serves. For the SNI split's per-host answers (table/listener-needs.ts).
import { compile } from "../../src/compile/compile.ts";
import type { RouteTable } from "../../src/table/types.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { snapshotOf } from "../compile/snapshot.ts";
import { tlsSecret } from "../e2e/objects.ts";
import { BASE, INFRA, objects } from "../gateway/base.ts";
import { createCertificate } from "../tls/pki.ts";

export const GATEWAY_NS = INFRA;

export interface GatewayListenerSpec {
  readonly name: string;
  readonly hostname?: string;
  /** Default HTTPS (port 443, the listener's certificate below); HTTP is port 80. */
  readonly protocol?: "HTTPS" | "HTTP";
}

export interface GatewayRouteSpec {
  readonly kind: "HTTPRoute" | "GRPCRoute";
  readonly name: string;
  /** The Gateway listener (sectionName) it attaches to. */
  readonly listener: string;
  readonly hostnames?: readonly string[];
  /** A Service of `services`. */
  readonly service: string;
}

export interface GatewaySpec {
  readonly listeners: readonly GatewayListenerSpec[];
  readonly routes: readonly GatewayRouteSpec[];
  /** Service name → the loopback port its one endpoint listens on. */
  readonly services: Readonly<Record<string, number>>;
}

// One certificate for every HTTPS listener: the listeners must resolve their certificateRefs
// to be served; the split tests do not verify it.
const pem = createCertificate({ subjectCN: "gateway.test", sans: ["gateway.test"] });

/** The objects of `spec` in the conformance namespace, as JSON documents (JSON is YAML). */
export function gatewayObjects(spec: GatewaySpec): string[] {
  const docs: object[] = [tlsSecret(INFRA, "gateway-cert", pem.certPem, pem.keyPem)];
  for (const [name, port] of Object.entries(spec.services)) {
    docs.push({ apiVersion: "v1", kind: "Service", metadata: { name, namespace: INFRA }, spec: { ports: [{ name: "p", port: 80 }] } });
    docs.push({
      apiVersion: "discovery.k8s.io/v1", kind: "EndpointSlice",
      metadata: { name: `${name}-x`, namespace: INFRA, labels: { "kubernetes.io/service-name": name } },
      addressType: "IPv4", ports: [{ name: "p", port }], endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true } }],
    });
  }
  docs.push({
    apiVersion: "gateway.networking.k8s.io/v1", kind: "Gateway", metadata: { name: "split", namespace: INFRA, generation: 1 },
    spec: {
      gatewayClassName: "portico",
      listeners: spec.listeners.map((l) => ({
        name: l.name, port: l.protocol === "HTTP" ? 80 : 443, protocol: l.protocol ?? "HTTPS",
        ...(l.hostname === undefined ? {} : { hostname: l.hostname }),
        ...(l.protocol === "HTTP" ? {} : { tls: { certificateRefs: [{ name: "gateway-cert" }] } }),
      })),
    },
  });
  for (const r of spec.routes) {
    docs.push({
      apiVersion: "gateway.networking.k8s.io/v1", kind: r.kind, metadata: { name: r.name, namespace: INFRA, generation: 1 },
      spec: {
        parentRefs: [{ name: "split", sectionName: r.listener }],
        ...(r.hostnames === undefined ? {} : { hostnames: r.hostnames }),
        rules: [{ backendRefs: [{ name: r.service, port: 80 }] }],
      },
    });
  }
  return docs.map((d) => JSON.stringify(d));
}

/** The route table a Portico serves for `spec` (and any further YAML documents: Ingresses). */
export function gatewayTable(spec: GatewaySpec, ...more: string[]): RouteTable {
  const result = compile(snapshotOf(objects(BASE, ...gatewayObjects(spec), ...more)), DEFAULT_COMPILE_CONFIG);
  if (result.table.gateway == null) throw new Error(`no Gateway API part: ${JSON.stringify(result.diagnostics)}`);
  return result.table;
}
