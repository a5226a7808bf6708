// The Gateways' own Services (--gateway-ports, kube/gateway-services.ts) against the fake API
// server: made beside --publish-service with its selector, type and externalTrafficPolicy,
// changed only where they differ, someone else's Service of the same name left alone, and
// ours deleted when its Gateway has no port any more.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { captureLogger } from "../fake-apiserver/fixtures.ts";
import { createKubeClientFrom } from "../../src/kube/client.ts";
import { resolveKubeConfig } from "../../src/kube/kubeconfig.ts";
import { createGatewayServices } from "../../src/kube/gateway-services.ts";
import { gatewayServiceName } from "../../src/compile/gateway/ports.ts";
import { parseObject } from "../../src/model/kinds.ts";
import type { Service } from "../../src/model/schemas.ts";
import type { GatewayPort } from "../../src/table/types.ts";

let api: FakeApiServer;
let kubeconfig: string;

beforeAll(async () => {
  api = await startFakeApiServer({ token: "t" });
  kubeconfig = `/tmp/portico-gwsvc-${process.pid}/config`;
  await Bun.write(kubeconfig, `clusters: [{ name: f, cluster: { server: "${api.url}" } }]\nusers: [{ name: u, user: { token: t } }]\ncontexts: [{ name: c, context: { cluster: f, user: u } }]\ncurrent-context: c\n`);
});
afterAll(() => api.stop());

/** The Services as the store would hold them. */
function services(): Map<string, Service> {
  const out = new Map<string, Service>();
  for (const o of api.list("Service")) {
    const p = parseObject("Service", o);
    if (!p.ok) throw new Error(p.diagnostic.message);
    out.set(`${o.metadata.namespace}/${o.metadata.name}`, p.object);
  }
  return out;
}

const port = (gateway: string, declared: number, https = false): GatewayPort => ({ gateway, declared, https, routes: null });
type Spec = { type?: string; selector?: unknown; externalTrafficPolicy?: string; clusterIP?: string; ports?: unknown[] };
const spec = (name: string) => api.get("Service", "portico", name)?.spec as Spec | undefined;
const writes = (from: number) => api.requests.slice(from).filter((r) => r.method !== "GET").map((r) => `${r.method} ${r.path.replace(/^\/api\/v1\/namespaces\/portico\/services/, "")}`);

describe("Gateway Services", () => {
  test("made, changed where they differ, someone else's left alone, deleted with the Gateway's ports", async () => {
    api.create("Service", {
      metadata: { name: "portico", namespace: "portico" },
      spec: { type: "LoadBalancer", externalTrafficPolicy: "Local", selector: { app: "portico" }, ports: [{ name: "http", port: 80, targetPort: "http" }] },
    });
    const a = gatewayServiceName("apps/a");
    const b = gatewayServiceName("apps/b");
    expect(a).toMatch(/^portico-gw-a-[0-9a-f]{8}$/);
    // A Service of B's name that is not Portico's.
    api.create("Service", { metadata: { name: b, namespace: "portico" }, spec: { ports: [{ port: 1, targetPort: 1 }] } });
    let leader = false;
    const s = createGatewayServices({ client: createKubeClientFrom(resolveKubeConfig({ kubeconfig, context: null }), captureLogger()), config: { publishService: { namespace: "portico", name: "portico" }, gatewayControllerName: "portico.dev/gateway-controller" }, log: captureLogger(), isLeader: () => leader });
    const ports = new Map([[20_100, port("apps/a", 80)], [20_101, port("apps/a", 443, true)], [20_102, port("apps/b", 80)]]);
    let from = api.requests.length;
    expect(await s.sync(ports, services())).toBe(0);
    expect(writes(from)).toEqual([]); // not the leader
    leader = true;
    from = api.requests.length;
    expect(await s.sync(ports, services())).toBe(1);
    expect(writes(from)).toEqual(["POST "]);
    const made = api.get("Service", "portico", a)!;
    expect(made.metadata.labels).toEqual({ "app.kubernetes.io/managed-by": "portico-gateway" });
    expect(made.metadata.annotations).toEqual({ "portico.dev/gateway": "apps/a", "portico.dev/gateway-controller": "portico.dev/gateway-controller" });
    // Another Portico's (another controller name) in the same namespace: never deleted by this one.
    api.create("Service", {
      metadata: { name: gatewayServiceName("other/c"), namespace: "portico", labels: { "app.kubernetes.io/managed-by": "portico-gateway" }, annotations: { "portico.dev/gateway": "other/c", "portico.dev/gateway-controller": "example.com/other" } },
      spec: { ports: [{ port: 80, targetPort: 20_200 }] },
    });
    expect(spec(a)).toEqual({
      type: "LoadBalancer",
      selector: { app: "portico" },
      externalTrafficPolicy: "Local",
      ports: [{ name: "http-80", port: 80, targetPort: 20_100, protocol: "TCP" }, { name: "https-443", port: 443, targetPort: 20_101, protocol: "TCP" }],
    });
    expect(spec(b)).toEqual({ ports: [{ port: 1, targetPort: 1 }] }); // not ours: untouched
    // The same again: nothing written. The API server's own fields (clusterIP, nodePort) do not count.
    api.update("Service", { ...made, spec: { ...(made.spec as object), clusterIP: "10.96.1.1", ports: (spec(a)!.ports as object[]).map((p, i) => ({ ...p, nodePort: 30_000 + i })) } });
    from = api.requests.length;
    expect(await s.sync(ports, services())).toBe(0);
    expect(writes(from)).toEqual([]);
    // A's 443 listener gone: one PATCH, the ports replaced.
    from = api.requests.length;
    expect(await s.sync(new Map([[20_100, port("apps/a", 80)]]), services())).toBe(1);
    expect(writes(from)).toEqual([`PATCH /${a}`]);
    expect((spec(a)!.ports as { port: number }[]).map((p) => p.port)).toEqual([80]);
    expect(spec(a)!.clusterIP).toBe("10.96.1.1");
    // No Gateway with a port: ours deleted, the other one stays.
    from = api.requests.length;
    expect(await s.sync(new Map(), services())).toBe(1);
    expect(writes(from)).toEqual([`DELETE /${a}`]);
    expect(api.get("Service", "portico", a)).toBeUndefined();
    expect(api.get("Service", "portico", b)).toBeDefined();
    expect(api.get("Service", "portico", gatewayServiceName("other/c"))).toBeDefined();
    expect(api.get("Service", "portico", "portico")).toBeDefined();
  });
});
