// List+watch against the fake API server over real sockets.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { captureLogger, FAST_WATCH, OBJECTS, RecordingSink } from "../fake-apiserver/fixtures.ts";
import { createKubeClient, type KubeClient } from "../../src/kube/client.ts";
import { collectionPath, createKubeSource, type KubeSource, type WatchTimings } from "../../src/kube/watch.ts";
import { stallTimeoutFromEnv } from "../../src/kube/cluster.ts";
import { DEFAULT_WATCH_TIMINGS } from "../../src/kube/watch-parts.ts";
import { KINDS, KIND_API, LISTED_KINDS, UNWATCHED_SECRET_TYPES, type Kind } from "../../src/model/kinds.ts";
import type { Diagnostic } from "../../src/model/diagnostic.ts";
import { eventually } from "../wait.ts";

let api: FakeApiServer;
let client: KubeClient;
const log = captureLogger();
let source: KubeSource | null = null;

beforeAll(async () => {
  api = await startFakeApiServer({ token: "secret-token", bookmarkIntervalMs: 100 });
  const dir = `${process.env.TMPDIR ?? "/tmp"}/portico-watch-${process.pid}`;
  await Bun.write(`${dir}/config`, kubeconfig(api.url, "secret-token"));
  client = createKubeClient({ kubeconfig: `${dir}/config`, context: null }, log);
});
afterAll(() => api.stop());
afterEach(async () => {
  await source?.stop();
  source = null;
  api.faults.down = false;
  api.faults.goneMode = "status";
  api.faults.failBodyStalls = false;
  api.faults.failMatch = null;
  api.faults.failNext = 0;
});

function kubeconfig(server: string, token: string): string {
  return `apiVersion: v1
kind: Config
clusters: [{ name: fake, cluster: { server: "${server}" } }]
users: [{ name: u, user: { token: "${token}" } }]
contexts: [{ name: c, context: { cluster: fake, user: u } }]
current-context: c
`;
}

function start(opts: { pageSize?: number; kinds?: readonly Kind[]; diags?: Diagnostic[]; current?: Map<string, readonly Diagnostic[]>; hooks?: Record<string, (k: Kind, ...a: string[]) => void>; timings?: Partial<WatchTimings> } = {}) {
  const sink = new RecordingSink();
  source = createKubeSource({
    client,
    config: { watchNamespace: null },
    log,
    kinds: opts.kinds ?? KINDS,
    timings: { ...FAST_WATCH, pageSize: opts.pageSize ?? 500, ...opts.timings },
    onDiagnostics: (owner, ds) => {
      opts.diags?.push(...ds);
      if (ds.length === 0) opts.current?.delete(owner);
      else opts.current?.set(owner, ds);
    },
    hooks: opts.hooks ?? {},
  });
  void source.start(sink);
  return { sink, source };
}

describe("list + watch", () => {
  test("first list is paginated, then create/update/delete of each kind reaches the sink", async () => {
    for (let i = 0; i < 7; i++) api.create("Service", OBJECTS.Service("pages", `s${i}`));
    const listCalls = () => api.requests.filter((r) => !r.watch && r.path === "/api/v1/services").length;
    const before = listCalls();
    const { sink } = start({ pageSize: 3 });
    await eventually(() => sink.syncedKinds.length === KINDS.length, 3_000, "all kinds synced");
    expect(listCalls() - before).toBe(3); // 7 objects, pages of 3
    expect(sink.replaces.find((r) => r.kind === "Service")!.names.filter((n) => /^s\d$/.test(n))).toHaveLength(7);
    // ConfigMaps are watched one by one, only those an Ingress names (test/proxy/auth-proxy-set-headers.test.ts).
    for (const kind of LISTED_KINDS) {
      api.create(kind, OBJECTS[kind]("apps", `k-${kind.toLowerCase()}`));
      await eventually(() => sink.has(kind, KIND_API[kind].namespaced ? "apps" : "", `k-${kind.toLowerCase()}`), 2000, `${kind} added`);
      const obj = api.get(kind, "apps", `k-${kind.toLowerCase()}`)!;
      obj.metadata.labels = { touched: "yes" };
      api.update(kind, obj);
      await eventually(() => sink.get(kind, KIND_API[kind].namespaced ? "apps" : "", `k-${kind.toLowerCase()}`)?.metadata.labels?.touched === "yes", 2000, `${kind} modified`);
      api.delete(kind, "apps", `k-${kind.toLowerCase()}`);
      await eventually(() => !sink.has(kind, KIND_API[kind].namespaced ? "apps" : "", `k-${kind.toLowerCase()}`), 2000, `${kind} deleted`);
    }
  });

  test("start-up lists each kind exactly once: one first page, its continue pages, then one watch", async () => {
    // Objects in a namespace of their own so earlier tests' objects do not change the counts.
    const n = 8;
    for (const kind of KINDS) for (let i = 0; i < n; i++) api.create(kind, OBJECTS[kind]("once", `once-${kind.toLowerCase()}-${i}`));
    const from = api.requests.length;
    const { sink, source } = start({ pageSize: 3 });
    await eventually(() => sink.syncedKinds.length === KINDS.length, 3_000, "all kinds synced");
    await eventually(() => LISTED_KINDS.every((k) => source.state(k).watches === 1), 3_000, "one watch per kind");
    const reqs = api.requests.slice(from);
    // No Ingress names a ConfigMap: none is listed or watched, the kind is synced all the same.
    expect(reqs.filter((r) => r.path.endsWith("/configmaps"))).toEqual([]);
    expect(sink.syncedKinds).toContain("ConfigMap");
    for (const kind of LISTED_KINDS) {
      const path = collectionPath(kind, null);
      const lists = reqs.filter((r) => r.path === path && !r.watch);
      const total = api.list(kind).filter((o) => kind !== "Secret" || !UNWATCHED_SECRET_TYPES.includes(o.type as string)).length;
      const firstPages = lists.filter((r) => !new URLSearchParams(r.query).has("continue"));
      expect({ kind, firstPages: firstPages.length, pages: lists.length }).toEqual({ kind, firstPages: 1, pages: Math.ceil(total / 3) });
      expect(reqs.filter((r) => r.path === path && r.watch).length).toBe(1);
      expect(source.state(kind).lists).toBe(1);
      expect(sink.replaces.filter((r) => r.kind === kind)).toHaveLength(1);
    }
    expect(reqs.every((r) => r.method === "GET")).toBe(true);
  });

  test("500s and 403s on the list are retried with back-off until it succeeds", async () => {
    let errors = 0;
    api.faults.failNext = 3;
    api.faults.failMatch = /^GET \/apis\/networking\.k8s\.io\/v1\/ingressclasses\?/;
    const { sink, source } = start({ kinds: ["IngressClass"], hooks: { onError: () => void errors++ } });
    await eventually(() => sink.syncedKinds.includes("IngressClass"), 3_000, "synced after failures");
    expect(errors).toBe(3);
    expect(source.state("IngressClass").lists).toBe(1);
    api.faults.failMatch = null;
    await source.stop();
    api.faults.forbidden = /ingressclasses/;
    const before = log.lines.length;
    const second = start({ kinds: ["IngressClass"] });
    await eventually(() => second.source.state("IngressClass").errors >= 2, 3_000, "forbidden retried");
    api.faults.forbidden = null;
    await eventually(() => second.sink.syncedKinds.includes("IngressClass"), 3_000, "synced after 403s");
    const line = log.lines.slice(before).find((l) => l.level === "error")!;
    expect(line.msg).toContain("403");
    expect(line.msg).toContain("/apis/networking.k8s.io/v1/ingressclasses");
  });

  test("Secrets of every type but tokens, registry credentials and Helm releases are listed and watched", async () => {
    const { sink } = start({ kinds: ["Secret"] });
    api.create("Secret", { metadata: { name: "opaque", namespace: "s" }, type: "Opaque", data: {} });
    api.create("Secret", { metadata: { name: "untyped", namespace: "s" }, data: {} });
    for (const [i, type] of UNWATCHED_SECRET_TYPES.entries()) api.create("Secret", { metadata: { name: `skip-${i}`, namespace: "s" }, type, data: {} });
    api.create("Secret", OBJECTS.Secret("s", "tls"));
    await eventually(() => sink.has("Secret", "s", "tls") && sink.has("Secret", "s", "opaque") && sink.has("Secret", "s", "untyped"), 3_000, "tls, opaque and untyped secrets");
    for (let i = 0; i < UNWATCHED_SECRET_TYPES.length; i++) expect(sink.has("Secret", "s", `skip-${i}`)).toBe(false);
    const q = api.requests.filter((r) => r.path === "/api/v1/secrets").map((r) => new URLSearchParams(r.query).get("fieldSelector"));
    expect(q.length).toBeGreaterThan(0);
    expect(q.every((f) => f === UNWATCHED_SECRET_TYPES.map((t) => `type!=${t}`).join(","))).toBe(true);
  });

  test("a watch dropped mid-stream resumes from its resourceVersion: no relist, no lost or duplicated event", async () => {
    const { sink, source } = start({ kinds: ["Ingress"] });
    await eventually(() => sink.syncedKinds.includes("Ingress"), 3_000, "synced");
    for (let round = 0; round < 5; round++) {
      api.create("Ingress", OBJECTS.Ingress("drop", `a${round}`));
      api.dropWatches(); // the TCP connection dies
      api.create("Ingress", OBJECTS.Ingress("drop", `b${round}`)); // happens while disconnected
    }
    await eventually(() => sink.has("Ingress", "drop", "b4"), 4000, "last object");
    const added = sink.events.filter((e) => e.type === "ADDED" && e.object.metadata.namespace === "drop").map((e) => e.object.metadata.name);
    expect(added.sort()).toEqual(["a0", "a1", "a2", "a3", "a4", "b0", "b1", "b2", "b3", "b4"]);
    expect(source.state("Ingress").lists).toBe(1);
    expect(source.state("Ingress").errors).toBeGreaterThanOrEqual(1);
  });

  test("a clean end of stream (timeoutSeconds) resumes without listing", async () => {
    let restarts = 0;
    const { sink, source } = start({ kinds: ["IngressClass"], hooks: { onRestart: () => void restarts++ } });
    await eventually(() => sink.syncedKinds.includes("IngressClass"), 3_000, "synced");
    for (let i = 0; i < 3; i++) {
      api.endWatches();
      api.create("IngressClass", OBJECTS.IngressClass("", `clean${i}`));
    }
    await eventually(() => sink.has("IngressClass", "", "clean2"), 3_000, "after clean ends");
    expect(restarts).toBeGreaterThanOrEqual(1);
    expect(source.state("IngressClass").lists).toBe(1);
    expect(source.state("IngressClass").errors).toBe(0);
  });

  test("an invalid object's diagnostic goes when it is fixed, deleted, or missing at a relist", async () => {
    const current = new Map<string, readonly Diagnostic[]>();
    const weird = { rules: [{ http: { paths: [{ path: "/", pathType: "Weird", backend: {} }] } }] };
    const { sink } = start({ kinds: ["Ingress"], current });
    await eventually(() => sink.syncedKinds.includes("Ingress"), 3_000, "synced");
    const owners = () => [...current.keys()].sort();

    api.create("Ingress", { ...OBJECTS.Ingress("dx", "fixme"), spec: weird });
    await eventually(() => owners().includes("Ingress/dx/fixme"), 3_000, "invalid reported");
    api.update("Ingress", OBJECTS.Ingress("dx", "fixme"));
    await eventually(() => !current.has("Ingress/dx/fixme") && sink.has("Ingress", "dx", "fixme"), 3_000, "fixed: cleared");

    const cur = api.get("Ingress", "dx", "fixme")!;
    api.update("Ingress", { ...cur, spec: weird });
    await eventually(() => current.has("Ingress/dx/fixme"), 3_000, "invalid again");
    api.delete("Ingress", "dx", "fixme");
    await eventually(() => !current.has("Ingress/dx/fixme"), 3_000, "deleted: cleared");

    // Deleted while the watch is down: only the relist (410 Gone) can tell.
    api.create("Ingress", { ...OBJECTS.Ingress("dx", "vanishes"), spec: weird });
    api.create("Ingress", { ...OBJECTS.Ingress("dx", "stays-bad"), spec: weird });
    await eventually(() => current.has("Ingress/dx/vanishes") && current.has("Ingress/dx/stays-bad"), 3_000, "both reported");
    api.faults.down = "503";
    api.dropWatches();
    await eventually(() => api.requests.at(-1)?.status === 503, 3_000, "a failing retry");
    api.delete("Ingress", "dx", "vanishes");
    api.compact();
    api.faults.down = false;
    await eventually(() => !current.has("Ingress/dx/vanishes"), 4000, "gone at the relist: cleared");
    expect(owners()).toEqual(["Ingress/dx/stays-bad"]);
    api.delete("Ingress", "dx", "stays-bad");
  });

  for (const mode of ["status", "event"] as const) {
    test(`410 Gone (${mode}) relists and notices an object deleted while disconnected`, async () => {
      api.create("Service", OBJECTS.Service("gone", "stays"));
      api.create("Service", OBJECTS.Service("gone", "vanishes"));
      let relists = 0;
      const { sink, source } = start({ kinds: ["Service"], hooks: { onRelist: () => void relists++ } });
      await eventually(() => sink.has("Service", "gone", "vanishes"), 3_000, "listed");
      api.faults.goneMode = mode;
      api.faults.down = "503";
      api.dropWatches();
      await eventually(() => api.requests.at(-1)?.status === 503, 3_000, "a failing retry");
      api.delete("Service", "gone", "vanishes");
      api.create("Service", OBJECTS.Service("gone", "newcomer"));
      api.compact(); // the client's resourceVersion is now too old
      api.faults.down = false;
      await eventually(() => !sink.has("Service", "gone", "vanishes") && sink.has("Service", "gone", "newcomer"), 4000, "relist converged");
      expect(relists).toBe(1);
      expect(source.state("Service").lists).toBe(2);
      expect(sink.has("Service", "gone", "stays")).toBe(true);
      api.delete("Service", "gone", "stays");
      api.delete("Service", "gone", "newcomer");
    });
  }

  test("bookmarks advance the resourceVersion", async () => {
    const { sink, source } = start({ kinds: ["Ingress"] });
    await eventually(() => sink.syncedKinds.includes("Ingress"), 3_000, "synced");
    const rv0 = Number(source.state("Ingress").resourceVersion);
    api.create("Service", OBJECTS.Service("bm", "other")); // bumps the global version only
    await eventually(() => Number(source.state("Ingress").resourceVersion) > rv0, 2000, "bookmark");
    api.delete("Service", "bm", "other");
  });

  test("garbage lines and invalid objects are logged, counted and skipped; the rest is applied", async () => {
    const diags: Diagnostic[] = [];
    let malformed = 0;
    const { sink, source } = start({ kinds: ["Ingress"], diags, hooks: { onMalformed: () => void malformed++ } });
    // The lines go to open watches only: the watch starts after the list that syncs the kind.
    await eventually(() => sink.syncedKinds.includes("Ingress") && api.openWatches("Ingress") === 1, 3_000, "synced and watching");
    api.injectLine("this is not json", "Ingress");
    api.injectLine('{"type":"ADDED"}', "Ingress");
    // At the resume point, so only the object is wrong (an older version is skipped whole: below).
    api.injectLine(JSON.stringify({ type: "ADDED", object: { metadata: { name: "bad", namespace: "g", resourceVersion: source.state("Ingress").resourceVersion }, spec: { rules: [{ http: { paths: [{ path: "/", pathType: "Weird", backend: {} }] } }] } } }), "Ingress");
    api.create("Ingress", OBJECTS.Ingress("g", "good"));
    await eventually(() => sink.has("Ingress", "g", "good"), 3_000, "good object applied");
    expect(sink.has("Ingress", "g", "bad")).toBe(false);
    expect(malformed).toBe(2);
    expect(source.state("Ingress").invalid).toBe(1);
    expect(source.state("Ingress").errors).toBe(0);
    expect(diags.map((d) => [d.name, d.reason])).toEqual([["bad", "InvalidObject"]]);
    expect(log.text()).toContain("malformed watch line skipped");
    expect(log.text()).toContain('"name":"bad"');
    // An update that turns a served object invalid keeps the last valid version; its deletion
    // (still invalid) removes it.
    const cur = api.get("Ingress", "g", "good")!;
    api.update("Ingress", { ...cur, spec: { rules: [{ http: { paths: [{ path: "/", pathType: "Weird", backend: {} }] } }] } });
    await eventually(() => source.state("Ingress").invalid === 2, 3_000, "invalid update skipped");
    expect(sink.has("Ingress", "g", "good")).toBe(true);
    api.delete("Ingress", "g", "good");
    await eventually(() => !sink.has("Ingress", "g", "good"), 3_000, "invalid deletion applied");
  });
  // A line the stream should never have carried: the resume point must stay where the server's
  // own events left it (watch-parts.ts resumeAfter). Each line is followed by a wait for its
  // effect, whichever it is: the point moving (as before) or the line counted as malformed.
  async function injectAndSettle(source: KubeSource, line: object): Promise<void> {
    const st = () => source.state("Ingress");
    const [rv, malformed] = [st().resourceVersion, st().malformed];
    api.injectLine(JSON.stringify(line), "Ingress");
    await eventually(() => st().resourceVersion !== rv || st().malformed > malformed, 3_000, "the line read");
  }

  test("a watch line with an older resourceVersion is skipped and never moves the resume point back", async () => {
    // History to replay: a watch resumed from an old version would deliver these again.
    api.create("Ingress", OBJECTS.Ingress("rewind", "prior"));
    api.delete("Ingress", "rewind", "prior");
    const { sink, source } = start({ kinds: ["Ingress"] });
    await eventually(() => sink.syncedKinds.includes("Ingress") && api.openWatches("Ingress") === 1, 3_000, "synced and watching");
    const rv0 = source.state("Ingress").resourceVersion!;
    const stale = OBJECTS.Ingress("rewind", "stale") as { metadata: Record<string, unknown> };
    await injectAndSettle(source, { type: "BOOKMARK", object: { kind: "Ingress", apiVersion: "networking.k8s.io/v1", metadata: { resourceVersion: "1" } } });
    expect(source.state("Ingress").resourceVersion).toBe(rv0);
    await injectAndSettle(source, { type: "MODIFIED", object: { ...stale, metadata: { ...stale.metadata, resourceVersion: "1" } } });
    expect(source.state("Ingress").resourceVersion).toBe(rv0);
    expect(sink.has("Ingress", "rewind", "stale")).toBe(false);
    expect(source.state("Ingress").malformed).toBe(2);
    expect(log.text()).toContain(`resourceVersion 1 is older than ${rv0}`);
    // Resumed from where the server's events left it: nothing of the past comes again.
    const seen = sink.events.length;
    api.dropWatches();
    api.create("Ingress", OBJECTS.Ingress("rewind", "after"));
    await eventually(() => sink.has("Ingress", "rewind", "after"), 4_000, "the Ingress created after the drop");
    expect(sink.events.slice(seen).map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(["ADDED after"]);
    const resumed = api.requests.filter((r) => r.watch && r.path === "/apis/networking.k8s.io/v1/ingresses").at(-1)!;
    expect(new URLSearchParams(resumed.query).get("resourceVersion")).toBe(rv0);
    expect(source.state("Ingress").lists).toBe(1);
    api.delete("Ingress", "rewind", "after");
  });

  test("a resourceVersion the API server would refuse is never taken: the watch resumes after a drop", async () => {
    const { sink, source } = start({ kinds: ["Ingress"] });
    await eventually(() => sink.syncedKinds.includes("Ingress") && api.openWatches("Ingress") === 1, 3_000, "synced and watching");
    const rv0 = source.state("Ingress").resourceVersion!;
    await injectAndSettle(source, { type: "BOOKMARK", object: { metadata: { resourceVersion: "not-a-version" } } });
    await injectAndSettle(source, { type: "ADDED", object: { metadata: { name: "junk", namespace: "refuse", resourceVersion: "18446744073709551616" } } });
    await injectAndSettle(source, { type: "ADDED", object: { metadata: { namespace: "refuse", resourceVersion: "abc" } } });
    expect(source.state("Ingress").resourceVersion).toBe(rv0);
    expect(source.state("Ingress").malformed).toBe(3);
    // The API server answers 400 to a watch from a version it cannot parse: had the loop taken
    // one, no later change would ever arrive.
    const from = api.requests.length;
    api.dropWatches();
    api.create("Ingress", OBJECTS.Ingress("refuse", "after"));
    await eventually(() => sink.has("Ingress", "refuse", "after"), 4_000, "the Ingress created after the drop");
    expect(api.requests.slice(from).filter((r) => r.status === 400)).toEqual([]);
    expect(source.state("Ingress").lists).toBe(1);
    api.delete("Ingress", "refuse", "after");
  });

  // The stall timeout is 20 bookmark intervals of this server (100 ms), and the watches'
  // own timeoutSeconds is 5 min: only the stall watchdog can end a silent watch within the wait.
  const STALL = { stallTimeoutMs: 2000, watchTimeoutSeconds: () => 300 } as const;

  test("a watch that goes silent (no event, no bookmark) is restarted from its resourceVersion and logged; quiet watches that get bookmarks are left alone", async () => {
    const { sink, source } = start({ kinds: ["Ingress", "Service"], timings: STALL });
    await eventually(() => sink.syncedKinds.length === 2 && api.openWatches("Ingress") === 1 && api.openWatches("Service") === 1, 3_000, "both kinds watching");
    const before = log.lines.length;
    api.silenceWatches("Ingress");
    api.create("Ingress", OBJECTS.Ingress("stall", "during"));
    await eventually(() => sink.has("Ingress", "stall", "during"), 15_000, "the Ingress created while the watch was silent");
    api.create("Ingress", OBJECTS.Ingress("stall", "after"));
    await eventually(() => sink.has("Ingress", "stall", "after"), 3_000, "an Ingress created after the restart");
    const stalls = log.lines.slice(before).filter((l) => l.msg.startsWith("watch stalled"));
    expect(stalls.map((l) => l.fields?.kind)).toEqual(["Ingress"]);
    expect(source.state("Ingress").lists).toBe(1); // resumed from its resourceVersion, not relisted
    expect(source.state("Ingress").watches).toBe(2);
    expect(source.state("Service").watches).toBe(1); // bookmarks kept the idle Service watch
    api.delete("Ingress", "stall", "during");
    api.delete("Ingress", "stall", "after");
  });

  test("a silent watch whose resourceVersion is gone by the restart relists (410)", async () => {
    api.create("Ingress", OBJECTS.Ingress("stall410", "vanishes"));
    let relists = 0;
    const { sink, source } = start({ kinds: ["Ingress"], timings: STALL, hooks: { onRelist: () => void relists++ } });
    await eventually(() => sink.has("Ingress", "stall410", "vanishes") && api.openWatches("Ingress") === 1, 3_000, "listed and watching");
    api.silenceWatches("Ingress");
    api.delete("Ingress", "stall410", "vanishes");
    api.create("Ingress", OBJECTS.Ingress("stall410", "newcomer"));
    api.compact();
    await eventually(() => !sink.has("Ingress", "stall410", "vanishes") && sink.has("Ingress", "stall410", "newcomer"), 15_000, "relisted after the stall");
    expect(relists).toBe(1);
    expect(source.state("Ingress").lists).toBe(2);
    expect(log.lines.some((l) => l.msg.startsWith("watch stalled") && l.fields?.kind === "Ingress")).toBe(true);
    api.delete("Ingress", "stall410", "newcomer");
  });
  test("a watch answered with an error whose Status body stops half-way is given up at the request deadline, logged and retried", async () => {
    const { sink, source } = start({ kinds: ["Ingress"], timings: { watchTimeoutSeconds: () => 300, requestTimeoutMs: 1000 } });
    await eventually(() => sink.syncedKinds.includes("Ingress") && api.openWatches("Ingress") === 1, 3_000, "synced and watching");
    const before = log.lines.length;
    api.faults.failMatch = /^GET \/apis\/networking\.k8s\.io\/v1\/ingresses\?.*watch=1/;
    api.faults.failBodyStalls = true;
    api.faults.failNext = 1;
    api.dropWatches();
    api.create("Ingress", OBJECTS.Ingress("halfbody", "after"));
    await eventually(() => sink.has("Ingress", "halfbody", "after"), 15_000, "the Ingress, once the stuck error answer was given up");
    expect(api.faults.failNext).toBe(0);
    expect(source.state("Ingress").lists).toBe(1);
    const failed = log.lines.slice(before).filter((l) => l.msg === "list/watch failed, retrying" && l.fields?.kind === "Ingress");
    expect(failed.some((l) => String(l.fields?.err).includes("answered 500 to GET /apis/networking.k8s.io/v1/ingresses?watch=1"))).toBe(true);
    api.delete("Ingress", "halfbody", "after");
  });
});

describe("stall timeout", () => {
  test("defaults to three of kube-apiserver's one-minute bookmark intervals; PORTICO_WATCH_STALL_TIMEOUT changes it, unreadable values are logged and ignored", () => {
    expect(DEFAULT_WATCH_TIMINGS.stallTimeoutMs).toBe(180_000);
    const before = log.lines.length;
    expect(stallTimeoutFromEnv({}, log)).toBeNull();
    expect(stallTimeoutFromEnv({ PORTICO_WATCH_STALL_TIMEOUT: "2s" }, log)).toBe(2000);
    expect(stallTimeoutFromEnv({ PORTICO_WATCH_STALL_TIMEOUT: "90" }, log)).toBe(90_000);
    expect(stallTimeoutFromEnv({ PORTICO_WATCH_STALL_TIMEOUT: "soon" }, log)).toBeNull();
    expect(stallTimeoutFromEnv({ PORTICO_WATCH_STALL_TIMEOUT: "10ms" }, log)).toBeNull();
    const warned = log.lines.slice(before).filter((l) => l.level === "warn").map((l) => l.fields?.value);
    expect(warned).toEqual(["soon", "10ms"]);
  });
});
