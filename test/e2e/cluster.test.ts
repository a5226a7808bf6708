// End to end against the fake API server: the real process lists and watches over HTTP with a
// bearer token, serves what it sees, writes Ingress status as leader, and keeps serving while
// the API server is down.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { get, startBackend, startPortico, type Backend, type Portico } from "./harness.ts";
import { ingress, ingressClass, kubeconfig, service, slice } from "./objects.ts";
import { eventually } from "../wait.ts";

let api: FakeApiServer;
let portico: Portico;
let dir: string;
const backends: Backend[] = [];

beforeAll(async () => {
  api = await startFakeApiServer({ token: "e2e-token", bookmarkIntervalMs: 500 });
  dir = mkdtempSync(join(tmpdir(), "portico-cluster-"));
  const kubeconfigPath = join(dir, "kubeconfig");
  writeFileSync(kubeconfigPath, kubeconfig(api.url, "e2e-token"));
  const a = startBackend("a");
  const b = startBackend("b");
  backends.push(a, b);
  api.create("IngressClass", ingressClass());
  api.create("Service", service("team", "a"));
  api.create("EndpointSlice", slice("team", "a", [a.port]));
  api.create("Service", service("team", "b"));
  api.create("EndpointSlice", slice("team", "b", [b.port]));
  api.create("Ingress", ingress("team", "web", [{ host: "web.test", paths: [{ path: "/", service: "a" }] }]));
  portico = await startPortico(["--kubeconfig", kubeconfigPath, "--publish-status-address", "192.0.2.10", "--election-namespace", "default", "--log-level", "info", "--access-log", "off"], {
    env: { POD_NAME: "portico-e2e-0" },
  });
});

afterAll(async () => {
  await portico?.stop("SIGKILL");
  await api?.stop();
  for (const b of backends) b.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("against the fake API server", () => {
  test("serves the listed Ingress", async () => {
    const r = await get(portico.http, "web.test", "/x");
    expect(r.status).toBe(200);
    expect(r.body).toBe("a /x");
  });

  test("30 Ingress edits in a row are each served", async () => {
    for (let i = 0; i < 30; i++) {
      const svc = i % 2 === 0 ? "b" : "a";
      const cur = api.get("Ingress", "team", "web")!;
      const next = ingress("team", "web", [{ host: "web.test", paths: [{ path: "/", service: svc }] }]);
      api.update("Ingress", { ...next, metadata: { ...(next.metadata as object), resourceVersion: cur.metadata.resourceVersion } });
      await eventually(async () => (await get(portico.http, "web.test", "/")).body === `${svc} /`, 10_000, `edit ${i} served`);
    }
  });

  test("create and delete of each kind reach the data plane", async () => {
    api.create("Ingress", ingress("team", "new", [{ host: "new.test", paths: [{ path: "/", service: "b" }] }]));
    await eventually(async () => (await get(portico.http, "new.test", "/")).status === 200, 5000);
    api.delete("EndpointSlice", "team", "b-x");
    await eventually(async () => (await get(portico.http, "new.test", "/")).status === 503, 5000);
    api.create("EndpointSlice", slice("team", "b", [backends[1]!.port]));
    await eventually(async () => (await get(portico.http, "new.test", "/")).status === 200, 5000);
    api.delete("Service", "team", "b");
    await eventually(async () => (await get(portico.http, "new.test", "/")).status === 503, 5000);
    api.create("Service", service("team", "b"));
    api.delete("Ingress", "team", "new");
    await eventually(async () => (await get(portico.http, "new.test", "/")).status === 404, 5000);
  });

  test("the leader writes status.loadBalancer of served Ingresses", async () => {
    await eventually(() => {
      const st = api.get("Ingress", "team", "web")?.status as { loadBalancer?: { ingress?: { ip?: string }[] } } | undefined;
      return st?.loadBalancer?.ingress?.[0]?.ip === "192.0.2.10";
    }, 10_000);
    const lease = api.get("Lease", "default", "portico-leader") as { spec?: { holderIdentity?: string } } | undefined;
    expect(lease?.spec?.holderIdentity).toContain("portico-e2e-0");
    const metrics = await (await fetch(`${portico.admin}/metrics`)).text();
    expect(metrics).toMatch(/portico_leader(\{\})? 1/);
  });

  test("API server down: traffic keeps flowing on the last table, then recovery converges", async () => {
    const before = api.requests.length;
    api.faults.down = "reset";
    api.dropWatches();
    for (let i = 0; i < 20; i++) {
      expect((await get(portico.http, "web.test", "/")).status).toBe(200);
      // The client's pace: traffic spread over about 2 s of outage is the scenario. The back-off
      // doubles, so a loaded machine stretching the outage adds few calls to the bound below.
      await Bun.sleep(100);
    }
    const during = api.requests.length - before;
    console.log(`API calls during a 2 s outage: ${during}`);
    // The back-off (0.8 s doubling, 5 watches + the lease) bounds the calls: no hot loop.
    expect(during).toBeLessThan(60);
    api.faults.down = false;
    api.create("Ingress", ingress("team", "after", [{ host: "after.test", paths: [{ path: "/", service: "a" }] }]));
    await eventually(async () => (await get(portico.http, "after.test", "/")).status === 200, 40_000);
  }, 60_000);
});
