// Test helper: a synthetic snapshot of N Ingresses (one host, two paths each), with their
// Services and EndpointSlices, shaped like a busy multi-tenant cluster.
import type { EndpointSlice, Ingress, IngressClass, Secret, Service } from "../../src/model/schemas.ts";
import type { Snapshot } from "../../src/store/types.ts";

export function syntheticSnapshot(n: number): Snapshot {
  const ingresses = new Map<string, Ingress>();
  const services = new Map<string, Service>();
  const endpointSlices = new Map<string, EndpointSlice[]>();
  const ingressClasses = new Map<string, IngressClass>([
    ["portico", { metadata: { name: "portico" }, spec: { controller: "portico.dev/ingress-controller" } }],
  ]);
  const secrets = new Map<string, Secret>();
  for (let i = 0; i < n; i++) {
    const ns = `team-${i % 50}`;
    const name = `app-${i}`;
    if (i % 4 === 0) {
      const data = { "tls.crt": btoa("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), "tls.key": btoa("k") };
      secrets.set(`${ns}/tls-${i}`, { metadata: { name: `tls-${i}`, namespace: ns, uid: `u${i}`, resourceVersion: "1" }, data });
    }
    const backend = { service: { name, port: { number: 80 } } };
    ingresses.set(`${ns}/${name}`, {
      metadata: { name, namespace: ns, creationTimestamp: `2024-01-01T00:00:${String(i % 60).padStart(2, "0")}Z` },
      spec: {
        ingressClassName: "portico",
        tls: i % 4 === 0 ? [{ hosts: [`app-${i}.example.com`], secretName: `tls-${i}` }] : undefined,
        rules: [
          {
            host: i % 10 === 0 ? `*.w${i}.example.com` : `app-${i}.example.com`,
            http: {
              paths: [
                { path: "/", pathType: "Prefix", backend },
                { path: `/api/v${i % 3}/items`, pathType: i % 2 ? "Exact" : "Prefix", backend },
              ],
            },
          },
        ],
      },
    });
    services.set(`${ns}/${name}`, { metadata: { name, namespace: ns }, spec: { ports: [{ port: 80, name: "http" }] } });
    endpointSlices.set(`${ns}/${name}`, [
      {
        metadata: { name: `${name}-abc`, namespace: ns },
        addressType: "IPv4",
        endpoints: [
          { addresses: [`10.${i >> 8 & 255}.${i & 255}.1`], conditions: { ready: true } },
          { addresses: [`10.${i >> 8 & 255}.${i & 255}.2`], conditions: { ready: false } },
        ],
        ports: [{ name: "http", port: 8080 }],
      },
    ]);
  }
  return { ingresses, ingressClasses, services, endpointSlices, secrets, namespaces: new Map(), gatewayClasses: new Map(), gateways: new Map(), httpRoutes: new Map(), grpcRoutes: new Map(), referenceGrants: new Map() };
}
