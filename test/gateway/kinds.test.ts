// Gateway API kinds and Namespaces: listed and watched like the other kinds, optional while
// their CRDs are absent (docs/design.md "Gateway API"), and read from --manifests files.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { captureLogger, FAST_WATCH, OBJECTS, RecordingSink } from "../fake-apiserver/fixtures.ts";
import { createKubeClient, type KubeClient } from "../../src/kube/client.ts";
import { createKubeSource, type KubeSource } from "../../src/kube/watch.ts";
import { GATEWAY_GROUP, KINDS } from "../../src/model/kinds.ts";
import { parseManifestText } from "../../src/files/documents.ts";
import { eventually } from "../wait.ts";

let api: FakeApiServer;
let client: KubeClient;
const log = captureLogger();
let source: KubeSource | null = null;

beforeAll(async () => {
  api = await startFakeApiServer({ token: "t", bookmarkIntervalMs: 100 });
  const dir = `${process.env.TMPDIR ?? "/tmp"}/portico-gw-kinds-${process.pid}`;
  await Bun.write(
    `${dir}/config`,
    `apiVersion: v1
kind: Config
clusters: [{ name: fake, cluster: { server: "${api.url}" } }]
users: [{ name: u, user: { token: "t" } }]
contexts: [{ name: c, context: { cluster: fake, user: u } }]
current-context: c
`,
  );
  client = createKubeClient({ kubeconfig: `${dir}/config`, context: null }, log);
});
afterAll(() => api.stop());
afterEach(async () => {
  await source?.stop();
  source = null;
  api.faults.absentGroups.clear();
});

function start(absentRecheckMs = 50) {
  const sink = new RecordingSink();
  source = createKubeSource({ client, config: { watchNamespace: null }, log, kinds: KINDS, timings: { ...FAST_WATCH, absentRecheckMs } });
  void source.start(sink);
  return sink;
}

describe("Gateway API kinds from the API server", () => {
  test("without the CRDs every kind still syncs (Gateway kinds empty) and Ingresses arrive; installing the CRDs later brings their objects", async () => {
    api.faults.absentGroups.add(GATEWAY_GROUP);
    api.create("Ingress", OBJECTS.Ingress("default", "web"));
    api.create("Namespace", OBJECTS.Namespace("", "team-a"));
    const sink = start();
    await eventually(() => KINDS.every((k) => sink.syncedKinds.includes(k)), 3_000, "every kind synced");
    expect(sink.has("Ingress", "default", "web")).toBe(true);
    expect(sink.has("Namespace", "", "team-a")).toBe(true);
    expect(source!.state("HTTPRoute").installed).toBe(false);
    expect(log.text()).toContain("kind not installed");
    // Objects exist in storage but the group answers 404 until "installed".
    api.create("GatewayClass", OBJECTS.GatewayClass("", "portico"));
    api.create("Gateway", OBJECTS.Gateway("default", "gw"));
    api.create("HTTPRoute", OBJECTS.HTTPRoute("default", "r"));
    api.create("ReferenceGrant", OBJECTS.ReferenceGrant("default", "g"));
    api.faults.absentGroups.clear();
    await eventually(() => sink.has("HTTPRoute", "default", "r") && sink.has("Gateway", "default", "gw") && sink.has("GatewayClass", "", "portico") && sink.has("ReferenceGrant", "default", "g"), 5000, "Gateway API objects after install");
    expect(source!.state("HTTPRoute").installed).toBe(true);
    // Watched after install: a change arrives as an event.
    api.create("HTTPRoute", OBJECTS.HTTPRoute("default", "r2"));
    await eventually(() => sink.has("HTTPRoute", "default", "r2"), 3_000, "watch event after install");
  });

  test("CRDs removed while watched: their objects go, and come back with the CRDs", async () => {
    api.create("HTTPRoute", OBJECTS.HTTPRoute("default", "keep"));
    const sink = start();
    await eventually(() => sink.has("HTTPRoute", "default", "keep"), 3_000, "route listed");
    api.faults.absentGroups.add(GATEWAY_GROUP);
    api.dropWatches();
    await eventually(() => !sink.has("HTTPRoute", "default", "keep"), 5000, "route gone with its CRD");
    expect(sink.has("Ingress", "default", "web")).toBe(true);
    api.faults.absentGroups.clear();
    await eventually(() => sink.has("HTTPRoute", "default", "keep"), 5000, "route back with its CRD");
  });

  test("IngressNginxPolicy without its CRD: synced and empty, picked up once installed, then watched", async () => {
    api.faults.absentGroups.add("portico.dev");
    const sink = start();
    await eventually(() => KINDS.every((k) => sink.syncedKinds.includes(k)), 3_000, "every kind synced");
    expect(source!.state("IngressNginxPolicy").installed).toBe(false);
    api.create("IngressNginxPolicy", OBJECTS.IngressNginxPolicy("default", "p"));
    expect(sink.has("IngressNginxPolicy", "default", "p")).toBe(false);
    api.faults.absentGroups.clear();
    await eventually(() => sink.has("IngressNginxPolicy", "default", "p"), 5000, "policy after install");
    api.create("IngressNginxPolicy", OBJECTS.IngressNginxPolicy("default", "p2"));
    await eventually(() => sink.has("IngressNginxPolicy", "default", "p2"), 3_000, "watch event after install");
  });

  test("a 404 on a built-in kind is an error with back-off, not 'not installed'", async () => {
    const sink = new RecordingSink();
    api.faults.failNext = 1;
    api.faults.failStatus = 404;
    api.faults.failMatch = /\/ingresses\?/;
    source = createKubeSource({ client, config: { watchNamespace: null }, log, kinds: ["Ingress"], timings: FAST_WATCH });
    void source.start(sink);
    await eventually(() => sink.syncedKinds.includes("Ingress"), 3_000, "Ingress synced after retry");
    expect(source.state("Ingress").errors).toBe(1);
    api.faults.failMatch = null;
  });
});

describe("Gateway API kinds from --manifests", () => {
  test("each kind parses; ReferenceGrant in v1beta1 and v1; generation defaults to 1", () => {
    const text = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: portico }
spec: { controllerName: portico.dev/gateway-controller }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: infra }
spec:
  gatewayClassName: portico
  listeners:
    - { name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: Selector, selector: { matchLabels: { team: a } } } } }
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: r }
spec:
  parentRefs: [{ name: gw, namespace: infra, sectionName: http }]
  hostnames: ["*.example.io"]
  rules:
    - matches: [{ path: { type: PathPrefix, value: /a }, headers: [{ name: x, value: y }] }]
      filters: [{ type: RequestHeaderModifier, requestHeaderModifier: { add: [{ name: a, value: b }] } }]
      backendRefs: [{ name: web, port: 80, weight: 3 }]
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: { name: g1, namespace: infra }
spec: { from: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: default }], to: [{ group: "", kind: Service }] }
---
apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata: { name: g2, namespace: infra }
spec: { from: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: default }], to: [{ group: "", kind: Secret, name: cert }] }
---
apiVersion: v1
kind: Namespace
metadata: { name: team-a, labels: { team: a } }
`;
    const r = parseManifestText(text, "gw.yaml");
    if (!r.ok) throw new Error(r.message);
    expect(r.diagnostics).toEqual([]);
    expect(r.objects.map((o) => `${o.kind}/${o.object.metadata.namespace ?? ""}/${o.object.metadata.name}`)).toEqual([
      "GatewayClass//portico",
      "Gateway/infra/gw",
      "HTTPRoute/default/r",
      "ReferenceGrant/infra/g1",
      "ReferenceGrant/infra/g2",
      "Namespace//team-a",
    ]);
    expect(r.objects.every((o) => o.object.metadata.generation === 1)).toBe(true);
  });

  test("an unserved apiVersion and an invalid object become diagnostics", () => {
    const r = parseManifestText(
      `apiVersion: gateway.networking.k8s.io/v1alpha2
kind: HTTPRoute
metadata: { name: old }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: nolisteners }
spec: { gatewayClassName: portico }
`,
      "bad.yaml",
    );
    if (!r.ok) throw new Error(r.message);
    expect(r.objects).toEqual([]);
    expect(r.diagnostics.map((d) => `${d.kind}/${d.name}: ${d.reason}`)).toEqual(["HTTPRoute/old: InvalidObject", "Gateway/nolisteners: InvalidObject"]);
  });
});
