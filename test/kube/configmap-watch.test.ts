// The ingress-nginx ConfigMap's own list+watch (--nginx-configmap, src/kube/configmap.ts) against
// the fake API server over real sockets: a silent watch is restarted as the store's watches are
// (docs/design.md "API server failures"), and a line the stream should never have carried moves
// neither the resume point nor the settings.
import { afterAll, afterEach, beforeAll, expect, test } from "bun:test";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { captureLogger, fakeApiClient, FAST_WATCH } from "../fake-apiserver/fixtures.ts";
import type { KubeClient } from "../../src/kube/client.ts";
import { watchConfigMap, type ConfigMapWatch } from "../../src/kube/configmap.ts";
import type { WatchTimings } from "../../src/kube/watch-parts.ts";
import { eventually } from "../wait.ts";

const NS = "ingress-nginx";
const NAME = "ingress-nginx-controller";
const PATH = `/api/v1/namespaces/${NS}/configmaps`;

let api: FakeApiServer;
let client: KubeClient;
let removeKubeconfig: () => void;
const log = captureLogger();
let watch: ConfigMapWatch | null = null;

beforeAll(async () => {
  api = await startFakeApiServer({ token: "t", bookmarkIntervalMs: 100 });
  ({ client, remove: removeKubeconfig } = await fakeApiClient(api.url, "t", log, "portico-cm-watch-"));
});
afterAll(async () => {
  await api.stop();
  removeKubeconfig();
});
afterEach(async () => {
  await watch?.stop();
  watch = null;
  if (api.get("ConfigMap", NS, NAME)) api.delete("ConfigMap", NS, NAME);
});

/** The `data` of each object reported (null: none), in order. */
async function start(timings: Partial<WatchTimings> = {}): Promise<Array<Record<string, string> | null>> {
  const seen: Array<Record<string, string> | null> = [];
  watch = await watchConfigMap({
    client, ref: { namespace: NS, name: NAME }, log,
    onObject: (raw) => seen.push(raw === null ? null : ((raw as { data?: Record<string, string> }).data ?? {})),
    timings: { ...FAST_WATCH, ...timings },
  });
  await eventually(() => api.openWatches("ConfigMap") === 1, 3_000, "the watch open");
  return seen;
}

const setData = (data: Record<string, string>) => {
  const cur = api.get("ConfigMap", NS, NAME)!;
  api.update("ConfigMap", { ...cur, data });
};

test("a watch that goes silent (no event, no bookmark) is restarted from its resourceVersion and logged", async () => {
  api.create("ConfigMap", { metadata: { name: NAME, namespace: NS }, data: { "proxy-body-size": "1m" } });
  // The watch's own timeoutSeconds is 5 min: only the stall watchdog can end it within the wait.
  const seen = await start({ stallTimeoutMs: 2_000, watchTimeoutSeconds: () => 300 });
  expect(seen).toEqual([{ "proxy-body-size": "1m" }]);
  const before = log.lines.length;
  api.silenceWatches("ConfigMap");
  setData({ "proxy-body-size": "2m" });
  await eventually(() => seen.at(-1)?.["proxy-body-size"] === "2m", 15_000, "the change made while the watch was silent");
  const stalls = log.lines.slice(before).filter((l) => l.msg.startsWith("watch stalled"));
  expect(stalls.map((l) => l.fields?.kind)).toEqual(["ConfigMap"]);
  // Resumed, not listed again.
  expect(api.requests.filter((r) => r.path === PATH && !r.watch)).toHaveLength(1);
});

test("garbage lines are skipped: the settings stay, and the watch resumes from where the server's events left it", async () => {
  api.create("ConfigMap", { metadata: { name: NAME, namespace: NS }, data: { "proxy-body-size": "1m" } });
  const seen = await start();
  const rv = String(api.resourceVersion);
  const before = log.lines.length;
  // Another object (the watch asked for this one by name), a deletion without a name, a version
  // the API server would refuse, and one older than the list's.
  api.injectLine(JSON.stringify({ type: "ADDED", object: { metadata: { name: "other", namespace: NS, resourceVersion: rv }, data: {} } }), "ConfigMap");
  api.injectLine(JSON.stringify({ type: "DELETED", object: { metadata: { resourceVersion: rv } } }), "ConfigMap");
  api.injectLine(JSON.stringify({ type: "BOOKMARK", object: { metadata: { resourceVersion: "1" } } }), "ConfigMap");
  api.injectLine(JSON.stringify({ type: "BOOKMARK", object: { metadata: { resourceVersion: "not-a-version" } } }), "ConfigMap");
  api.injectLine("not json", "ConfigMap");
  // Then a well-formed event about it, at the same version: once it is reported, every line
  // before it has been read.
  const marked = { "proxy-body-size": "1m", marker: "read" };
  api.injectLine(JSON.stringify({ type: "MODIFIED", object: { metadata: { name: NAME, namespace: NS, resourceVersion: rv }, data: marked } }), "ConfigMap");
  await eventually(() => seen.at(-1)?.marker === "read", 3_000, "the lines read");
  expect(seen).toEqual([{ "proxy-body-size": "1m" }, marked]);
  expect(log.lines.slice(before).filter((l) => l.msg === "malformed watch line skipped")).toHaveLength(5);
  const from = api.requests.length;
  api.dropWatches();
  setData({ "proxy-body-size": "3m" });
  await eventually(() => seen.length > 2, 4_000, "the change made after the drop");
  expect(seen).toEqual([{ "proxy-body-size": "1m" }, marked, { "proxy-body-size": "3m" }]);
  const resumed = api.requests.slice(from).filter((r) => r.path === PATH && r.watch);
  expect(resumed.map((r) => [new URLSearchParams(r.query).get("resourceVersion"), r.status])).toEqual([[rv, 200]]);
});

test("a version the API server never reached does not freeze the watch: its 504 Too large resource version lists afresh", async () => {
  api.create("ConfigMap", { metadata: { name: NAME, namespace: NS }, data: { "proxy-body-size": "1m" } });
  const seen = await start();
  // A well-formed uint64 ahead of the server: the resume point moves to it (watch-parts.ts
  // resumeAfter), and the next watch from it gets 504, as from kube-apiserver
  // (k8s.io/apiserver storage.NewTooLargeResourceVersionError).
  api.injectLine(JSON.stringify({ type: "BOOKMARK", object: { metadata: { resourceVersion: "18446744073709551615" } } }), "ConfigMap");
  const from = api.requests.length;
  api.endWatches();
  await eventually(() => api.requests.slice(from).some((r) => r.path === PATH && r.watch && r.status === 504), 5_000, "the refused watch");
  setData({ "proxy-body-size": "4m" });
  // Listed again after the back-off, so the change is seen; retried from the same version it
  // would never be.
  await eventually(() => seen.at(-1)?.["proxy-body-size"] === "4m", 10_000, "the change after the relist");
  expect(api.requests.slice(from).filter((r) => r.path === PATH && !r.watch).length).toBeGreaterThanOrEqual(1);
});
