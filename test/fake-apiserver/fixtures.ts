// Helpers for kube tests: minimal valid objects of each kind, a recording SourceSink, a client
// of the fake API server through a written kubeconfig,
// a capturing logger and a bounded wait.
import type { Kind, KindObjects } from "../../src/model/kinds.ts";
import type { SourceSink, StoreEvent } from "../../src/store/types.ts";
import type { Logger } from "../../src/log/logger.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createKubeClientFrom, type KubeClient } from "../../src/kube/client.ts";
import { resolveKubeConfig } from "../../src/kube/kubeconfig.ts";
import { kubeconfig } from "../e2e/objects.ts";

export function ingress(ns: string, name: string, host = `${name}.example.test`): Record<string, unknown> {
  return {
    metadata: { name, namespace: ns },
    spec: {
      ingressClassName: "portico",
      rules: [{ host, http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }] } }],
    },
  };
}

export const OBJECTS: Record<Kind, (ns: string, name: string) => Record<string, unknown>> = {
  Ingress: (ns, name) => ingress(ns, name),
  IngressClass: (_ns, name) => ({ metadata: { name }, spec: { controller: "portico.dev/ingress-controller" } }),
  Service: (ns, name) => ({ metadata: { name, namespace: ns }, spec: { clusterIP: "10.0.0.1", ports: [{ name: "http", port: 80 }] } }),
  EndpointSlice: (ns, name) => ({
    metadata: { name, namespace: ns, labels: { "kubernetes.io/service-name": "web" } },
    addressType: "IPv4",
    endpoints: [{ addresses: ["10.1.0.1"], conditions: { ready: true } }],
    ports: [{ name: "http", port: 8080 }],
  }),
  Secret: (ns, name) => ({ metadata: { name, namespace: ns }, type: "kubernetes.io/tls", data: { "tls.crt": "", "tls.key": "" } }),
  Namespace: (_ns, name) => ({ metadata: { name, labels: { "kubernetes.io/metadata.name": name } } }),
  GatewayClass: (_ns, name) => ({ metadata: { name }, spec: { controllerName: "portico.dev/gateway-controller" } }),
  Gateway: (ns, name) => ({ metadata: { name, namespace: ns }, spec: { gatewayClassName: "portico", listeners: [{ name: "http", port: 80, protocol: "HTTP" }] } }),
  HTTPRoute: (ns, name) => ({
    metadata: { name, namespace: ns },
    spec: { parentRefs: [{ name: "gw" }], hostnames: [`${name}.example.test`], rules: [{ backendRefs: [{ name: "web", port: 80 }] }] },
  }),
  GRPCRoute: (ns, name) => ({
    metadata: { name, namespace: ns },
    spec: { parentRefs: [{ name: "gw" }], hostnames: [`${name}.example.test`], rules: [{ backendRefs: [{ name: "web", port: 80 }] }] },
  }),
  IngressNginxPolicy: (ns, name) => ({ metadata: { name, namespace: ns }, spec: { annotations: { "nginx.ingress.kubernetes.io/proxy-body-size": "1m" } } }),
  ConfigMap: (ns, name) => ({ metadata: { name, namespace: ns }, data: { "X-Tenant": "a" } }),
  ReferenceGrant: (ns, name) => ({
    metadata: { name, namespace: ns },
    spec: { from: [{ group: "gateway.networking.k8s.io", kind: "HTTPRoute", namespace: "default" }], to: [{ group: "", kind: "Service" }] },
  }),
};

/** Records every call; keeps a map per kind like a store would. */
export class RecordingSink implements SourceSink {
  readonly events: StoreEvent[] = [];
  readonly replaces: { kind: Kind; names: string[] }[] = [];
  readonly syncedKinds: Kind[] = [];
  readonly objects = new Map<Kind, Map<string, KindObjects[Kind]>>();

  private map(kind: Kind): Map<string, KindObjects[Kind]> {
    let m = this.objects.get(kind);
    if (!m) this.objects.set(kind, (m = new Map()));
    return m;
  }
  apply(event: StoreEvent): void {
    this.events.push(event);
    const key = `${event.object.metadata.namespace ?? ""}/${event.object.metadata.name}`;
    if (event.type === "DELETED") this.map(event.kind).delete(key);
    else this.map(event.kind).set(key, event.object);
  }
  replace<K extends Kind>(kind: K, objects: readonly KindObjects[K][]): void {
    this.replaces.push({ kind, names: objects.map((o) => o.metadata.name) });
    const m = this.map(kind);
    m.clear();
    for (const o of objects) m.set(`${o.metadata.namespace ?? ""}/${o.metadata.name}`, o);
  }
  synced(kind: Kind): void {
    this.syncedKinds.push(kind);
  }
  has(kind: Kind, ns: string, name: string): boolean {
    return this.map(kind).has(`${ns}/${name}`);
  }
  get(kind: Kind, ns: string, name: string): KindObjects[Kind] | undefined {
    return this.map(kind).get(`${ns}/${name}`);
  }
}

export interface CapturedLine {
  level: string;
  msg: string;
  fields?: Record<string, unknown> | undefined;
}

export function captureLogger(): Logger & { lines: CapturedLine[]; text(): string } {
  const lines: CapturedLine[] = [];
  const make = (base: Record<string, unknown> | undefined): Logger => {
    const at = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
      void lines.push({ level, msg, fields: base || fields ? { ...base, ...fields } : undefined });
    return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), child: (f) => make({ ...base, ...f }) };
  };
  return {
    ...make(undefined),
    lines,
    text: () => lines.map((l) => `${l.level} ${l.msg} ${JSON.stringify(l.fields ?? {})}`).join("\n"),
  };
}

/** Timings that keep suites fast: short back-off, short watches. */
export const FAST_WATCH = {
  backoffInitialMs: 40,
  backoffMaxMs: 300,
  backoffResetMs: 2000,
  watchTimeoutSeconds: () => 30,
  watchGraceMs: 1000,
  requestTimeoutMs: 2000,
  minWatchMs: 0,
} as const;

/**
 * A client of the fake API server at `url` (bearer `token`), through a kubeconfig written to a
 * fresh temporary folder as a user's would be; remove() deletes the folder.
 */
export async function fakeApiClient(url: string, token: string, log: Logger, prefix: string): Promise<{ client: KubeClient; kubeconfig: string; remove(): void }> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const path = join(dir, "config");
  await Bun.write(path, kubeconfig(url, token));
  const client = createKubeClientFrom(resolveKubeConfig({ kubeconfig: path, context: null }), log);
  return { client, kubeconfig: path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
