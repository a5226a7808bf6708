// API server down for a while: the source keeps its state, retries follow the back-off,
// and it converges after recovery. A 20 s outage is run at 1/10 scale
// (back-off 80 ms doubling to 3 s, outage 2 s): calls per kind are the same numbers.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { captureLogger, OBJECTS, RecordingSink } from "../fake-apiserver/fixtures.ts";
import { createKubeClientFrom } from "../../src/kube/client.ts";
import { resolveKubeConfig } from "../../src/kube/kubeconfig.ts";
import { collectionPath, createKubeSource } from "../../src/kube/watch.ts";
import { backoffDelay } from "../../src/kube/backoff.ts";
import { KINDS, KIND_API } from "../../src/model/kinds.ts";
import { eventually } from "../wait.ts";

const SCALE = 10;
const OUTAGE_MS = 20_000 / SCALE;
const INITIAL = 800 / SCALE;
const MAX = 30_000 / SCALE;

let api: FakeApiServer;
beforeAll(async () => {
  api = await startFakeApiServer({});
});
afterAll(() => api.stop());

/** Retries one loop makes in `window` ms after its watch dropped, when every jitter draw is `r`. */
function callsIn(window: number, r: number): number {
  let t = 0;
  let n = 0;
  for (let a = 0; ; a++) {
    t += backoffDelay(a, { backoffInitialMs: INITIAL, backoffMaxMs: MAX, random: () => r });
    if (t > window) return n;
    n++;
  }
}

test("20 s outage (1/10 scale): state kept, calls follow the back-off, recovery converges", async () => {
  const dir = `/tmp/portico-outage-${process.pid}`;
  await Bun.write(`${dir}/config`, `clusters: [{ name: f, cluster: { server: "${api.url}" } }]\nusers: [{ name: u, user: {} }]\ncontexts: [{ name: c, context: { cluster: f, user: u } }]\ncurrent-context: c\n`);
  const client = createKubeClientFrom(resolveKubeConfig({ kubeconfig: `${dir}/config`, context: null }), captureLogger());
  for (const kind of KINDS) api.create(kind, OBJECTS[kind]("o", `before-${kind.toLowerCase()}`));
  const sink = new RecordingSink();
  const failures = new Map<string, number>();
  const source = createKubeSource({
    hooks: { onError: (k) => void failures.set(k, (failures.get(k) ?? 0) + 1) },
    client,
    config: { watchNamespace: null },
    log: captureLogger(),
    timings: { backoffInitialMs: INITIAL, backoffMaxMs: MAX, backoffResetMs: 120_000 / SCALE, watchTimeoutSeconds: () => 60, requestTimeoutMs: 1000, minWatchMs: 0 },
  });
  await source.start(sink);
  try {
    await eventually(() => sink.syncedKinds.length === KINDS.length, 3_000, "synced");
    const eventsBefore = sink.events.length;
    const t0 = Date.now();
    const firstOutageCall = api.requests.length;
    failures.clear();
    api.faults.down = "reset";
    api.dropWatches();
    await Bun.sleep(OUTAGE_MS);
    const during = api.requests.slice(firstOutageCall);
    const attempts = KINDS.map((k) => failures.get(k) ?? 0);
    api.faults.down = false;
    const elapsed = Date.now() - t0;
    // The state survived: no deletion or relist reached the sink during the outage.
    expect(sink.events.length).toBe(eventsBefore);
    for (const kind of KINDS) expect(sink.has(kind, KIND_API[kind].namespaced ? "o" : "", `before-${kind.toLowerCase()}`)).toBe(true);
    const lo = callsIn(OUTAGE_MS, 0.999) - 1; // -1: a loaded machine may fire a timer late
    const hi = callsIn(elapsed, 0);
    const perKind = KINDS.map((k) => during.filter((r) => r.path === collectionPath(k, null)).length);
    process.stdout.write(`outage ${OUTAGE_MS} ms (x${SCALE} = 20 s): failed attempts per kind ${JSON.stringify(attempts)}, requests seen by the server per kind ${JSON.stringify(perKind)} (total ${during.length}), expected retries per kind ${lo + 1}..${hi} (jitter extremes)\n`);
    // Attempts counted by the client: the first is the dropped watch itself, then one per back-off step.
    for (const n of attempts) {
      expect(n - 1).toBeGreaterThanOrEqual(lo);
      expect(n - 1).toBeLessThanOrEqual(hi);
    }
    // The server may see one more request per attempt: Bun's fetch retries a GET once when a
    // reused keep-alive connection is reset before any response.
    for (const n of perKind) expect(n).toBeLessThanOrEqual(2 * hi);
    expect(during.length).toBe(perKind.reduce((a, b) => a + b, 0));
    // Recovery: changes made after the outage arrive, from the kept resourceVersion (no relist).
    for (const kind of KINDS) api.create(kind, OBJECTS[kind]("o", `after-${kind.toLowerCase()}`));
    await eventually(() => KINDS.every((k) => sink.has(k, KIND_API[k].namespaced ? "o" : "", `after-${k.toLowerCase()}`)), MAX + 2000, "recovered");
    for (const kind of KINDS) expect(source.state(kind).lists).toBe(1);
  } finally {
    await source.stop();
  }
});
