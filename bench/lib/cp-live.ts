// Live control-plane figures against the fake API server: start-to-ready, RSS, and
// change-to-served latency (edit one Ingress → first request answered by the new route)
// while wrk loads the proxy at a modest, bounded rate.
import type { Subprocess } from "bun";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BUN_HEADER_FLAG } from "../../src/config/header-buffers.ts";
import { startFakeApiServer, type FakeApiServer } from "../../test/fake-apiserver.ts";
import { hostOf, httpRouteOf, ingressOf, rng, routeHostOf, type Cluster } from "./cp-gen.ts";
import type { Tools } from "./install.ts";
import { freePorts } from "./net.ts";
import { cpuTicks, peakRssMiB, rssMiB } from "./procfs.ts";
import { logTail, start, stop } from "./procs.ts";
import { median } from "./report.ts";
import { runWrk } from "./wrk.ts";

export interface LiveResult {
  readonly readyMs: number;
  /** CPU seconds Portico used from spawn to ready (what the start costs Portico itself). */
  readonly readyCpuS: number;
  /** Requests Portico made to the fake API server before ready (lists, pages, lease). */
  readonly readyRequests: number;
  /** Time for the benchmark itself to page through every list once (limit=500): the fake's floor. */
  readonly listFloorMs: number;
  readonly rssMiB: number;
  readonly peakRssMiB: number;
  readonly edits: number;
  readonly editFailures: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** With HTTPRoutes: ready → every HTTPRoute carries Portico's status (the leader's first status sync). */
  readonly statusMs: number;
  /** With HTTPRoutes: every other edit is an HTTPRoute's, measured apart (NaN without). */
  readonly routeEdits: number;
  readonly routeP50Ms: number;
  readonly routeP99Ms: number;
  readonly routeMaxMs: number;
  readonly loadRps: number;
  readonly loadP99Ms: number;
  readonly loadErrors: number;
}

const TOKEN = "bench-token";

function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] as number;
}

function writeKubeconfig(dir: string, server: string): string {
  // client-node refuses http:// unless skip-TLS-verify is set; the fake speaks http.
  const kc = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "fake", cluster: { server, "insecure-skip-tls-verify": true } }],
    users: [{ name: "bench", user: { token: TOKEN } }],
    contexts: [{ name: "fake", context: { cluster: "fake", user: "bench", namespace: "default" } }],
    "current-context": "fake",
  };
  const file = join(dir, "kubeconfig");
  writeFileSync(file, JSON.stringify(kc));
  return file;
}

async function get(url: string, host: string): Promise<number> {
  try {
    const r = await fetch(url, { headers: { host }, redirect: "manual", signal: AbortSignal.timeout(2000) });
    await r.arrayBuffer();
    return r.status;
  } catch {
    return 0;
  }
}

const LISTS = [
  "/apis/networking.k8s.io/v1/ingressclasses",
  "/apis/networking.k8s.io/v1/ingresses",
  "/api/v1/services",
  "/apis/discovery.k8s.io/v1/endpointslices",
  "/api/v1/secrets?fieldSelector=type%3Dkubernetes.io%2Ftls",
];

/**
 * Pages through every list once, sequentially, as a client with limit=500 would: the fake API
 * server's own floor under Portico's start-to-ready (also used by startup-probe.ts).
 */
const GATEWAY_LISTS = [
  "/apis/gateway.networking.k8s.io/v1/gatewayclasses",
  "/apis/gateway.networking.k8s.io/v1/gateways",
  "/apis/gateway.networking.k8s.io/v1/httproutes",
  "/apis/gateway.networking.k8s.io/v1beta1/referencegrants",
  "/api/v1/namespaces",
];

export async function listEverything(server: string, token = TOKEN, gateway = false): Promise<{ ms: number; items: number }> {
  const t0 = performance.now();
  let items = 0;
  for (const path of gateway ? [...LISTS, ...GATEWAY_LISTS] : LISTS) {
    let cont = "";
    for (let page = 0; page < 1000; page++) {
      const u = new URL(server + path);
      u.searchParams.set("limit", "500");
      if (cont) u.searchParams.set("continue", cont);
      const r = await fetch(u, { headers: { authorization: `Bearer ${token}` } });
      const body = (await r.json()) as { metadata?: { continue?: string }; items?: unknown[] };
      items += body.items?.length ?? 0;
      cont = body.metadata?.continue ?? "";
      if (!cont) break;
    }
  }
  return { ms: performance.now() - t0, items };
}

export interface LiveOptions {
  readonly root: string;
  readonly dir: string;
  readonly tools: Tools;
  readonly edits: number;
  /** wrk connections for background load; each waits `loadDelayMs` between requests. */
  readonly loadConnections: number;
  readonly loadDelayMs: number;
  readonly log: (m: string) => void;
  /** Portico's --workers (default 1: the proxy and the compiler share one event loop). */
  readonly workers?: number;
  /** Pause between one edit being served and the next edit (0: back to back). */
  readonly editGapMs?: number;
  /** Write a CPU profile of the Portico process (markdown, Bun's --cpu-prof-md) into this directory. */
  readonly profileDir?: string;
}

/** `bun [profile flags] src/main.ts` and the flags every run shares. */
function porticoCommand(o: LiveOptions): string[] {
  const bunFlags = o.profileDir ? ["--cpu-prof-md", `--cpu-prof-dir=${o.profileDir}`] : [];
  // A profile is written at exit: drain at once so stop() does not have to SIGKILL.
  const drain = o.profileDir ? ["--shutdown-delay", "0s", "--shutdown-grace-period", "1s"] : [];
  return [process.execPath, BUN_HEADER_FLAG, ...bunFlags, join(o.root, "src", "main.ts"), ...drain, "--workers", String(o.workers ?? 1)];
}

export async function runLive(c: Cluster, tlsCount: number, o: LiveOptions): Promise<LiveResult> {
  mkdirSync(o.dir, { recursive: true });
  // Plain HTTP to a host listed in spec.tls is redirected (308): probe and edit the others.
  const plainCount = c.hosts.length - tlsCount;
  if (plainCount < 2) throw new Error("need at least 2 Ingresses without TLS");
  const plain = (k: number) => tlsCount + (k % plainCount);
  const api: FakeApiServer = await startFakeApiServer({ token: TOKEN, bookmarkIntervalMs: 10_000 });
  let proc: Subprocess | null = null;
  try {
    for (const { kind, object } of c.objects) api.create(kind, object);
    const kubeconfig = writeKubeconfig(o.dir, api.url);
    const listFloorMs = (await listEverything(api.url, TOKEN, c.routeHosts.length > 0)).ms;
    // Only Portico's own requests count below (the floor run above made its own).
    const floorRequests = api.requests.length;
    const [http, https, admin] = freePorts(3) as [number, number, number];
    const log = join(o.dir, "portico.log");
    const t0 = performance.now();
    proc = start(
      [
        ...porticoCommand(o),
        "--kubeconfig", kubeconfig,
        "--bind", "127.0.0.1",
        "--http-port", String(http), "--https-port", String(https), "--admin-port", String(admin),
        "--access-log", "off", "--log-level", "warn",
      ],
      { cpus: null, cwd: o.root, log, out: join(o.dir, "portico.out") },
      o.tools.taskset,
    );
    const p = proc;
    let readyMs = Number.NaN;
    for (;;) {
      if (p.exitCode !== null) throw new Error(`portico exited ${p.exitCode}: ${await logTail(log)} ${await logTail(join(o.dir, "portico.out"))}`);
      if (performance.now() - t0 > 60_000) throw new Error("portico not ready after 60 s");
      if ((await get(`http://127.0.0.1:${admin}/readyz`, "admin")) === 200) {
        readyMs = performance.now() - t0;
        break;
      }
      await Bun.sleep(5);
    }
    let readyTicks = 0;
    for (const t of cpuTicks(p.pid).values()) readyTicks += t;
    const readyRequests = api.requests.length - floorRequests;
    o.log(`ready in ${readyMs.toFixed(0)} ms (${(readyTicks / 100).toFixed(2)} s CPU, ${readyRequests} API requests)`);
    const base = `http://127.0.0.1:${http}`;
    let first = 0;
    // Readiness may precede the listener by a moment in some builds: allow 2 s before failing.
    for (let k = 0; k < 200 && first !== 200; k++) {
      first = await get(`${base}/api`, hostOf(plain(0)));
      if (first !== 200) await Bun.sleep(10);
    }
    if (first !== 200) {
      throw new Error(`routed request after ready answered ${first}, expected 200\n${await logTail(log)}\n${await logTail(join(o.dir, "portico.out"))}`);
    }
    // With HTTPRoutes the leader first writes every route's status (one PATCH each, and one
    // watch event back each): edits are timed after that, as in a cluster that has settled.
    let statusMs = Number.NaN;
    if (c.routeHosts.length > 0) {
      const ours = (o: { status?: { parents?: { controllerName?: string }[] } }) => (o.status?.parents ?? []).some((x) => x.controllerName === "portico.dev/gateway-controller");
      for (;;) {
        if (p.exitCode !== null) throw new Error(`portico exited ${p.exitCode}: ${await logTail(log)}`);
        if (performance.now() - t0 > 120_000) throw new Error("HTTPRoute statuses not written after 120 s");
        if ((api.list("HTTPRoute") as { status?: { parents?: { controllerName?: string }[] } }[]).every(ours)) break;
        await Bun.sleep(250);
      }
      statusMs = performance.now() - t0 - readyMs;
      o.log(`every HTTPRoute status written ${statusMs.toFixed(0)} ms after ready`);
    }
    await Bun.sleep(1000);
    const rss = rssMiB(p.pid);

    // Background load: wrk with a Lua delay() so each connection sends at a bounded pace.
    const script = join(o.dir, "pace.lua");
    writeFileSync(script, `function delay()\n  return ${Math.max(0, Math.floor(o.loadDelayMs))}\nend\n`);
    const loadHost = hostOf(plain(1));
    const loadSeconds = Math.min(150, 10 + Math.ceil(o.edits * (0.6 + (o.editGapMs ?? 0) / 1000)));
    const endLoad = new AbortController();
    const load = runWrk({
      url: `${base}/api/load`, connections: o.loadConnections, threads: 1, seconds: loadSeconds, host: loadHost,
      cpus: null, wrk: o.tools.wrk, taskset: o.tools.taskset, script, signal: endLoad.signal,
    });
    await Bun.sleep(500);

    const r = rng(7);
    const lat: number[] = [];
    const routeLat: number[] = [];
    const routes = c.routeHosts.length;
    let failures = 0;
    const deadline = performance.now() + (loadSeconds - 2) * 1000;
    for (let k = 1; k <= o.edits && performance.now() < deadline; k++) {
      // With HTTPRoutes, every other edit replaces an HTTPRoute (a new Exact rule) instead.
      const onRoute = routes > 0 && k % 2 === 0;
      const i = onRoute ? Math.floor(r() * routes) : plain(Math.floor(r() * plainCount));
      const path = `/edit-${k}`;
      const t = performance.now();
      const next = (onRoute ? httpRouteOf(i, path) : ingressOf(i, i < tlsCount, path)) as { metadata: Record<string, unknown> };
      delete next.metadata.resourceVersion; // an unconditional replace, like `kubectl replace --force`-less edits
      api.update(onRoute ? "HTTPRoute" : "Ingress", next);
      let ok = false;
      while (performance.now() - t < 5000) {
        if ((await get(`${base}${path}`, onRoute ? routeHostOf(i) : hostOf(i))) === 200) {
          ok = true;
          break;
        }
        await Bun.sleep(1);
      }
      if (ok) (onRoute ? routeLat : lat).push(performance.now() - t);
      else failures++;
      if (o.editGapMs) await Bun.sleep(o.editGapMs);
    }
    endLoad.abort();
    const loadResult = await load;
    return {
      readyMs,
      readyCpuS: readyTicks / 100,
      readyRequests,
      listFloorMs,
      rssMiB: rss,
      peakRssMiB: peakRssMiB(p.pid),
      edits: lat.length + routeLat.length + failures,
      statusMs,
      routeEdits: routeLat.length,
      routeP50Ms: median(routeLat),
      routeP99Ms: quantile(routeLat, 0.99),
      routeMaxMs: routeLat.length ? Math.max(...routeLat) : Number.NaN,
      editFailures: failures,
      p50Ms: median(lat),
      p99Ms: quantile(lat, 0.99),
      maxMs: lat.length ? Math.max(...lat) : Number.NaN,
      loadRps: loadResult.rps,
      loadP99Ms: loadResult.p99,
      loadErrors: loadResult.errors,
    };
  } finally {
    if (proc) await stop(proc);
    await api.stop();
  }
}

/** Start-to-ready from a --manifests file holding the same cluster (no API server involved). */
export async function runManifestsStart(manifests: string, o: LiveOptions): Promise<{ readyMs: number; cpuS: number; rssMiB: number; peakRssMiB: number }> {
  mkdirSync(o.dir, { recursive: true });
  const [http, https, admin] = freePorts(3) as [number, number, number];
  const log = join(o.dir, "portico-files.log");
  const t0 = performance.now();
  const p = start(
    [
      ...porticoCommand({ ...o, profileDir: undefined }), "--manifests", manifests, "--bind", "127.0.0.1",
      "--http-port", String(http), "--https-port", String(https), "--admin-port", String(admin),
      "--access-log", "off", "--log-level", "warn",
    ],
    { cpus: null, cwd: o.root, log, out: join(o.dir, "portico-files.out") },
    o.tools.taskset,
  );
  try {
    for (;;) {
      if (p.exitCode !== null) throw new Error(`portico exited ${p.exitCode}: ${await logTail(log)}`);
      if (performance.now() - t0 > 60_000) throw new Error("portico not ready after 60 s");
      if ((await get(`http://127.0.0.1:${admin}/readyz`, "admin")) === 200) break;
      await Bun.sleep(5);
    }
    const readyMs = performance.now() - t0;
    let ticks = 0;
    for (const t of cpuTicks(p.pid).values()) ticks += t;
    await Bun.sleep(1000);
    return { readyMs, cpuS: ticks / 100, rssMiB: rssMiB(p.pid), peakRssMiB: peakRssMiB(p.pid) };
  } finally {
    await stop(p);
  }
}
