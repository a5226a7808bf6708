// Two (then three) electors against one fake API server: one leader at a time, handover
// within the lease duration after the leader dies, immediate handover after a release.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { captureLogger } from "../fake-apiserver/fixtures.ts";
import { createKubeClientFrom } from "../../src/kube/client.ts";
import { resolveKubeConfig } from "../../src/kube/kubeconfig.ts";
import { createLeaderElector, electionNamespace, type LeaderElector } from "../../src/kube/leader.ts";
import { eventually } from "../wait.ts";

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
    await eventually(() => leaders.size === 1, 3_000, "a leader");
    await Bun.sleep(1200); // several renewals
    expect(leaders.size).toBe(1);
    const first = [...leaders][0]!;
    expect(api.get("Lease", "portico-system", "portico-leader")?.spec).toMatchObject({ holderIdentity: first, leaseDurationSeconds: 1 });

    // Kill the leader: it stops renewing and does not release.
    const [dead, alive] = first === "a" ? [a, b] : [b, a];
    const killedAt = Date.now();
    await dead.stop(false);
    leaders.delete(dead.identity); // a dead process no longer acts
    await eventually(() => alive.isLeader(), 4 * LEASE_MS, "handover");
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
    await eventually(() => c.isLeader(), 4 * LEASE_MS, "takeover after release");
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
    await eventually(() => leaders.size === 1, 5000, "one winner");
    await Bun.sleep(2000); // past the observed-expiry window of the losers
    expect(leaders.size).toBe(1);
    const conflicts = api.requests.slice(before).filter((r) => r.status === 409).length;
    expect(conflicts).toBeGreaterThanOrEqual(1);
  } finally {
    await Promise.all(racers.map((r) => r.stop(true)));
  }
});

test("API server down: a candidate backs off, logs the first failure and a summary (not every round), then the recovery", async () => {
  const log = captureLogger();
  const leaders = new Set<string>();
  const e = createLeaderElector({
    client: createKubeClientFrom(resolveKubeConfig({ kubeconfig, context: null }), captureLogger()),
    config: { electionId: "portico-leader-down", electionNamespace: "portico-system" },
    log,
    identity: "lonely",
    // Without back-off a 50 ms retry makes ~30 rounds in 1.5 s; doubling to 400 ms makes ~7.
    timings: { ...TIMINGS, retryIntervalMs: 50, backoffMaxMs: 400, summaryIntervalMs: 60_000 },
    onLeader: (is) => (is ? leaders.add("lonely") : leaders.delete("lonely")),
  });
  const rounds = () => api.requests.filter((r) => r.path.includes("/leases/portico-leader-down") && r.method === "GET").length;
  api.faults.down = "503";
  try {
    e.start();
    await Bun.sleep(1500);
    const failedRounds = rounds();
    expect(failedRounds).toBeGreaterThanOrEqual(3);
    expect(failedRounds).toBeLessThanOrEqual(12);
    const warns = log.lines.filter((l) => l.level === "warn");
    expect(warns.map((l) => l.msg)).toEqual(["leader election failing; retrying with back-off"]);
    expect(String(warns[0]!.fields?.err)).toContain("503");
    expect(log.lines.filter((l) => l.msg === "leader election round failed" && l.level === "debug").length).toBe(failedRounds - 1);
    // Back up: it recovers, says so once with the count, and becomes leader.
    api.faults.down = false;
    await eventually(() => leaders.has("lonely"), 3000, "leader after recovery");
    const recovered = log.lines.filter((l) => l.msg === "leader election recovered");
    expect(recovered).toHaveLength(1);
    expect(recovered[0]!.fields?.failedRounds).toBeGreaterThanOrEqual(failedRounds);
  } finally {
    api.faults.down = false;
    await e.stop(true);
  }
});

test("a failure that lasts logs one summary per interval; a new cause is logged at once", async () => {
  const log = captureLogger();
  let now = 0;
  const e = createLeaderElector({
    client: createKubeClientFrom(resolveKubeConfig({ kubeconfig, context: null }), captureLogger()),
    config: { electionId: "portico-leader-summary", electionNamespace: "portico-system" },
    log,
    identity: "summary",
    // The clock moves 40 s per round: with a 60 s summary interval every second round logs.
    timings: { ...TIMINGS, retryIntervalMs: 10, backoffMaxMs: 20, summaryIntervalMs: 60_000, now: () => (now += 20_000) },
    onLeader: () => {},
  });
  api.faults.down = "503";
  try {
    e.start();
    await eventually(() => log.lines.filter((l) => l.msg === "leader election still failing").length >= 2, 3000, "two summaries");
    const summary = log.lines.find((l) => l.msg === "leader election still failing")!;
    expect(summary.fields).toMatchObject({ lease: "portico-system/portico-leader-summary" });
    expect(summary.fields?.failedRounds).toBeGreaterThan(1);
    const before = log.lines.filter((l) => l.level === "warn").length;
    api.faults.down = "reset"; // another cause: said at once, not at the next summary
    await eventually(() => log.lines.filter((l) => l.level === "warn").length > before, 3000, "new cause logged");
    expect(String(log.lines.filter((l) => l.level === "warn").at(-1)!.fields?.err)).toContain("cannot reach the Kubernetes API server");
  } finally {
    api.faults.down = false;
    await e.stop(true);
  }
});

test("election namespace: flag, then POD_NAMESPACE, then the service-account file, then default", () => {
  expect(electionNamespace({ electionNamespace: "flag" }, { POD_NAMESPACE: "pod" })).toBe("flag");
  expect(electionNamespace({ electionNamespace: null }, { POD_NAMESPACE: "pod" })).toBe("pod");
  expect(electionNamespace({ electionNamespace: null }, {}, "/nonexistent")).toBe("default");
});
