// The ConfigMaps auth-proxy-set-headers names, past the by-name bound (kube/configmap-refs.ts,
// docs/design.md "External authentication", "Watching"): the collection watch's failures, a
// ConfigMap named while its list is under way, a failed read and an invalid version, against
// the fake API server over real sockets, into a recording sink.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { captureLogger, fakeApiClient, FAST_WATCH, RecordingSink } from "../fake-apiserver/fixtures.ts";
import type { KubeClient } from "../../src/kube/client.ts";
import { createConfigMapRefs, MAX_BY_NAME } from "../../src/kube/configmap-refs.ts";
import { createKubeSource, type KubeSource } from "../../src/kube/watch.ts";
import type { Ingress } from "../../src/model/schemas.ts";
import type { SourceSink } from "../../src/store/types.ts";
import { eventually } from "../wait.ts";

const N = "nginx.ingress.kubernetes.io/";
let api: FakeApiServer;
let client: KubeClient;
let removeKubeconfig: () => void;
let source: KubeSource | null = null;
const log = captureLogger();

const ingress = (ns: string, i: number, configMap = `h${i}`) => ({
  metadata: { name: `i${i}`, namespace: ns, annotations: { [`${N}auth-url`]: "http://auth.example/check", [`${N}auth-proxy-set-headers`]: `${ns}/${configMap}` } },
  spec: { ingressClassName: "portico", rules: [{ host: `i${i}.test`, http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }] } }] },
});
const configMap = (ns: string, name: string, data: Record<string, unknown>) => ({ metadata: { name, namespace: ns }, data });
const dataOf = (sink: RecordingSink, ns: string, name: string) => (sink.get("ConfigMap", ns, name) as { data?: Record<string, string> } | undefined)?.data;
/** The collection's own list requests (all namespaces, no name). */
const collectionLists = () => api.requests.filter((r) => !r.watch && r.path === "/api/v1/configmaps");

beforeAll(async () => {
  api = await startFakeApiServer({ token: "t", bookmarkIntervalMs: 200 });
  ({ client, remove: removeKubeconfig } = await fakeApiClient(api.url, "t", log, "portico-cm-refs-"));
});
afterAll(async () => {
  await api.stop();
  removeKubeconfig();
});
afterEach(async () => {
  await source?.stop();
  source = null;
  api.faults.failNext = 0;
  api.faults.failMatch = null;
});

/** Ingresses i0..i(n-1) in `ns`, each naming ConfigMap h<i>, which exists with X-Tenant: t<i>. */
function seed(ns: string, n: number): void {
  for (let i = 0; i < n; i++) {
    api.create("ConfigMap", configMap(ns, `h${i}`, { "X-Tenant": `t${i}` }));
    api.create("Ingress", ingress(ns, i));
  }
}

async function start(): Promise<RecordingSink> {
  const sink = new RecordingSink();
  source = createKubeSource({ client, config: { watchNamespace: null }, log, kinds: ["Ingress", "ConfigMap"], timings: FAST_WATCH });
  await source.start(sink);
  return sink;
}

describe(`more than ${MAX_BY_NAME} ConfigMaps named: one collection watch`, () => {
  test("its first list failing does not hold back the first table (the ConfigMaps count as missing); they arrive once it answers", async () => {
    const ns = "fail-list";
    seed(ns, MAX_BY_NAME + 2);
    api.faults.failMatch = /^GET \/api\/v1\/configmaps\?(?!.*watch=)/;
    api.faults.failNext = 1_000;
    const sink = await start();
    await eventually(() => sink.syncedKinds.includes("ConfigMap"), 10_000, "ConfigMap synced after the failed list");
    expect(sink.has("ConfigMap", ns, "h0")).toBe(false);
    expect(collectionLists().length).toBeGreaterThan(0);
    api.faults.failNext = 0;
    await eventually(() => [...Array(MAX_BY_NAME + 2).keys()].every((i) => dataOf(sink, ns, `h${i}`)?.["X-Tenant"] === `t${i}`), 10_000, "every named ConfigMap");
    // One watch, and no list of a single name: the collection list answered them all. The
    // watch opens after the list's answer is applied, so it is waited for, not assumed.
    await eventually(() => api.openWatches("ConfigMap") === 1, 10_000, "the collection watch open");
    expect(api.openWatches("ConfigMap")).toBe(1);
    expect(api.requests.filter((r) => r.path === `/api/v1/namespaces/${ns}/configmaps`)).toEqual([]);
  });

  test("a ConfigMap named later whose read fails is read again after the back-off; an invalid version counts as absent", async () => {
    const ns = "read-fails";
    seed(ns, MAX_BY_NAME + 1);
    const sink = await start();
    await eventually(() => dataOf(sink, ns, "h0") !== undefined && api.openWatches("ConfigMap") === 1, 10_000, "the collection listed");
    const late = MAX_BY_NAME + 1;
    api.create("ConfigMap", configMap(ns, `h${late}`, { "X-Tenant": "late" }));
    api.faults.failMatch = new RegExp(`^GET /api/v1/namespaces/${ns}/configmaps\\?fieldSelector=metadata.name%3Dh${late}`);
    api.faults.failNext = 2;
    api.create("Ingress", ingress(ns, late));
    await eventually(() => dataOf(sink, ns, `h${late}`)?.["X-Tenant"] === "late", 10_000, "read after two failures");
    expect(api.faults.failNext).toBe(0);
    expect(log.text()).toContain("ConfigMap read failed, retrying");
    expect(api.openWatches("ConfigMap")).toBe(1);

    // The API server validates `data` as text; a version that is not one refuses its Ingresses.
    const cur = api.get("ConfigMap", ns, "h1")!;
    api.update("ConfigMap", { ...cur, data: { "X-Tenant": 5 } });
    await eventually(() => !sink.has("ConfigMap", ns, "h1"), 10_000, "the invalid version dropped");
    api.update("ConfigMap", { ...api.get("ConfigMap", ns, "h1")!, data: { "X-Tenant": "fixed" } });
    await eventually(() => dataOf(sink, ns, "h1")?.["X-Tenant"] === "fixed", 10_000, "the fixed version");
  });
});

test("a name added while the collection's list is under way, and absent from it, is read by name (its page may have gone by)", async () => {
  const ns = "mid-list";
  api.create("ConfigMap", configMap(ns, "late", { "X-Tenant": "late" }));
  let hooks: { keep(meta: { namespace?: string; name: string }): boolean; onListStart(): void } | null = null;
  let inner: SourceSink | null = null;
  const refs = createConfigMapRefs({
    client, log, kinds: ["Ingress", "ConfigMap"], timings: FAST_WATCH, maxByName: 1,
    // The collection's loop, stood in for: this test says when its list begins and ends.
    watchAll: (w) => {
      hooks = w;
      return { start: async (s) => void (inner = s), stop: async () => undefined };
    },
  });
  const sink = new RecordingSink();
  const wrapped = refs.wrap(sink);
  const ing = (i: number, cm: string) => ingress(ns, i, cm) as unknown as Ingress;
  wrapped.replace("Ingress", [ing(0, "a"), ing(1, "b")]);
  wrapped.synced("Ingress");
  expect(refs.mode()).toBe("collection");
  expect(refs.watched()).toEqual([]);
  hooks!.onListStart();
  // Named now: the page that held it may already have been read, and dropped.
  expect(hooks!.keep({ namespace: ns, name: "late" })).toBe(false);
  wrapped.apply({ type: "ADDED", kind: "Ingress", object: ing(2, "late") });
  inner!.replace("ConfigMap", []);
  await eventually(() => dataOf(sink, ns, "late")?.["X-Tenant"] === "late", 10_000, "read by name");
  // Those named before the list began are answered by it: absent, so not read.
  expect(api.requests.filter((r) => r.path === `/api/v1/namespaces/${ns}/configmaps`).map((r) => decodeURIComponent(r.query))).toEqual([`?fieldSelector=metadata.name=late`]);
  expect(sink.syncedKinds).toContain("ConfigMap");
  await refs.stop();
});

test("back above the bound while the collection still answers (a by-name watch failing): names added then are read; nothing held is dropped", async () => {
  const ns = "regrow";
  for (const n of ["a", "b", "c", "d", "e"]) api.create("ConfigMap", configMap(ns, n, { "X-Tenant": n }));
  let inner: SourceSink | null = null;
  let stops = 0;
  const refs = createConfigMapRefs({
    client, log, kinds: ["Ingress", "ConfigMap"], timings: FAST_WATCH, maxByName: 2,
    watchAll: () => ({ start: async (s) => void (inner = s), stop: async () => void stops++ }),
  });
  const sink = new RecordingSink();
  const wrapped = refs.wrap(sink);
  const ing = (i: number, cm: string) => ingress(ns, i, cm) as unknown as Ingress;
  wrapped.replace("Ingress", [ing(0, "a"), ing(1, "b"), ing(2, "c")]);
  wrapped.synced("Ingress");
  const listed = (name: string) => ({ metadata: { name, namespace: ns, resourceVersion: "1" }, data: { "X-Tenant": name } });
  inner!.replace("ConfigMap", [listed("a"), listed("b"), listed("c")] as never);
  expect(dataOf(sink, ns, "a")).toEqual({ "X-Tenant": "a" });
  // a's own watch cannot list: the collection keeps answering for it.
  api.faults.failMatch = new RegExp(`^GET /api/v1/namespaces/${ns}/configmaps\\?fieldSelector=metadata.name%3Da`);
  api.faults.failNext = 1_000;
  wrapped.apply({ type: "DELETED", kind: "Ingress", object: ing(1, "b") });
  wrapped.apply({ type: "DELETED", kind: "Ingress", object: ing(2, "c") });
  expect(refs.mode()).toBe("byName");
  expect(refs.watched()).toEqual([`${ns}/a`]);
  await eventually(() => log.text().includes(`"configMap":"${ns}/a"`) && api.requests.some((r) => r.status === 500 && r.query.includes("%3Da")), 10_000, "a's watch failing");
  expect(stops).toBe(0);
  expect(sink.has("ConfigMap", ns, "b")).toBe(false);
  wrapped.apply({ type: "ADDED", kind: "Ingress", object: ing(3, "d") });
  wrapped.apply({ type: "ADDED", kind: "Ingress", object: ing(4, "e") });
  expect(refs.mode()).toBe("collection");
  await eventually(() => dataOf(sink, ns, "d")?.["X-Tenant"] === "d" && dataOf(sink, ns, "e")?.["X-Tenant"] === "e", 10_000, "d and e read by name");
  expect(refs.watched()).toEqual([]);
  expect(dataOf(sink, ns, "a")).toEqual({ "X-Tenant": "a" });
  // a was never handed over as gone.
  expect(sink.events.filter((e) => e.type === "DELETED" && e.object.metadata.name === "a")).toEqual([]);
  await refs.stop();
});

test("custom-headers names a ConfigMap too: one Ingress naming two is watched for both, each dropped when no longer named", async () => {
  const ns = "custom-both";
  api.create("ConfigMap", configMap(ns, "auth-h", { "X-Auth": "a" }));
  api.create("ConfigMap", configMap(ns, "resp-h", { "X-Resp": "r" }));
  api.create("ConfigMap", configMap(ns, "unnamed", { "X-Other": "o" }));
  const both = ingress(ns, 0, "auth-h");
  (both.metadata.annotations as Record<string, string>)[`${N}custom-headers`] = `${ns}/resp-h`;
  api.create("Ingress", both);
  const sink = await start();
  await eventually(() => dataOf(sink, ns, "auth-h")?.["X-Auth"] === "a" && dataOf(sink, ns, "resp-h")?.["X-Resp"] === "r", 10_000, "both named ConfigMaps");
  expect(sink.has("ConfigMap", ns, "unnamed")).toBe(false);
  // custom-headers removed: its ConfigMap leaves the sink, the auth one stays.
  const after = ingress(ns, 0, "auth-h");
  api.update("Ingress", after);
  await eventually(() => !sink.has("ConfigMap", ns, "resp-h"), 10_000, "custom-headers ConfigMap dropped");
  expect(dataOf(sink, ns, "auth-h")?.["X-Auth"]).toBe("a");
});

test("the ConfigMaps add-headers and proxy-set-headers name are watched from the start, and the names can change live", async () => {
  const ns = "settings-named";
  api.create("ConfigMap", configMap(ns, "add", { "X-Add": "a" }));
  api.create("ConfigMap", configMap(ns, "set", { "X-Set": "s" }));
  api.create("ConfigMap", configMap(ns, "later", { "X-Later": "l" }));
  const sink = new RecordingSink();
  source = createKubeSource({
    client, log, kinds: ["Ingress", "ConfigMap"], timings: FAST_WATCH,
    config: { watchNamespace: null, addHeaders: { namespace: ns, name: "add" }, proxySetHeaders: { namespace: ns, name: "set" } },
  });
  await source.start(sink);
  // Named at start: ConfigMap is synced only once both have answered (the first table has them).
  await eventually(() => sink.syncedKinds.includes("ConfigMap"), 10_000, "ConfigMap synced");
  expect(dataOf(sink, ns, "add")?.["X-Add"]).toBe("a");
  expect(dataOf(sink, ns, "set")?.["X-Set"]).toBe("s");
  expect(sink.has("ConfigMap", ns, "later")).toBe(false);
  // The nginx ConfigMap now names another one for add-headers: it arrives, the old one leaves.
  source.nameConfigMaps([`${ns}/later`, `${ns}/set`]);
  await eventually(() => dataOf(sink, ns, "later")?.["X-Later"] === "l" && !sink.has("ConfigMap", ns, "add"), 10_000, "renamed");
  expect(dataOf(sink, ns, "set")?.["X-Set"]).toBe("s");
});

describe("a Gateway's spec.tls.frontend CA ConfigMaps", () => {
  test("are read and followed by name like the ones Ingresses name, and dropped when the Gateway stops naming them", async () => {
    const ns = "gw-ca";
    const gateway = (refs: string[]) => ({
      metadata: { name: "g", namespace: ns },
      spec: {
        gatewayClassName: "portico",
        tls: { frontend: { default: { validation: { caCertificateRefs: refs.map((name) => ({ group: "", kind: "ConfigMap", name })) } } } },
        listeners: [{ name: "https", port: 443, protocol: "HTTPS", tls: { certificateRefs: [{ name: "cert" }] } }],
      },
    });
    api.create("ConfigMap", configMap(ns, "client-ca", { "ca.crt": "one" }));
    api.create("ConfigMap", configMap(ns, "other-ca", { "ca.crt": "other" }));
    api.create("ConfigMap", configMap(ns, "unnamed", { "ca.crt": "never" }));
    api.create("Gateway", gateway(["client-ca"]));
    const sink = new RecordingSink();
    source = createKubeSource({ client, config: { watchNamespace: null }, log, kinds: ["Gateway", "ConfigMap"], timings: FAST_WATCH });
    await source.start(sink);
    await eventually(() => sink.syncedKinds.includes("ConfigMap") && dataOf(sink, ns, "client-ca")?.["ca.crt"] === "one", 10_000, "the named CA ConfigMap");
    expect(sink.has("ConfigMap", ns, "unnamed")).toBe(false);
    api.update("ConfigMap", configMap(ns, "client-ca", { "ca.crt": "two" }));
    await eventually(() => dataOf(sink, ns, "client-ca")?.["ca.crt"] === "two", 10_000, "the CA ConfigMap's change");
    // The Gateway names another CA instead: the first is dropped, the second read.
    api.update("Gateway", gateway(["other-ca"]));
    await eventually(() => dataOf(sink, ns, "other-ca")?.["ca.crt"] === "other" && !sink.has("ConfigMap", ns, "client-ca"), 10_000, "the Gateway's new CA ConfigMap");
    expect(sink.has("ConfigMap", ns, "unnamed")).toBe(false);
  });
});
