// Two (then three) electors against one fake API server: one leader at a time, handover
// within the lease duration after the leader dies, immediate handover after a release.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { captureLogger, waitFor } from "../fake-apiserver/fixtures.ts";
import { createKubeClientFrom } from "../../src/kube/client.ts";
import { resolveKubeConfig } from "../../src/kube/kubeconfig.ts";
import { createLeaderElector, electionNamespace, type LeaderElector } from "../../src/kube/leader.ts";

const LEASE_MS = 1000; // leaseDurationSeconds 1 (the API's unit is seconds)
const TIMINGS = { leaseDurationMs: LEASE_MS, renewIntervalMs: 200, renewDeadlineMs: 700, retryIntervalMs: 100 };

let api: FakeApiServer;
let kubeconfig: string;
beforeAll(async () => {
  api = await startFakeApiServer({ token: "t" });
  kubeconfig = `/tmp/portico-leader-${process.pid}/config`;
  await Bun.write(kubeconfig, `clusters: [{ name: f, cluster: { server: "${api.url}" } }]\nusers: [{ name: u, user: { token: t } }]\ncontexts: [{ name: c, context: { cluster: f, user: u } }]\ncurrent-context: c\n`);
});
afterAll(() => api.stop());

function elector(id: string, leaders: Set<string>, history: string[]): LeaderElector {
  const client = createKubeClientFrom(resolveKubeConfig({ kubeconfig, context: null }), captureLogger());
  return createLeaderElector({
    client,
    config: { electionId: "portico-leader", electionNamespace: "portico-system" },
    log: captureLogger(),
    identity: id,
    timings: TIMINGS,
    onLeader: (is) => {
      if (is) leaders.add(id);
      else leaders.delete(id);
      history.push(`${id}:${is}`);
    },
  });
}

test("exactly one leader; killing it hands over within the lease duration; a release hands over at once", async () => {
  const leaders = new Set<string>();
  const history: string[] = [];
  let maxConcurrent = 0;
  const watch = setInterval(() => (maxConcurrent = Math.max(maxConcurrent, leaders.size)), 5);
  const a = elector("a", leaders, history);
  const b = elector("b", leaders, history);
  const c = elector("c", leaders, history);
  try {
    a.start();
    b.start();
    await waitFor(() => leaders.size === 1, "a leader");
    await Bun.sleep(1200); // several renewals
    expect(leaders.size).toBe(1);
    const first = [...leaders][0]!;
    expect(api.get("Lease", "portico-system", "portico-leader")?.spec).toMatchObject({ holderIdentity: first, leaseDurationSeconds: 1 });

    // Kill the leader: it stops renewing and does not release.
    const [dead, alive] = first === "a" ? [a, b] : [b, a];
    const killedAt = Date.now();
    await dead.stop(false);
    leaders.delete(dead.identity); // a dead process no longer acts
    await waitFor(() => alive.isLeader(), "handover", 4 * LEASE_MS);
    const handoverMs = Date.now() - killedAt;
    process.stdout.write(`handover after the leader died: ${handoverMs} ms (lease ${LEASE_MS} ms, retry ${TIMINGS.retryIntervalMs} ms)\n`);
    expect(handoverMs).toBeLessThanOrEqual(LEASE_MS + 3 * TIMINGS.retryIntervalMs + 500);
    const lease = api.get("Lease", "portico-system", "portico-leader")!;
    expect((lease.spec as { holderIdentity: string; leaseTransitions: number }).holderIdentity).toBe(alive.identity);
    expect((lease.spec as { leaseTransitions: number }).leaseTransitions).toBe(1);

    // A graceful stop releases: the waiting candidate takes over well before expiry.
    c.start();
    await Bun.sleep(300);
    expect(c.isLeader()).toBe(false);
    const releasedAt = Date.now();
    await alive.stop(true);
    await waitFor(() => c.isLeader(), "takeover after release", 4 * LEASE_MS);
    const releaseMs = Date.now() - releasedAt;
    process.stdout.write(`handover after a release: ${releaseMs} ms\n`);
    expect(releaseMs).toBeLessThan(LEASE_MS);
    expect(maxConcurrent).toBe(1);
  } finally {
    clearInterval(watch);
    await Promise.all([a.stop(false), b.stop(false), c.stop(true)]);
  }
});

test("racing candidates get 409 Conflict and re-read rather than both winning", async () => {
  const leaders = new Set<string>();
  const history: string[] = [];
  // A released lease: every candidate reads it and writes it in the same instant.
  api.create("Lease", { metadata: { name: "portico-leader-race", namespace: "portico-system" }, spec: { holderIdentity: "", leaseDurationSeconds: 1, renewTime: "2020-01-01T00:00:00.000000Z" } });
  const racers = ["p", "q", "r", "s"].map((id) =>
    createLeaderElector({
      client: createKubeClientFrom(resolveKubeConfig({ kubeconfig, context: null }), captureLogger()),
      config: { electionId: "portico-leader-race", electionNamespace: "portico-system" },
      log: captureLogger(),
      identity: id,
      timings: { ...TIMINGS, leaseDurationMs: 1000 },
      onLeader: (is) => (is ? leaders.add(id) : leaders.delete(id)),
    }),
  );
  const before = api.requests.length;
  try {
    racers.forEach((r) => r.start());
    await waitFor(() => leaders.size === 1, "one winner", 5000);
    await Bun.sleep(2000); // past the observed-expiry window of the losers
    expect(leaders.size).toBe(1);
    const conflicts = api.requests.slice(before).filter((r) => r.status === 409).length;
    expect(conflicts).toBeGreaterThanOrEqual(1);
  } finally {
    await Promise.all(racers.map((r) => r.stop(true)));
  }
});

test("election namespace: flag, then POD_NAMESPACE, then the service-account file, then default", () => {
  expect(electionNamespace({ electionNamespace: "flag" }, { POD_NAMESPACE: "pod" })).toBe("flag");
  expect(electionNamespace({ electionNamespace: null }, { POD_NAMESPACE: "pod" })).toBe("pod");
  expect(electionNamespace({ electionNamespace: null }, {}, "/nonexistent")).toBe("default");
});
