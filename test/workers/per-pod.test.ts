// What ingress-nginx counts per replica, through the real process with --workers 2: limit-rpm
// and limit-connections give a client the single-process number, however the kernel spreads
// its connections over the workers; `load-balance: ewma` scores are learnt once for the pod.
// ingress-nginx renders them as `limit_req zone=<ingress>_rpm burst=<rpm × multiplier> nodelay;`
// and `limit_conn <ingress>_conn <n>;` over zones declared with `limit_req_zone` /
// `limit_conn_zone` (rootfs/etc/nginx/template/nginx.tmpl, buildRateLimit and
// buildRateLimitZones in internal/ingress/controller/template/template.go). nginx keeps a zone
// in shared memory, so every nginx worker counts in the same one (ngx_http_limit_req_module:
// "the state is kept in a shared memory zone"); limit-req-status-code and
// limit-conn-status-code default to 503 (internal/ingress/controller/config/config.go).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { alive, startPortico, waitReady, type Portico } from "../e2e/harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "../e2e/objects.ts";
import { eventually } from "../wait.ts";

// ingress-nginx's ewma balancer keeps its scores in `lua_shared_dict balancer_ewma` (nginx.tmpl),
// one dictionary for all nginx workers (rootfs/etc/nginx/lua/balancer/ewma.lua reads and writes
// ngx.shared.balancer_ewma): an endpoint without a score is scored 0 and so is tried first;
// once one worker has its (slow) answer, no worker tries it again while the score is higher.

const P = "nginx.ingress.kubernetes.io/";
let dir: string;
let p: Portico;
/** A backend that holds every request until `open()`, counting the ones that reached it. */
let arrived = 0;
let gate: { promise: Promise<void>; open: () => void };
let server: ReturnType<typeof Bun.serve>;
/** Two pods of one Service on the same port: a fast one on 127.0.0.1, a slow one on 127.0.0.2. */
let fastPod: ReturnType<typeof Bun.serve>;
let slowPod: ReturnType<typeof Bun.serve>;
let slowHits = 0;

function newGate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

function workerPids(): number[] {
  const out = new Map<number, number>();
  for (const l of p.lines) {
    if (!l.includes("worker started")) continue;
    const rec = JSON.parse(l) as { worker: number; pid: number };
    out.set(rec.worker, rec.pid);
  }
  return [...out.values()];
}

/** Requests answered per worker, from the primary's /metrics (it sums the workers'). */
async function answeredPerWorker(): Promise<number[]> {
  const text = await (await fetch(`${p.admin}/metrics`)).text();
  const out = [0, 0];
  for (const line of text.split("\n")) {
    const m = /^portico_worker_requests_total\{worker="(\d+)"\} (\S+)$/.exec(line);
    if (m) out[Number(m[1])] = Number(m[2]);
  }
  return out;
}

/** One request on a fresh TCP connection (SO_REUSEPORT picks a worker for each). */
const fresh = (host: string, path = "/") =>
  fetch(`${p.http}${path}`, { headers: { host, connection: "close" }, keepalive: false }).then(
    async (r) => ({ status: r.status, body: await r.text() }),
    () => ({ status: 0, body: "" }),
  );

beforeAll(async () => {
  gate = newGate();
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      arrived++;
      if (new URL(req.url).pathname.startsWith("/held")) await gate.promise;
      return new Response("ok");
    },
  });
  fastPod = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("fast") });
  slowPod = Bun.serve({
    hostname: "127.0.0.2",
    port: fastPod.port as number,
    async fetch() {
      slowHits++;
      await Bun.sleep(1000); // the pod's latency, far above the fast pod's
      return new Response("slow");
    },
  });
  const twoPods = {
    ...slice("shop", "pods", [fastPod.port as number]),
    endpoints: ["127.0.0.1", "127.0.0.2"].map((a) => ({ addresses: [a], conditions: { ready: true } })),
  };
  dir = mkdtempSync(join(tmpdir(), "portico-worker-limits-"));
  writeFileSync(
    join(dir, "all.yaml"),
    yamlDocs([
      ingressClass(),
      service("shop", "web"),
      slice("shop", "web", [server.port as number]),
      // 1 r/m with the default multiplier 5: 6 at once, then one per 62.5 s.
      ingress("shop", "rated", [{ host: "rated.test", paths: [{ path: "/", service: "web" }] }], { annotations: { [`${P}limit-rpm`]: "1" } }),
      ingress("shop", "conns", [{ host: "conns.test", paths: [{ path: "/", service: "web" }] }], { annotations: { [`${P}limit-connections`]: "2" } }),
      service("shop", "pods"),
      twoPods,
      ingress("shop", "scored", [{ host: "ewma.test", paths: [{ path: "/", service: "pods" }] }], { annotations: { [`${P}load-balance`]: "ewma" } }),
    ]),
  );
  p = await startPortico(["--manifests", dir, "--workers", "2", "--access-log", "off"]);
});

afterAll(async () => {
  gate.open();
  const pids = workerPids();
  await p.stop("SIGKILL");
  for (const pid of pids) if (alive(pid)) process.kill(pid, "SIGKILL");
  await server.stop(true);
  await fastPod.stop(true);
  await slowPod.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

describe("--workers 2 counts per pod", () => {
  test("load-balance ewma: the slow pod is tried once for the pod, not once per worker", async () => {
    const before = await answeredPerWorker();
    const bodies: string[] = [];
    // One request at a time, each on a new connection, until each worker has answered 3
    // (a worker with scores of its own tries the unscored slow pod within its first 2).
    for (let i = 0; i < 60; i++) {
      bodies.push((await fresh("ewma.test")).body);
      const per = await answeredPerWorker();
      if (per.every((n, w) => n - before[w]! >= 3)) break;
    }
    const per = await answeredPerWorker();
    expect(per.every((n, w) => n - before[w]! >= 3)).toBe(true);
    expect(bodies.filter((b) => b !== "fast" && b !== "slow")).toEqual([]);
    expect(slowHits).toBe(1);
  });

  test("limit-rpm 1: 6 requests pass in all, with both workers answering more than 6 each", async () => {
    const statuses: number[] = [];
    // Until each worker has answered 7 or more (so counting apart would admit 12), at most 400.
    for (let round = 0; round < 40; round++) {
      statuses.push(...(await Promise.all(Array.from({ length: 10 }, () => fresh("rated.test")))).map((r) => r.status));
      const per = await answeredPerWorker();
      if (per.every((n) => n >= 7)) break;
    }
    const per = await answeredPerWorker();
    expect(per.every((n) => n >= 7)).toBe(true);
    expect(statuses.filter((s) => s === 200).length).toBe(6);
    expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
  });

  test("limit-connections 2: two requests in flight in all, with both workers refusing; a killed worker's slots come back", async () => {
    const pending: Promise<{ status: number }>[] = [];
    let refused = 0;
    const before = await answeredPerWorker();
    // One at a time, each on a new connection: it is either refused at once or held by the
    // backend. Until both workers have refused one (each at what it thinks is the limit).
    for (let i = 0; i < 60; i++) {
      const seen = arrived;
      let done = false;
      const r = fresh("conns.test", "/held").then((x) => ((done = true), x));
      await eventually(() => done || arrived > seen, 10_000);
      if (done) {
        expect((await r).status).toBe(503);
        refused++;
        const per = await answeredPerWorker();
        if (per.every((n, w) => n > before[w]!)) break;
      } else pending.push(r);
    }
    const per = await answeredPerWorker();
    expect(per.every((n, w) => n > before[w]!)).toBe(true);
    expect(refused).toBeGreaterThanOrEqual(2);
    expect(pending.length).toBe(2);

    // Both workers die holding them; their successors must not inherit two ghosts.
    const old = workerPids();
    for (const pid of old) process.kill(pid, "SIGKILL");
    await Promise.all(pending);
    await eventually(() => workerPids().filter((pid) => !old.includes(pid)).length === 2, 15_000);
    await waitReady(p);
    gate.open();
    gate = newGate();
    const seen = arrived;
    const a = fresh("conns.test", "/held");
    const b = fresh("conns.test", "/held");
    await eventually(() => arrived === seen + 2, 10_000);
    gate.open();
    expect([(await a).status, (await b).status]).toEqual([200, 200]);
  });
});
