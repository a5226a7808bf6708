// Small builders for the objects the end-to-end suites feed Portico (as YAML files or
// through the fake API server). JSON is valid YAML, so files are JSON documents.
type Obj = Record<string, unknown>;

export const ingressClass = (name = "portico"): Obj => ({
  apiVersion: "networking.k8s.io/v1",
  kind: "IngressClass",
  metadata: { name },
  spec: { controller: "portico.dev/ingress-controller" },
});

export const service = (ns: string, name: string, port = 80): Obj => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name, namespace: ns },
  spec: { ports: [{ name: "http", port }] },
});

export const slice = (ns: string, service: string, ports: number[], ready: boolean | null = true): Obj => ({
  apiVersion: "discovery.k8s.io/v1",
  kind: "EndpointSlice",
  metadata: { name: `${service}-x`, namespace: ns, labels: { "kubernetes.io/service-name": service } },
  addressType: "IPv4",
  // One endpoint per backend port would need several slices; tests use one port per slice.
  ports: [{ name: "http", port: ports[0] ?? 1 }],
  endpoints: ports.length === 0 ? [] : [{ addresses: ["127.0.0.1"], conditions: ready === null ? {} : { ready } }],
});

export interface PathSpec {
  path: string;
  type?: "Exact" | "Prefix" | "ImplementationSpecific";
  service: string;
}

export const ingress = (
  ns: string,
  name: string,
  rules: { host?: string; paths: PathSpec[] }[],
  extra: { defaultBackend?: string; tls?: { hosts: string[]; secretName?: string }[]; annotations?: Record<string, string>; className?: string | null } = {},
): Obj => ({
  apiVersion: "networking.k8s.io/v1",
  kind: "Ingress",
  metadata: { name, namespace: ns, ...(extra.annotations ? { annotations: extra.annotations } : {}) },
  spec: {
    ...(extra.className === null ? {} : { ingressClassName: extra.className ?? "portico" }),
    ...(extra.defaultBackend ? { defaultBackend: { service: { name: extra.defaultBackend, port: { number: 80 } } } } : {}),
    ...(extra.tls ? { tls: extra.tls } : {}),
    rules: rules.map((r) => ({
      ...(r.host ? { host: r.host } : {}),
      http: {
        paths: r.paths.map((p) => ({ path: p.path, pathType: p.type ?? "Prefix", backend: { service: { name: p.service, port: { number: 80 } } } })),
      },
    })),
  },
});

export const tlsSecret = (ns: string, name: string, certPem: string, keyPem: string): Obj => ({
  apiVersion: "v1",
  kind: "Secret",
  type: "kubernetes.io/tls",
  metadata: { name, namespace: ns },
  data: { "tls.crt": Buffer.from(certPem).toString("base64"), "tls.key": Buffer.from(keyPem).toString("base64") },
});

export const yamlDocs = (objs: Obj[]): string => objs.map((o) => JSON.stringify(o)).join("\n---\n");

/** A kubeconfig (JSON is YAML) for a server reached with a bearer token. */
export const kubeconfig = (server: string, token: string): string =>
  JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "fake", cluster: { server } }],
    users: [{ name: "u", user: { token } }],
    contexts: [{ name: "fake", context: { cluster: "fake", user: "u" } }],
    "current-context": "fake",
  });
