// auth-proxy-set-headers when Ingresses name many ConfigMaps: the API server connections
// Portico holds stay bounded (kube/configmap-refs.ts, docs/design.md "External authentication",
// "Watching"), and the headers still reach the auth service and still follow edits. One
// process: the fake API server, the real list+watch source, the real controller and proxy
// handler on 127.0.0.1, and a raw-socket auth service that answers 200 only when the auth
// request carries the tenant header its Ingress's ConfigMap sets (so a status says whether the
// headers arrived: ingress-nginx writes each entry as `proxy_set_header` in the auth location,
// template.go buildAuthProxySetHeaders at dbb11b92, and denies the location, 503, while the
// ConfigMap named is missing, authreq/main.go).
//
// Injected, as in auth-proxy-set-headers.test.ts: the auth service's name resolves to
// 127.0.0.1, which the address policy would refuse.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { ingress, ingressClass, service, slice } from "../e2e/objects.ts";
import { rawBackend, type RawBackend } from "./raw.ts";
import { rawRequest, startWatchedAuthProxy, statusLine } from "./helpers.ts";
import { eventually } from "../wait.ts";
const MAX_BY_NAME = 16;
import type { KubeSource } from "../../src/kube/watch.ts";
import type { Controller } from "../../src/runtime/controller.ts";

const N = "nginx.ingress.kubernetes.io/";
const NS = "tenants";
/** Ingresses at the start, each naming its own ConfigMap: well above the by-name bound. */
const START = 40;
/** Watches of ConfigMaps open at once, at most: the by-name ones plus the collection's. */
const BOUND = MAX_BY_NAME + 1;

let api: FakeApiServer;
let auth: RawBackend;
let backend: RawBackend;
let controller: Controller;
let source: KubeSource;
let server: { port: number | undefined; stop(force?: boolean): unknown };
let stopProxy: (() => Promise<void>) | undefined;

const configMap = (i: number, tenant = `tenant-${i}`, resourceVersion?: string) => ({
  apiVersion: "v1", kind: "ConfigMap", metadata: { name: `headers-${i}`, namespace: NS, ...(resourceVersion ? { resourceVersion } : {}) }, data: { "X-Tenant": tenant },
});
const tenantIngress = (i: number) =>
  ingress(NS, `t${i}`, [{ host: `t${i}.test`, paths: [{ path: "/", service: "web" }] }], {
    annotations: { [`${N}auth-url`]: `http://auth.test.svc:${auth.port}/check`, [`${N}auth-proxy-set-headers`]: `${NS}/headers-${i}` },
  });
/** What the auth service wants to see for host `t<i>.test` (changed by the edits below). */
const expected = new Map<string, string>();

async function send(host: string): Promise<number> {
  return statusLine(await rawRequest(server.port as number, `GET / HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`, 5_000));
}

/** The auth request's field `name` (lower case), from its head as received. */
function field(head: string, name: string): string | null {
  for (const line of head.split("\r\n").slice(1)) {
    const i = line.indexOf(":");
    if (i > 0 && line.slice(0, i).toLowerCase() === name) return line.slice(i + 1).trim();
  }
  return null;
}

const configMapWatches = () => api.requests.filter((r) => r.watch && r.path.endsWith("/configmaps"));

beforeAll(async () => {
  // 200 when X-Tenant is what the host's ConfigMap says now, else 403: the status tells.
  auth = await rawBackend((req) => {
    const host = new URL(field(req.head, "x-original-url") ?? "http://none/").hostname;
    const ok = expected.has(host) && field(req.head, "x-tenant") === expected.get(host);
    return ok ? "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n" : "HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n";
  });
  backend = await rawBackend();
  api = await startFakeApiServer({ token: "t", bookmarkIntervalMs: 500 });
  api.create("IngressClass", ingressClass());
  api.create("Service", service(NS, "web"));
  api.create("EndpointSlice", slice(NS, "web", [backend.port]));
  for (let i = 0; i < START; i++) {
    api.create("ConfigMap", configMap(i));
    api.create("Ingress", tenantIngress(i));
    expected.set(`t${i}.test`, `tenant-${i}`);
  }
  // ConfigMaps no Ingress names: the collection watch sees them and drops them.
  for (let i = 0; i < 5; i++) api.create("ConfigMap", { apiVersion: "v1", kind: "ConfigMap", metadata: { name: `unrelated-${i}`, namespace: i % 2 ? NS : "other" }, data: { big: "x".repeat(10_000) } });

  ({ controller, source, server, stop: stopProxy } = await startWatchedAuthProxy(api.url, "portico-authcm-many-", 15_000));
});

afterAll(async () => {
  await stopProxy?.();
  await api?.stop();
  await auth?.stop();
  await backend?.stop();
});

describe(`auth-proxy-set-headers with more than ${MAX_BY_NAME} ConfigMaps named`, () => {
  test("the first table has every tenant's headers, through one ConfigMap watch; only the named ConfigMaps are held", async () => {
    // The first table waited for the ConfigMaps: no request is refused for one not read yet.
    for (let i = 0; i < START; i++) expect(await send(`t${i}.test`)).toBe(200);
    expect(api.peakWatches("ConfigMap")).toBeLessThanOrEqual(BOUND);
    await eventually(() => api.openWatches("ConfigMap") === 1, 10_000, "one ConfigMap watch open");
    // The one watch is the collection's: all namespaces, no name.
    const last = configMapWatches().at(-1)!;
    expect(last.path).toBe("/api/v1/configmaps");
    expect(last.query).not.toContain("fieldSelector");
    const held = [...controller.store.view("ConfigMap").keys()].sort();
    expect(held).toEqual(Array.from({ length: START }, (_, i) => `${NS}/headers-${i}`).sort());
  });

  test("edits apply: a changed, deleted and recreated ConfigMap; an Ingress naming another one, before and after that one exists", async () => {
    const cur = api.get("ConfigMap", NS, "headers-3")!;
    api.update("ConfigMap", configMap(3, "tenant-3-v2", cur.metadata.resourceVersion as string));
    expected.set("t3.test", "tenant-3-v2");
    await eventually(async () => (await send("t3.test")) === 200, 10_000, "the edited header reaches the auth service");

    api.delete("ConfigMap", NS, "headers-4");
    await eventually(async () => (await send("t4.test")) === 503, 10_000, "503 once the ConfigMap is gone");
    api.create("ConfigMap", configMap(4, "tenant-4-again"));
    expected.set("t4.test", "tenant-4-again");
    await eventually(async () => (await send("t4.test")) === 200, 10_000, "served again once it is back");

    // Named after the collection listed: read by name once, then followed by the collection.
    api.create("ConfigMap", configMap(START));
    expected.set(`t${START}.test`, `tenant-${START}`);
    api.create("Ingress", tenantIngress(START));
    await eventually(async () => (await send(`t${START}.test`)) === 200, 10_000, "a ConfigMap named later is read");
    const later = START + 1;
    expected.set(`t${later}.test`, `tenant-${later}`);
    api.create("Ingress", tenantIngress(later));
    await eventually(async () => (await send(`t${later}.test`)) === 503, 10_000, "503 while the ConfigMap named does not exist");
    api.create("ConfigMap", configMap(later));
    await eventually(async () => (await send(`t${later}.test`)) === 200, 10_000, "served once it is created");
    const cm = api.get("ConfigMap", NS, `headers-${START}`)!;
    api.update("ConfigMap", configMap(START, "tenant-late-v2", cm.metadata.resourceVersion as string));
    expected.set(`t${START}.test`, "tenant-late-v2");
    await eventually(async () => (await send(`t${START}.test`)) === 200, 10_000, "the collection follows the ConfigMap read by name");

    expect(api.openWatches("ConfigMap")).toBe(1);
    expect(api.peakWatches("ConfigMap")).toBeLessThanOrEqual(BOUND);
  });

  test(`down to ${MAX_BY_NAME / 2} named: watched by name again, with no request refused on the way; edits still apply`, async () => {
    const keep = MAX_BY_NAME / 2;
    // Requests to a tenant that stays named go on while the watches change hands.
    const statuses: number[] = [];
    let running = true;
    const loop = (async () => {
      while (running) statuses.push(await send("t0.test"));
    })();
    for (let i = keep; i <= START + 1; i++) api.delete("Ingress", NS, `t${i}`);
    try {
      await eventually(() => {
        const open = configMapWatches().length > 0 ? api.openWatches("ConfigMap") : -1;
        return open === keep && !controller.store.view("ConfigMap").has(`${NS}/headers-${keep}`);
      }, 15_000, `${keep} by-name watches and nothing else`);
      // Three more requests after the hand-over.
      const after = statuses.length + 3;
      await eventually(() => statuses.length >= after, 10_000, "requests after the hand-over");
    } finally {
      running = false;
      await loop;
    }
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    const open = api.requests.filter((r) => r.watch && r.path.endsWith("/configmaps")).slice(-keep);
    for (const r of open) expect(r.path).toBe(`/api/v1/namespaces/${NS}/configmaps`);
    expect([...controller.store.view("ConfigMap").keys()].sort()).toEqual(Array.from({ length: keep }, (_, i) => `${NS}/headers-${i}`).sort());

    const cur = api.get("ConfigMap", NS, "headers-1")!;
    api.update("ConfigMap", configMap(1, "tenant-1-v2", cur.metadata.resourceVersion as string));
    expected.set("t1.test", "tenant-1-v2");
    await eventually(async () => (await send("t1.test")) === 200, 10_000, "an edit through the by-name watch");
    expect(api.peakWatches("ConfigMap")).toBeLessThanOrEqual(BOUND);
  });

  test("named one at a time past the bound: at most the bound's watches at once, then one collection watch; every header arrives", async () => {
    for (let i = MAX_BY_NAME / 2; i < 3 * MAX_BY_NAME; i++) {
      const cur = api.get("ConfigMap", NS, `headers-${i}`);
      if (cur) api.update("ConfigMap", configMap(i, `tenant-${i}-b`, cur.metadata.resourceVersion as string));
      else api.create("ConfigMap", configMap(i, `tenant-${i}-b`));
      expected.set(`t${i}.test`, `tenant-${i}-b`);
      api.create("Ingress", tenantIngress(i));
    }
    for (let i = 0; i < 3 * MAX_BY_NAME; i++) await eventually(async () => (await send(`t${i}.test`)) === 200, 10_000, `t${i} served with its header`);
    await eventually(() => api.openWatches("ConfigMap") === 1, 10_000, "one ConfigMap watch");
    expect(api.peakWatches("ConfigMap")).toBeLessThanOrEqual(BOUND);
  });
});
