// The watch source feeding the real Store: latency from a change on the fake API server to
// the Store applying it (100 changes), and recovery from hung requests and slow answers.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { captureLogger, FAST_WATCH, ingress, OBJECTS } from "../fake-apiserver/fixtures.ts";
import { createKubeClientFrom } from "../../src/kube/client.ts";
import { resolveKubeConfig } from "../../src/kube/kubeconfig.ts";
import { createKubeSource } from "../../src/kube/watch.ts";
import { KINDS } from "../../src/model/kinds.ts";
import { Store } from "../../src/store/store.ts";
import { eventually } from "../wait.ts";

let api: FakeApiServer;
let kubeconfig: string;
beforeAll(async () => {
  api = await startFakeApiServer({ token: "t" });
  kubeconfig = `/tmp/portico-storesync-${process.pid}/config`;
  await Bun.write(kubeconfig, `clusters: [{ name: f, cluster: { server: "${api.url}" } }]\nusers: [{ name: u, user: { token: t } }]\ncontexts: [{ name: c, context: { cluster: f, user: u } }]\ncurrent-context: c\n`);
});
afterAll(() => api.stop());

const client = () => createKubeClientFrom(resolveKubeConfig({ kubeconfig, context: null }), captureLogger());

test("100 Ingress changes reach the real Store, each announced by onChange", async () => {
  let onChange = () => {};
  const store: Store = new Store({ onChange: () => onChange() });
  const source = createKubeSource({ client: client(), config: { watchNamespace: "lat" }, log: captureLogger(), timings: FAST_WATCH });
  await source.start(store);
  try {
    await eventually(() => store.allSynced(KINDS), 3_000, "synced");
    const host = (i: number) => `v${i}.example.test`;
    api.create("Ingress", ingress("lat", "app", host(0)));
    api.create("Ingress", ingress("elsewhere", "ignored")); // another namespace: not watched
    await eventually(() => store.snapshot().ingresses.has("lat/app"), 3_000, "created");
    // 100 changes in a row, each applied (and announced by onChange) before the next is made.
    let changes = 0;
    onChange = () => void changes++;
    for (let i = 1; i <= 100; i++) {
      const cur = api.get("Ingress", "lat", "app")!;
      const spec = cur.spec as { rules: { host: string }[] };
      spec.rules[0]!.host = host(i);
      const before = changes;
      api.update("Ingress", cur);
      await eventually(() => changes > before && store.snapshot().ingresses.get("lat/app")?.spec?.rules?.[0]?.host === host(i), 5_000, `change ${i} applied`);
    }
    expect(store.snapshot().ingresses.has("elsewhere/ignored")).toBe(false);
    api.delete("Ingress", "lat", "app");
    await eventually(() => !store.snapshot().ingresses.has("lat/app"), 3_000, "deleted");
  } finally {
    await source.stop();
  }
});

test("hung and slow API answers: requests time out, are retried, and the source converges", async () => {
  const store = new Store();
  let errors = 0;
  api.faults.hang = true;
  const source = createKubeSource({
    client: client(),
    config: { watchNamespace: "hang" },
    log: captureLogger(),
    kinds: ["Service"],
    timings: { ...FAST_WATCH, requestTimeoutMs: 150 },
    hooks: { onError: () => void errors++ },
  });
  await source.start(store);
  try {
    await eventually(() => errors >= 2, 3_000, "list timeouts");
    expect(store.isSynced("Service")).toBe(false);
    api.faults.hang = false;
    api.faults.latencyMs = 50; // slow but within the deadline
    api.create("Service", OBJECTS.Service("hang", "web"));
    await eventually(() => store.snapshot().services.has("hang/web"), 3000, "converged");
    expect(store.isSynced("Service")).toBe(true);
  } finally {
    api.faults.hang = false;
    api.faults.latencyMs = 0;
    await source.stop();
  }
});

test("stored objects keep the metadata Portico reads and drop the rest (managedFields, ownerReferences), listed or watched", async () => {
  // A real API server adds managedFields to every object (Kubernetes 1.18+); Portico reads
  // none of it, so the store does not keep it (docs/design.md "Sources at start-up").
  const extra = {
    managedFields: [{ manager: "kubectl-client-side-apply", operation: "Update", apiVersion: "networking.k8s.io/v1", fieldsType: "FieldsV1", fieldsV1: { "f:spec": { "f:rules": {} } } }],
    ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: "u-owner" }],
    finalizers: ["example.test/keep"],
  };
  const withExtra = (o: Record<string, unknown>) => ({ ...o, metadata: { ...(o.metadata as object), ...extra, labels: { team: "a" }, annotations: { "nginx.ingress.kubernetes.io/rewrite-target": "/" } } });
  api.create("Ingress", withExtra(ingress("strip", "listed", "listed.example.test")));
  const store = new Store();
  const source = createKubeSource({ client: client(), config: { watchNamespace: "strip" }, log: captureLogger(), timings: FAST_WATCH });
  await source.start(store);
  try {
    await eventually(() => store.allSynced(KINDS) && store.snapshot().ingresses.has("strip/listed"), 3_000, "listed");
    api.create("Ingress", withExtra(ingress("strip", "watched", "watched.example.test")));
    await eventually(() => store.snapshot().ingresses.has("strip/watched"), 3_000, "watched");
    for (const name of ["listed", "watched"]) {
      const m = store.snapshot().ingresses.get(`strip/${name}`)!.metadata as Record<string, unknown>;
      // Only ObjectMeta fields Portico reads (model/schemas.ts ObjectMetaSchema).
      const read = ["name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp", "labels", "annotations"];
      expect(Object.keys(m).filter((k) => !read.includes(k))).toEqual([]);
      expect(m.managedFields).toBeUndefined();
      expect(m.ownerReferences).toBeUndefined();
      expect(m.finalizers).toBeUndefined();
      expect(m).toMatchObject({ name, namespace: "strip", labels: { team: "a" }, annotations: { "nginx.ingress.kubernetes.io/rewrite-target": "/" } });
    }
  } finally {
    await source.stop();
  }
});

test("kubectl's last-applied-configuration is dropped from every kind, listed or watched; the other annotations stay", async () => {
  // `kubectl apply` writes the applied object as JSON into this annotation: about the size of
  // the object, on most objects users apply, and read by nothing in Portico (docs/design.md
  // "Sources at start-up").
  const kept = { "nginx.ingress.kubernetes.io/proxy-body-size": "1m", "meta.helm.sh/release-name": "web", "example.test/empty": "" };
  const kinds = ["Ingress", "IngressClass", "Service", "Secret", "HTTPRoute"] as const;
  const applied = (kind: (typeof kinds)[number], name: string) => {
    const o = OBJECTS[kind]("lastapplied", name);
    const meta = o.metadata as Record<string, unknown>;
    const annotations = { ...kept, "kubectl.kubernetes.io/last-applied-configuration": `${JSON.stringify({ apiVersion: "v1", kind, ...o })}\n` };
    return { ...o, metadata: { ...meta, annotations } };
  };
  const keyOf = (kind: string, name: string) => (kind === "IngressClass" ? `la-${name}` : `lastapplied/la-${name}`);
  for (const kind of kinds) api.create(kind, applied(kind, "la-listed"));
  const store = new Store();
  const source = createKubeSource({ client: client(), config: { watchNamespace: "lastapplied" }, log: captureLogger(), timings: FAST_WATCH });
  await source.start(store);
  try {
    await eventually(() => store.allSynced(KINDS) && kinds.every((k) => store.get(k, keyOf(k, "listed")) !== undefined), 3_000, "listed");
    for (const kind of kinds) api.create(kind, applied(kind, "la-watched"));
    await eventually(() => kinds.every((k) => store.get(k, keyOf(k, "watched")) !== undefined), 3_000, "watched");
    for (const kind of kinds) {
      for (const name of ["listed", "watched"]) {
        const m = store.get(kind, keyOf(kind, name))!.metadata;
        expect({ kind, name, annotations: m.annotations }).toEqual({ kind, name, annotations: kept });
      }
    }
  } finally {
    await source.stop();
  }
});
