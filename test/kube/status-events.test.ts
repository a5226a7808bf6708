// Status writer, Event recorder, and the two working with leader election, against the fake.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { captureLogger, ingress } from "../fake-apiserver/fixtures.ts";
import { createKubeClientFrom, type KubeClient } from "../../src/kube/client.ts";
import { resolveKubeConfig } from "../../src/kube/kubeconfig.ts";
import { createStatusWriter, parseStatusAddresses } from "../../src/kube/status.ts";
import { createEventRecorder } from "../../src/kube/events.ts";
import { createLeaderElector } from "../../src/kube/leader.ts";
import { parseObject } from "../../src/model/kinds.ts";
import type { Ingress } from "../../src/model/schemas.ts";
import type { Diagnostic } from "../../src/model/diagnostic.ts";
import { eventually } from "../wait.ts";

let api: FakeApiServer;
let kubeconfig: string;
const newClient = (): KubeClient => createKubeClientFrom(resolveKubeConfig({ kubeconfig, context: null }), captureLogger());

beforeAll(async () => {
  api = await startFakeApiServer({ token: "t" });
  kubeconfig = `/tmp/portico-status-${process.pid}/config`;
  await Bun.write(kubeconfig, `clusters: [{ name: f, cluster: { server: "${api.url}" } }]\nusers: [{ name: u, user: { token: t } }]\ncontexts: [{ name: c, context: { cluster: f, user: u } }]\ncurrent-context: c\n`);
});
afterAll(() => api.stop());

/** The Ingresses of a namespace as the store would hold them. */
function ingresses(ns: string): Ingress[] {
  return api.list("Ingress").filter((o) => o.metadata.namespace === ns).map((o) => {
    const p = parseObject("Ingress", o);
    if (!p.ok) throw new Error(p.diagnostic.message);
    return p.object;
  });
}
const lb = (ns: string, name: string) => (api.get("Ingress", ns, name)?.status as { loadBalancer?: { ingress?: unknown } } | undefined)?.loadBalancer?.ingress;
const patches = (from: number) => api.requests.slice(from).filter((r) => r.method === "PATCH" && r.path.endsWith("/status")).length;

describe("status writer", () => {
  test("publish-status-address: writes served Ingresses, only when different; clears ours from unserved ones", async () => {
    api.create("Ingress", ingress("st", "served"));
    api.create("Ingress", { ...ingress("st", "unserved"), status: { loadBalancer: { ingress: [{ ip: "10.0.0.5" }, { ip: "192.0.2.9" }] } } });
    let leader = false;
    const w = createStatusWriter({ client: newClient(), config: { publishService: null, publishStatusAddress: "10.0.0.5, lb.example.test" }, log: captureLogger(), isLeader: () => leader });
    const served = [{ namespace: "st", name: "served" }];
    let from = api.requests.length;
    expect(await w.sync(served, ingresses("st"))).toEqual({ updated: 0, cleared: 0, unchanged: 0, failed: 0 });
    expect(api.requests.length).toBe(from); // not the leader: no call at all
    leader = true;
    expect(await w.sync(served, ingresses("st"))).toEqual({ updated: 1, cleared: 1, unchanged: 0, failed: 0 });
    expect(lb("st", "served")).toEqual([{ ip: "10.0.0.5" }, { hostname: "lb.example.test" }]);
    expect(lb("st", "unserved")).toEqual([{ ip: "192.0.2.9" }]); // someone else's address stays
    from = api.requests.length;
    expect(await w.sync(served, ingresses("st"))).toEqual({ updated: 0, cleared: 0, unchanged: 1, failed: 0 });
    expect(patches(from)).toBe(0);
    // No longer served: our address goes; the status subresource kept the spec untouched.
    const gen = api.get("Ingress", "st", "served")!.metadata.generation;
    expect(await w.sync([], ingresses("st"))).toMatchObject({ cleared: 1 });
    expect(lb("st", "served")).toBeUndefined();
    expect(api.get("Ingress", "st", "served")!.metadata.generation).toBe(gen);
  });

  test("publish-service: LoadBalancer ingress, else external IPs, else ClusterIP", async () => {
    api.create("Ingress", ingress("ps", "one"));
    api.create("Service", { metadata: { name: "portico", namespace: "sys" }, spec: { type: "LoadBalancer", clusterIP: "10.96.0.10", ports: [{ port: 80 }] }, status: { loadBalancer: { ingress: [{ ip: "203.0.113.7" }] } } });
    const w = createStatusWriter({ client: newClient(), config: { publishService: { namespace: "sys", name: "portico" }, publishStatusAddress: null }, log: captureLogger(), isLeader: () => true });
    await w.sync([{ namespace: "ps", name: "one" }], ingresses("ps"));
    expect(lb("ps", "one")).toEqual([{ ip: "203.0.113.7" }]);
    const svc = api.get("Service", "sys", "portico")!;
    api.update("Service", { ...svc, status: {} }); // main-resource PUT keeps status (subresource semantics)
    expect(await w.addresses()).toEqual([{ ip: "203.0.113.7" }]);
    api.delete("Service", "sys", "portico");
    api.create("Service", { metadata: { name: "portico", namespace: "sys" }, spec: { clusterIP: "10.96.0.10", ports: [{ port: 80 }] } });
    await w.sync([{ namespace: "ps", name: "one" }], ingresses("ps"));
    expect(lb("ps", "one")).toEqual([{ ip: "10.96.0.10" }]);
    expect(parseStatusAddresses("2001:db8::1,x.test")).toEqual([{ ip: "2001:db8::1" }, { hostname: "x.test" }]);
  });
});

describe("events", () => {
  const diag = (name: string, message = "service web not found"): Diagnostic => ({ kind: "Ingress", namespace: "ev", name, reason: "ServiceNotFound", message });

  test("one Event per problem, series count bumped while it persists, non-Ingress ignored, leader only", async () => {
    let now = 1_000_000_000_000;
    let leader = false;
    const rec = createEventRecorder({ client: newClient(), config: { controllerName: "portico.dev/ingress-controller" }, log: captureLogger(), isLeader: () => leader, instance: "pod-a", timings: { now: () => now, seriesIntervalMs: 60_000 } });
    rec.report([diag("web")]);
    await rec.flush();
    expect(api.list("Event")).toHaveLength(0);
    leader = true;
    for (let i = 0; i < 3; i++) rec.report([diag("web"), { ...diag("svc"), kind: "Service" }]);
    await rec.flush();
    const evs = api.list("Event");
    expect(evs).toHaveLength(1);
    expect(evs[0]).toMatchObject({ type: "Warning", reason: "ServiceNotFound", note: "service web not found", reportingController: "portico.dev/ingress-controller", reportingInstance: "pod-a", action: "Compile", regarding: { kind: "Ingress", namespace: "ev", name: "web" } });
    expect(rec.stats).toMatchObject({ created: 1, deduplicated: 2 });
    now += 61_000;
    rec.report([diag("web"), diag("web", "another problem")]);
    await rec.flush();
    const after = api.list("Event");
    expect(after).toHaveLength(2);
    expect(after.find((e) => e.note === "service web not found")).toMatchObject({ series: { count: 2 } });
    // The API server expired the Event: the next bump creates a new one.
    api.delete("Event", "ev", evs[0]!.metadata.name);
    now += 61_000;
    rec.report([diag("web")]);
    await rec.flush();
    expect(api.list("Event").filter((e) => e.note === "service web not found")).toHaveLength(1);
    expect(rec.stats.failed).toBe(0);
  });

  test("an object named with the API's 253 characters still gets its Events: the object part is cut, the unique suffix kept (names are DNS subdomains)", async () => {
    // 253 characters, as an Ingress may be named (a DNS subdomain); the cut lands after a '-',
    // which cannot end a label.
    const long = `${"a".repeat(62)}.${"b".repeat(62)}.${"c".repeat(62)}.${"d".repeat(49)}-${"e".repeat(14)}`;
    expect(long).toHaveLength(253);
    const now = 1_700_000_000_000;
    const rec = createEventRecorder({ client: newClient(), config: { controllerName: "p" }, log: captureLogger(), isLeader: () => true, instance: "x", timings: { now: () => now } });
    rec.report([
      { kind: "Ingress", namespace: "longname", name: long, reason: "ServiceNotFound", message: "service web not found" },
      { kind: "Ingress", namespace: "longname", name: long, reason: "InvalidAnnotation", message: "a second problem" },
    ]);
    await rec.flush();
    expect(rec.stats).toMatchObject({ created: 2, failed: 0 });
    const evs = api.list("Event").filter((e) => e.metadata.namespace === "longname");
    expect(evs.map((e) => (e.regarding as { name: string }).name)).toEqual([long, long]);
    const names = evs.map((e) => e.metadata.name).sort();
    // <object, cut>.<hex of the time in µs plus a sequence number>: unique per Event.
    const stamp = (now * 1000).toString(16);
    // 13 hex digits: 239 characters are left for the object part, whose last is the '-'.
    expect(stamp).toHaveLength(13);
    expect(long[238]).toBe("-");
    expect(names).toEqual([`${long.slice(0, 253 - stamp.length - 2)}.${stamp}`, `${long.slice(0, 253 - stamp.length - 2)}.${(now * 1000 + 1).toString(16)}`]);
    for (const n of names) expect(n.length).toBeLessThanOrEqual(253);
  });

  test("Gateway API problems become Events on the Gateway, HTTPRoute and GRPCRoute, under the Gateway controller's name, deduplicated like an Ingress's", async () => {
    const now = 3_000_000_000_000;
    const uids: Record<string, string> = { "HTTPRoute gw-ev/shop": "uid-http", "GRPCRoute gw-ev/shop": "uid-grpc", "Gateway gw-ev/edge": "uid-gw" };
    const rec = createEventRecorder({
      client: newClient(),
      config: { controllerName: "portico.dev/ingress-controller", gatewayControllerName: "portico.dev/gateway-controller" },
      log: captureLogger(),
      isLeader: () => true,
      instance: "pod-a",
      uidOf: (ns, name, kind) => uids[`${kind} ${ns}/${name}`],
      timings: { now: () => now, seriesIntervalMs: 60_000 },
    });
    const problems: Diagnostic[] = [
      { kind: "HTTPRoute", namespace: "gw-ev", name: "shop", reason: "RouteRefsNotResolved", message: "parent Gateway gw-ev/edge: BackendNotFound: Service gw-ev/gone not found" },
      // A GRPCRoute may share an HTTPRoute's name: its own Event, on its own kind.
      { kind: "GRPCRoute", namespace: "gw-ev", name: "shop", reason: "RouteNotAccepted", message: "parent Gateway gw-ev/edge: NotAllowedByListeners: no listener allows GRPCRoute" },
      { kind: "Gateway", namespace: "gw-ev", name: "edge", reason: "ListenerNotProgrammed", message: "listener https: InvalidCertificateRef: Secret gw-ev/missing not found" },
    ];
    for (let i = 0; i < 3; i++) rec.report(problems);
    await rec.flush();
    const evs = api.list("Event").filter((e) => e.metadata.namespace === "gw-ev");
    expect(evs).toHaveLength(3);
    const on = (kind: string) => evs.find((e) => (e.regarding as { kind: string }).kind === kind);
    const common = { type: "Warning", action: "Compile", reportingController: "portico.dev/gateway-controller", reportingInstance: "pod-a" };
    expect(on("HTTPRoute")).toMatchObject({ ...common, reason: "RouteRefsNotResolved", regarding: { apiVersion: "gateway.networking.k8s.io/v1", kind: "HTTPRoute", namespace: "gw-ev", name: "shop", uid: "uid-http" } });
    expect(on("GRPCRoute")).toMatchObject({ ...common, reason: "RouteNotAccepted", regarding: { apiVersion: "gateway.networking.k8s.io/v1", kind: "GRPCRoute", namespace: "gw-ev", name: "shop", uid: "uid-grpc" } });
    expect(on("Gateway")).toMatchObject({ ...common, reason: "ListenerNotProgrammed", regarding: { apiVersion: "gateway.networking.k8s.io/v1", kind: "Gateway", namespace: "gw-ev", name: "edge", uid: "uid-gw" } });
    expect(rec.stats).toMatchObject({ created: 3, deduplicated: 6, failed: 0 });
  });

  test("rate limited per minute", async () => {
    let now = 2_000_000_000_000;
    const rec = createEventRecorder({ client: newClient(), config: { controllerName: "p" }, log: captureLogger(), isLeader: () => true, instance: "x", timings: { now: () => now, maxPerMinute: 5 } });
    const before = api.list("Event").length;
    rec.report(Array.from({ length: 12 }, (_, i) => diag(`rl${i}`)));
    await rec.flush();
    expect(api.list("Event").length - before).toBe(5);
    expect(rec.stats.rateLimited).toBe(7);
    now += 60_000; // the bucket refills
    rec.report(Array.from({ length: 12 }, (_, i) => diag(`rl${i}`)));
    await rec.flush();
    expect(api.list("Event").length - before).toBe(10);
  });
});

test("two replicas: only the Lease holder writes status; after it dies the other takes over", async () => {
  api.create("Ingress", ingress("ha", "app"));
  const served = [{ namespace: "ha", name: "app" }];
  const replica = (id: string, address: string) => {
    const client = newClient();
    const elector = createLeaderElector({
      client,
      config: { electionId: "ha-lease", electionNamespace: "ha" },
      log: captureLogger(),
      identity: id,
      timings: { leaseDurationMs: 1000, renewIntervalMs: 200, renewDeadlineMs: 700, retryIntervalMs: 100 },
      onLeader: (is) => void (is && writer.sync(served, ingresses("ha"))), // re-sync on election
    });
    const writer = createStatusWriter({ client, config: { publishService: null, publishStatusAddress: address }, log: captureLogger(), isLeader: elector.isLeader });
    // Every replica compiles and calls sync on its own schedule, leader or not.
    const timer = setInterval(() => void writer.sync(served, ingresses("ha")), 50);
    return { elector, stop: async (release: boolean) => (clearInterval(timer), await elector.stop(release)) };
  };
  const a = replica("a", "10.0.0.1");
  const b = replica("b", "10.0.0.2");
  try {
    a.elector.start();
    await eventually(() => a.elector.isLeader(), 3_000, "a leads");
    b.elector.start();
    // While a renews its lease three times, b (syncing every 50 ms) writes nothing.
    const renewals = () => api.requests.filter((r) => r.method === "PUT" && r.status === 200 && r.path.endsWith("/leases/ha-lease")).length;
    const r0 = renewals();
    await eventually(() => renewals() >= r0 + 3, 10_000, "three renewals with b running");
    expect(lb("ha", "app")).toEqual([{ ip: "10.0.0.1" }]); // b never wrote
    expect(b.elector.isLeader()).toBe(false);
    await a.stop(false); // killed: no release
    await eventually(() => JSON.stringify(lb("ha", "app")) === JSON.stringify([{ ip: "10.0.0.2" }]), 10_000, "b's address");
    expect(b.elector.isLeader()).toBe(true);
  } finally {
    await a.stop(false);
    await b.stop(true);
  }
});

test("startKubeCluster: the elected replica writes status and Events from applied compile results", async () => {
  const { parseArgs } = await import("../../src/config/parse.ts");
  const outcome = parseArgs(["--kubeconfig", kubeconfig, "--publish-status-address", "198.51.100.1", "--election-id", "cluster-lease"], {});
  if (outcome.type !== "run") throw new Error(`config: ${JSON.stringify(outcome)}`);
  const { startKubeCluster } = await import("../../src/kube/cluster.ts");
  api.create("Ingress", ingress("cl", "shop"));
  const leaderChanges: boolean[] = [];
  const cluster = startKubeCluster({
    config: { ...outcome.config, electionNamespace: "cl" },
    log: captureLogger(),
    onLeader: (is) => void leaderChanges.push(is),
    leaderTimings: { leaseDurationMs: 1000, renewIntervalMs: 200, renewDeadlineMs: 700, retryIntervalMs: 100 },
  });
  try {
    const ings = new Map(ingresses("cl").map((i) => [`cl/${i.metadata.name}`, i]));
    // Applied before the election is won: written as soon as we lead.
    cluster.applied({ statuses: [{ namespace: "cl", name: "shop" }], diagnostics: [{ kind: "Ingress", namespace: "cl", name: "shop", reason: "ServiceNotFound", message: "service web not found" }] }, ings, new Map());
    await eventually(() => JSON.stringify(lb("cl", "shop")) === JSON.stringify([{ ip: "198.51.100.1" }]), 3_000, "status written");
    await cluster.events.flush();
    await eventually(() => api.list("Event").some((e) => (e.regarding as { name?: string }).name === "shop"), 3_000, "event written");
    const ev = api.list("Event").find((e) => (e.regarding as { name?: string }).name === "shop")!;
    expect((ev.regarding as { uid?: string }).uid).toBe(api.get("Ingress", "cl", "shop")!.metadata.uid as string);
    expect(leaderChanges).toEqual([true]);
  } finally {
    await cluster.source.stop();
    await cluster.stop();
  }
  expect(leaderChanges).toEqual([true, false]);
  expect((api.get("Lease", "cl", "cluster-lease")!.spec as { holderIdentity: string }).holderIdentity).toBe(""); // released
});

test("startKubeCluster with --update-status=false: the leader writes Events, never status", async () => {
  const { parseArgs } = await import("../../src/config/parse.ts");
  const outcome = parseArgs(["--kubeconfig", kubeconfig, "--publish-status-address", "198.51.100.2", "--election-id", "quiet-lease", "--update-status=false"], {});
  if (outcome.type !== "run") throw new Error(`config: ${JSON.stringify(outcome)}`);
  const { startKubeCluster } = await import("../../src/kube/cluster.ts");
  // ingress-nginx's address, as it wrote it: it must stay.
  api.create("Ingress", { ...ingress("quiet", "shop"), status: { loadBalancer: { ingress: [{ ip: "203.0.113.50" }] } } });
  const from = api.requests.length;
  const cluster = startKubeCluster({
    config: { ...outcome.config, electionNamespace: "quiet" },
    log: captureLogger(),
    leaderTimings: { leaseDurationMs: 1000, renewIntervalMs: 200, renewDeadlineMs: 700, retryIntervalMs: 100 },
  });
  try {
    const ings = new Map(ingresses("quiet").map((i) => [`quiet/${i.metadata.name}`, i]));
    cluster.applied({ statuses: [{ namespace: "quiet", name: "shop" }], diagnostics: [{ kind: "Ingress", namespace: "quiet", name: "shop", reason: "ServiceNotFound", message: "service web not found" }] }, ings, new Map());
    await eventually(() => cluster.elector.isLeader(), 3_000, "leader");
    await cluster.events.flush();
    // The Event is the proof that the leader acted on the applied result.
    await eventually(() => api.list("Event").some((e) => (e.regarding as { name?: string; namespace?: string }).namespace === "quiet"), 3_000, "event written");
    expect(patches(from)).toBe(0);
    expect(lb("quiet", "shop")).toEqual([{ ip: "203.0.113.50" }]);
  } finally {
    await cluster.source.stop();
    await cluster.stop();
  }
});

test("startKubeCluster: an HTTPRoute's diagnostic becomes an Event on that HTTPRoute, with its uid", async () => {
  const { parseArgs } = await import("../../src/config/parse.ts");
  const outcome = parseArgs(["--kubeconfig", kubeconfig, "--publish-status-address", "198.51.100.3", "--election-id", "gw-lease"], {});
  if (outcome.type !== "run") throw new Error(`config: ${JSON.stringify(outcome)}`);
  const { startKubeCluster } = await import("../../src/kube/cluster.ts");
  const cluster = startKubeCluster({
    config: { ...outcome.config, electionNamespace: "gwcl" },
    log: captureLogger(),
    leaderTimings: { leaseDurationMs: 1000, renewIntervalMs: 200, renewDeadlineMs: 700, retryIntervalMs: 100 },
  });
  try {
    const route = parseObject("HTTPRoute", { apiVersion: "gateway.networking.k8s.io/v1", kind: "HTTPRoute", metadata: { name: "shop", namespace: "gwcl", uid: "route-uid-1", generation: 1 }, spec: { parentRefs: [{ name: "edge" }] } });
    if (!route.ok) throw new Error(route.diagnostic.message);
    const diagnostic: Diagnostic = { kind: "HTTPRoute", namespace: "gwcl", name: "shop", reason: "RouteNotAccepted", message: "parent Gateway gwcl/edge: NoMatchingParent: no such Gateway" };
    const gateway = {
      result: { classes: new Map(), gateways: new Map(), routes: [], table: null, routeCount: 0, deps: { services: new Set<string>(), secrets: new Set<string>() } } as never,
      snapshot: { gatewayClasses: new Map(), gateways: new Map(), httpRoutes: new Map([["gwcl/shop", route.object]]), grpcRoutes: new Map() } as never,
    };
    cluster.applied({ statuses: [], diagnostics: [diagnostic] }, new Map(), new Map(), [], gateway);
    await eventually(() => cluster.elector.isLeader(), 3_000, "leader");
    await eventually(() => api.list("Event").some((e) => (e.regarding as { kind?: string; namespace?: string }).namespace === "gwcl"), 3_000, "event written");
    const ev = api.list("Event").find((e) => (e.regarding as { namespace?: string }).namespace === "gwcl")!;
    expect(ev).toMatchObject({ reason: "RouteNotAccepted", reportingController: outcome.config.gatewayControllerName, regarding: { apiVersion: "gateway.networking.k8s.io/v1", kind: "HTTPRoute", name: "shop", uid: "route-uid-1" } });
  } finally {
    await cluster.source.stop();
    await cluster.stop();
  }
});
