// API server down for a while: the source keeps its state, retries follow the back-off,
// and it converges after recovery. Run at 1/10 scale (back-off 80 ms doubling to 3 s).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { captureLogger, OBJECTS, RecordingSink } from "../fake-apiserver/fixtures.ts";
import { createKubeClientFrom } from "../../src/kube/client.ts";
import { resolveKubeConfig } from "../../src/kube/kubeconfig.ts";
import { collectionPath, createKubeSource } from "../../src/kube/watch.ts";
import { backoffDelay } from "../../src/kube/backoff.ts";
import { KINDS, KIND_API, LISTED_KINDS } from "../../src/model/kinds.ts";
import { eventually } from "../wait.ts";

const SCALE = 10;
const INITIAL = 800 / SCALE;
const MAX = 30_000 / SCALE;

let api: FakeApiServer;
beforeAll(async () => {
  api = await startFakeApiServer({});
});
afterAll(() => api.stop());

test("outage of five failed attempts per kind (1/10 scale): state kept, calls follow the back-off, recovery converges", async () => {
  const dir = `/tmp/portico-outage-${process.pid}`;
  await Bun.write(`${dir}/config`, `clusters: [{ name: f, cluster: { server: "${api.url}" } }]\nusers: [{ name: u, user: {} }]\ncontexts: [{ name: c, context: { cluster: f, user: u } }]\ncurrent-context: c\n`);
  const client = createKubeClientFrom(resolveKubeConfig({ kubeconfig: `${dir}/config`, context: null }), captureLogger());
  // The kinds listed whole; no Ingress names a ConfigMap, so none is watched (configmap-refs.ts).
  for (const kind of LISTED_KINDS) api.create(kind, OBJECTS[kind]("o", `before-${kind.toLowerCase()}`));
  const sink = new RecordingSink();
  // How many attempts of each kind's loop failed (the first is the dropped watch).
  const failures = new Map<string, number>();
  const log = captureLogger();
  // The jitter's middle (×1.0): each retry's wait is then exactly its back-off step.
  const random = () => 0.5;
  const source = createKubeSource({
    hooks: { onError: (k) => void failures.set(k, (failures.get(k) ?? 0) + 1) },
    client,
    config: { watchNamespace: null },
    log,
    timings: { backoffInitialMs: INITIAL, backoffMaxMs: MAX, backoffResetMs: 120_000 / SCALE, watchTimeoutSeconds: () => 60, requestTimeoutMs: 1000, minWatchMs: 0, random },
  });
  await source.start(sink);
  try {
    await eventually(() => sink.syncedKinds.length === KINDS.length, 3_000, "synced");
    const eventsBefore = sink.events.length;
    const firstOutageCall = api.requests.length;
    failures.clear();
    const linesBefore = log.lines.length;
    api.faults.down = "reset";
    api.dropWatches();
    // The outage lasts until every kind has failed ATTEMPTS times (80, 160, 320, 640 ms of
    // back-off between them): a count of retries, not a length of time.
    const ATTEMPTS = 5;
    await eventually(() => LISTED_KINDS.every((k) => (failures.get(k) ?? 0) >= ATTEMPTS), 20_000, `${ATTEMPTS} failed attempts per kind`);
    const during = api.requests.slice(firstOutageCall);
    const retries = log.lines.slice(linesBefore).filter((l) => l.msg === "list/watch failed, retrying");
    api.faults.down = false;
    // The state survived: no deletion or relist reached the sink during the outage.
    expect(sink.events.length).toBe(eventsBefore);
    for (const kind of LISTED_KINDS) expect(sink.has(kind, KIND_API[kind].namespaced ? "o" : "", `before-${kind.toLowerCase()}`)).toBe(true);
    // Each failed attempt is followed by a wait of the next back-off step, which the loop
    // names in its line before it sleeps: the decision is asserted, not a stopwatch around it.
    const steps = Array.from({ length: ATTEMPTS }, (_, i) => Math.round(backoffDelay(i, { backoffInitialMs: INITIAL, backoffMaxMs: MAX, random })));
    for (const kind of LISTED_KINDS) {
      const waits = retries.filter((l) => l.fields?.kind === kind).map((l) => l.fields?.retryInMs);
      expect([kind, waits.slice(0, ATTEMPTS)]).toEqual([kind, steps]);
    }
    const perKind = LISTED_KINDS.map((k) => during.filter((r) => r.path === collectionPath(k, null)).length);
    const hi = ATTEMPTS + 1; // the retries counted plus at most one more in flight when the count was read
    for (const n of perKind) expect(n).toBeLessThanOrEqual(2 * hi);
    expect(during.length).toBe(perKind.reduce((a, b) => a + b, 0));
    // Recovery: changes made after the outage arrive, from the kept resourceVersion (no relist).
    for (const kind of LISTED_KINDS) api.create(kind, OBJECTS[kind]("o", `after-${kind.toLowerCase()}`));
    await eventually(() => LISTED_KINDS.every((k) => sink.has(k, KIND_API[k].namespaced ? "o" : "", `after-${k.toLowerCase()}`)), MAX + 2000, "recovered");
    for (const kind of LISTED_KINDS) expect(source.state(kind).lists).toBe(1);
  } finally {
    await source.stop();
  }
});
