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

/** Successful writes of a Lease (acquisitions, renewals and releases), counted by the API server. */
function leaseWrites(name: string): number {
  return api.requests.filter((r) => r.method === "PUT" && r.status === 200 && r.path.endsWith(`/leases/${name}`)).length;
}

interface LeaseSpec {
  holderIdentity: string;
  renewTime: string;
  acquireTime: string;
  leaseTransitions: number;
}
const leaseSpec = (name: string) => api.get("Lease", "portico-system", name)!.spec as LeaseSpec;

function elector(id: string, leaders: Set<string>, history: string[], now: () => number): LeaderElector {
  const client = createKubeClientFrom(resolveKubeConfig({ kubeconfig, context: null }), captureLogger());
  return createLeaderElector({
    client,
    config: { electionId: "portico-leader", electionNamespace: "portico-system" },
    log: captureLogger(),
    identity: id,
    timings: { ...TIMINGS, now },
    onLeader: (is) => {
      if (is) leaders.add(id);
      else leaders.delete(id);
      history.push(`${id}:${is}`);
    },
  });
}

test("exactly one leader; killing it hands over once the lease expires; a release hands over before it would", async () => {
  const leaders = new Set<string>();
  const history: string[] = [];
  let maxConcurrent = 0;
  const watch = setInterval(() => (maxConcurrent = Math.max(maxConcurrent, leaders.size)), 5);
  // The electors' clock, moved by the test only: a lease expires when the test says so, so
  // "not before expiry" and "released, not expired" are a sequence of steps, not a race with
  // the machine's speed. (Renewals, retries and their pacing still run on real timers.)
  let clock = Date.parse("2026-01-01T00:00:00Z");
  const now = () => clock;
  const a = elector("a", leaders, history, now);
  const b = elector("b", leaders, history, now);
  const c = elector("c", leaders, history, now);
  const leaseReads = () => api.requests.filter((r) => r.method === "GET" && r.path.endsWith("/leases/portico-leader")).length;
  try {
    a.start();
    b.start();
    await eventually(() => leaders.size === 1, 3_000, "a leader");
    const w0 = leaseWrites("portico-leader");
    await eventually(() => leaseWrites("portico-leader") >= w0 + 5, 10_000, "five renewals");
    expect(leaders.size).toBe(1);
    const first = [...leaders][0]!;
    expect(api.get("Lease", "portico-system", "portico-leader")?.spec).toMatchObject({ holderIdentity: first, leaseDurationSeconds: 1 });

    // Kill the leader: it stops renewing and does not release.
    const [dead, alive] = first === "a" ? [a, b] : [b, a];
    await dead.stop(false);
    leaders.delete(dead.identity); // a dead process no longer acts
    // While the clock stands still the dead holder's lease has not expired: the candidate
    // reads it round after round and leaves it.
    const r0 = leaseReads();
    await eventually(() => leaseReads() >= r0 + 3, 10_000, "three rounds of the candidate");
    expect(alive.isLeader()).toBe(false);
    expect(leaseSpec("portico-leader").holderIdentity).toBe(dead.identity);
    // The lease duration passes: the next round takes it over.
    clock += LEASE_MS;
    await eventually(() => alive.isLeader(), 10_000, "handover");
    const taken = leaseSpec("portico-leader");
    expect(taken.holderIdentity).toBe(alive.identity);
    expect(taken.leaseTransitions).toBe(1);

    // A graceful stop releases: the waiting candidate takes over well before expiry.
    c.start();
    // While the holder renews twice (c retries twice as often), c stays a candidate.
    const w1 = leaseWrites("portico-leader");
    await eventually(() => leaseWrites("portico-leader") >= w1 + 2, 10_000, "two renewals with c running");
    expect(c.isLeader()).toBe(false);
    expect(history.filter((h) => h.startsWith("c:"))).toEqual([]);
    await alive.stop(true);
    // The release writes an empty holder; c takes that at once. The clock has not moved since
    // the holder's last renewal, so no lease expired: only the release lets c in.
    expect(leaseSpec("portico-leader").holderIdentity).toBe("");
    await eventually(() => c.isLeader(), 10_000, "takeover after release");
    expect(leaseSpec("portico-leader").holderIdentity).toBe("c");
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
    // Ten renewals (2 s at 200 ms) carry the winner past the losers' observed-expiry window
    // (1 s): a loser that misread the lease would have taken it by then.
    const w0 = leaseWrites("portico-leader-race");
    await eventually(() => leaseWrites("portico-leader-race") >= w0 + 10, 20_000, "ten renewals");
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
    // A 50 ms retry doubling to 400 ms.
    timings: { ...TIMINGS, retryIntervalMs: 50, backoffMaxMs: 400, summaryIntervalMs: 60_000 },
    onLeader: (is) => (is ? leaders.add("lonely") : leaders.delete("lonely")),
  });
  const rounds = () => api.requests.filter((r) => r.path.includes("/leases/portico-leader-down") && r.method === "GET").length;
  api.faults.down = "503";
  try {
    e.start();
    // The delays between rounds are backoffDelay's (kube/backoff.ts, its unit test); here: the
    // logging over several failed rounds.
    // Waited on the log lines themselves: a GET the server has counted may not be logged yet.
    const quietRounds = () => log.lines.filter((l) => l.msg === "leader election round failed" && l.level === "debug").length;
    await eventually(() => quietRounds() >= 3, 10_000, "three failed rounds after the first");
    const failedRounds = quietRounds() + 1;
    const warns = log.lines.filter((l) => l.level === "warn");
    expect(warns.map((l) => l.msg)).toEqual(["leader election failing; retrying with back-off"]);
    expect(String(warns[0]!.fields?.err)).toContain("503");
    // The first failed round is the one warning; every later one only a debug line.
    expect(rounds()).toBeGreaterThanOrEqual(failedRounds);
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
