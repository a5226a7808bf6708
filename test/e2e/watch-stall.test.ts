// A watch that goes silent on a running Portico: after API errors, a 410 and garbage lines on
// the Ingress watch, the fake API server holds the next Ingress watch open with nothing on it
// (no event, no bookmark, no end). Portico must notice (docs/design.md "API server failures"),
// log it with the kind, resume the watch and serve an Ingress created during the silence,
// while the watch's own timeoutSeconds (5-10 min) is far away.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { get, startBackend, startPortico, type Backend, type Portico } from "./harness.ts";
import { ingress, ingressClass, kubeconfig, service, slice } from "./objects.ts";
import { eventually } from "../wait.ts";

let api: FakeApiServer;
let portico: Portico;
let backend: Backend;
let dir: string;

beforeAll(async () => {
  // Bookmarks every 200 ms keep the healthy watches talking, well inside the 2 s stall timeout.
  api = await startFakeApiServer({ token: "stall-token", bookmarkIntervalMs: 200 });
  dir = mkdtempSync(join(tmpdir(), "portico-stall-"));
  writeFileSync(join(dir, "kubeconfig"), kubeconfig(api.url, "stall-token"));
  backend = startBackend("a");
  api.create("IngressClass", ingressClass());
  api.create("Service", service("team", "a"));
  api.create("EndpointSlice", slice("team", "a", [backend.port]));
  api.create("Ingress", ingress("team", "web", [{ host: "web.test", paths: [{ path: "/", service: "a" }] }]));
  portico = await startPortico(["--kubeconfig", join(dir, "kubeconfig"), "--election-namespace", "default", "--log-level", "info", "--access-log", "off"], {
    env: { POD_NAME: "portico-stall-0", PORTICO_WATCH_STALL_TIMEOUT: "2s" },
  });
});

afterAll(async () => {
  await portico?.stop("SIGKILL");
  await api?.stop();
  backend?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const ingressWatch = /^GET \/apis\/networking\.k8s\.io\/v1\/ingresses\?.*watch=1/;
const watching = () => api.openWatches("Ingress") === 1;

test("after errors, a 410 and garbage lines, a silent Ingress watch is restarted and an Ingress created meanwhile is served", async () => {
  expect((await get(portico.http, "web.test", "/")).status).toBe(200);
  await eventually(watching, 10_000);

  // API errors on the Ingress watch.
  api.faults.failMatch = ingressWatch;
  api.faults.failNext = 2;
  api.dropWatches();
  await eventually(() => api.faults.failNext === 0 && watching(), 20_000);
  api.faults.failMatch = null;
  // A 410 Gone as an ERROR event: a relist.
  api.faults.goneMode = "event";
  const from = api.requests.length;
  api.compact();
  api.dropWatches();
  const relisted = () => api.requests.slice(from).some((r) => r.path === "/apis/networking.k8s.io/v1/ingresses" && !r.watch && r.status === 200);
  await eventually(() => relisted() && watching(), 20_000);
  api.faults.goneMode = "status";
  // Garbage lines on the open Ingress watch: skipped, the stream goes on.
  api.injectLine("this is not json", "Ingress");
  api.injectLine('{"type":"ADDED","obj', "Ingress");
  api.create("Ingress", ingress("team", "before", [{ host: "before.test", paths: [{ path: "/", service: "a" }] }]));
  await eventually(async () => (await get(portico.http, "before.test", "/")).status === 200, 10_000);

  // The Ingress watch goes silent; the other kinds keep their watches.
  api.silenceWatches("Ingress");
  api.create("Ingress", ingress("team", "during", [{ host: "during.test", paths: [{ path: "/", service: "a" }] }]));
  await eventually(async () => (await get(portico.http, "during.test", "/")).status === 200, 30_000);
  const line = await portico.waitForLine(/watch stalled/);
  expect(line).toContain("Ingress");
  const r = await get(portico.http, "during.test", "/x");
  expect(r.body).toBe("a /x");
}, 120_000);
