// --workers 2 through the real process: both workers serve, a table change
// reaches every worker, a killed worker is restarted while traffic keeps flowing, /metrics
// sums the workers, SIGTERM drains them all, and a dead primary leaves no worker behind.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { alive, freshGet, startBackend, startPortico, type Backend, type Portico } from "../e2e/harness.ts";
import { ingress, ingressClass, service, slice, tlsSecret, yamlDocs } from "../e2e/objects.ts";
import { createCertificate } from "../tls/pki.ts";
import { eventually } from "../wait.ts";

let dir: string;
let web: Backend;
let api: Backend;
const started: Portico[] = [];

let cert: { certPem: string; keyPem: string } | null = null;

function writeManifests(withApi: boolean): void {
  writeFileSync(
    join(dir, "all.yaml"),
    yamlDocs([
      ingressClass(),
      service("shop", "web"),
      slice("shop", "web", [web.port]),
      service("shop", "api"),
      slice("shop", "api", [api.port]),
      ...(cert ? [tlsSecret("shop", "shop-tls", cert.certPem, cert.keyPem)] : []),
      ingress("shop", "main", [{ host: "shop.test", paths: [{ path: "/", service: "web" }] }], cert ? { tls: [{ hosts: ["shop.test"], secretName: "shop-tls" }] } : {}),
      ...(withApi ? [ingress("shop", "api", [{ host: "api.test", paths: [{ path: "/", service: "api" }] }])] : []),
    ]),
  );
}

async function portico(extra: string[] = []): Promise<Portico> {
  const p = await startPortico(["--manifests", dir, "--workers", "2", "--access-log", "off", ...extra]);
  started.push(p);
  return p;
}

/** `name{labels} value` samples of one metric family, summed per label text. */
function samples(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    const m = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m && m[1] === name) out.set(m[2] ?? "", (out.get(m[2] ?? "") ?? 0) + Number(m[3]));
  }
  return out;
}

const metrics = async (p: Portico) => (await fetch(`${p.admin}/metrics`)).text();
const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

/** The processes whose parent is `pid` now (Linux /proc/PID/stat, field 4). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid) out.push(Number(e));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** worker id → pid, from the primary's "worker started" lines (the latest per worker). */
function workerPids(p: Portico): Map<number, number> {
  const out = new Map<number, number>();
  for (const l of p.lines) {
    if (!l.includes("worker started")) continue;
    const rec = JSON.parse(l) as { worker: number; pid: number };
    out.set(rec.worker, rec.pid);
  }
  return out;
}

beforeAll(() => {
  web = startBackend("web");
  api = startBackend("api");
  dir = mkdtempSync(join(tmpdir(), "portico-workers-"));
  writeManifests(false);
});

afterAll(async () => {
  for (const p of started) {
    const pids = [...workerPids(p).values()];
    await p.stop("SIGKILL");
    for (const pid of pids) if (alive(pid)) process.kill(pid, "SIGKILL");
  }
  web.stop();
  api.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("--workers 2", () => {
  let p: Portico;
  beforeAll(async () => {
    p = await portico();
  });

  test("both workers serve, and /metrics sums them", async () => {
    const pids = workerPids(p);
    expect(pids.size).toBe(2);
    const results = await Promise.all(Array.from({ length: 40 }, () => freshGet(p, "shop.test", "/hello")));
    expect(results.every((r) => r.status === 200 && r.body === "web /hello")).toBe(true);
    const text = await metrics(p);
    const perWorker = samples(text, "portico_worker_requests_total");
    expect([...perWorker.keys()].sort()).toEqual(['{worker="0"}', '{worker="1"}']);
    for (const n of perWorker.values()) expect(n).toBeGreaterThan(0);
    expect(sum(perWorker)).toBe(40);
    // The per-Ingress counter is the sum of both workers' registries (the primary serves nothing).
    expect(sum(samples(text, "portico_requests_total"))).toBe(40);
    // Families only the primary sets appear once, not doubled.
    expect(samples(text, "portico_build_info").size).toBe(1);
    expect(sum(samples(text, "portico_build_info"))).toBe(1);
    expect(sum(samples(text, "portico_leader"))).toBe(0);
  });

  /** SHA-256 of the certificate served for SNI shop.test on a fresh TLS connection. */
  const fingerprint = () =>
    new Promise<string>((resolve, reject) => {
      const sock = connect({ host: "127.0.0.1", port: p.ports.https, servername: "shop.test", rejectUnauthorized: false }, () => {
        resolve(sock.getPeerCertificate().fingerprint256);
        sock.destroy();
      });
      sock.on("error", reject);
    });

  test("HTTPS is served by every worker with one and the same default certificate", async () => {
    const prints = new Set(await Promise.all(Array.from({ length: 12 }, fingerprint)));
    expect(prints.size).toBe(1);
    const before = sum(samples(await metrics(p), "portico_worker_requests_total"));
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${p.https}/tls`, { headers: { host: "shop.test", connection: "close" }, keepalive: false, tls: { rejectUnauthorized: false } });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("web /tls");
    }
    expect(sum(samples(await metrics(p), "portico_worker_requests_total"))).toBe(before + 6);
  });

  test("a table change reaches every worker", async () => {
    expect((await freshGet(p, "api.test")).status).toBe(404);
    writeManifests(true);
    // 30 fresh connections in a row, spread over both workers, must all see the new route.
    await eventually(async () => {
      const r = await Promise.all(Array.from({ length: 30 }, () => freshGet(p, "api.test", "/v")));
      return r.every((x) => x.status === 200 && x.body === "api /v");
    }, 8000);
  });

  test("a new certificate rotates the TLS listener of every worker", async () => {
    const defaultPrint = await fingerprint();
    const now = Date.now();
    cert = createCertificate({ subjectCN: "shop.test", sans: ["shop.test"], notBefore: new Date(now - 60_000), notAfter: new Date(now + 86_400_000) });
    writeManifests(true);
    await eventually(async () => {
      const prints = new Set(await Promise.all(Array.from({ length: 12 }, fingerprint)));
      return prints.size === 1 && !prints.has(defaultPrint);
    }, 8000);
  });

  test("a worker killed with SIGKILL is restarted and traffic keeps flowing", async () => {
    const before = workerPids(p);
    const victim = before.get(0)!;
    let ok = 0;
    let failed = 0;
    let stop = false;
    const loop = (async () => {
      while (!stop) {
        // api.test: shop.test has TLS by now, so plain HTTP to it is a 308 redirect.
        const r = await freshGet(p, "api.test", "/loop");
        if (r.status === 200) ok++;
        else failed++;
      }
    })();
    await eventually(() => ok >= 10, 10_000, "traffic flowing before the kill");
    process.kill(victim, "SIGKILL");
    await p.waitForLine(/"msg":"worker exited; restarting".*"worker":0|"worker":0.*"msg":"worker exited; restarting"/, 5000);
    await eventually(() => (workerPids(p).get(0) ?? victim) !== victim, 5000);
    const okAtRestart = ok;
    await eventually(() => ok >= okAtRestart + 20, 10_000, "traffic flowing after the restart");
    stop = true;
    await loop;
    console.error(`  SIGKILL of one worker: ${failed} failed of ${ok + failed} requests (no retries)`);
    expect(ok).toBeGreaterThan(20);
    expect(failed).toBeLessThanOrEqual(5);
    // Ready again once the restarted worker serves (it is not while it starts: plane.ts).
    await eventually(async () => (await fetch(`${p.admin}/readyz`)).status === 200, 10_000);
    // The new worker 0 serves (its fresh registry counts from zero), with the latest table.
    await eventually(async () => {
      await Promise.all(Array.from({ length: 10 }, () => freshGet(p, "api.test")));
      return (samples(await metrics(p), "portico_worker_requests_total").get('{worker="0"}') ?? 0) > 0;
    }, 5000);
    expect(alive(victim)).toBe(false);
  });

  test("after a worker restart, later changes (deltas for the old worker, built on the new one's whole table) reach both", async () => {
    // Follows the SIGKILL test above in this describe (same process): it must have restarted a worker.
    expect(p.lines.some((l) => l.includes("worker exited; restarting"))).toBe(true);
    const both = async (status: number) => {
      const r = await Promise.all(Array.from({ length: 30 }, () => freshGet(p, "api.test", "/v")));
      return r.every((x) => x.status === status);
    };
    writeManifests(false);
    await eventually(() => both(404), 8000);
    writeManifests(true);
    await eventually(() => both(200), 8000);
    // Both workers answered: each served some of the fresh connections since the restart.
    const perWorker = samples(await metrics(p), "portico_worker_requests_total");
    expect([...perWorker.values()].every((n) => n > 0)).toBe(true);
    expect(p.lines.some((l) => l.includes("asking for the whole table"))).toBe(false);
  });

  test("SIGTERM: readiness drops, in-flight requests finish, every worker and the primary exit 0", async () => {
    const q = await portico(["--shutdown-delay", "300ms", "--shutdown-grace-period", "5s"]);
    const pids = [...workerPids(q).values()];
    expect(pids).toHaveLength(2);
    const hits = api.hits;
    const inflight = fetch(`${q.http}/slow?ms=1000`, { headers: { host: "api.test" } });
    await eventually(() => api.hits > hits, 5_000, "the slow request at the backend");
    q.proc.kill("SIGTERM");
    await eventually(async () => (await fetch(`${q.admin}/readyz`)).status === 503, 5_000, "readiness dropped");
    const res = await inflight;
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("api /slow");
    expect(await q.proc.exited).toBe(0);
    await eventually(() => pids.every((pid) => !alive(pid)), 3000);
    expect(await freshGet(q, "shop.test")).toEqual({ status: 0, body: "" });
  });

  test("a traffic port held by another process: start-up fails with exit 1", async () => {
    const blocker = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    try {
      const q = await startPortico(["--manifests", dir, "--workers", "2", "--http-port", String(blocker.port)], { ready: false });
      started.push(q);
      expect(await q.proc.exited).toBe(1);
      expect(q.lines.some((l) => l.includes("start-up failed"))).toBe(true);
      // The workers are gone by the time the primary's exit status is known: none outlives it
      // to notice the closed channel ("primary gone").
      expect([...workerPids(q).values()].filter((pid) => alive(pid))).toEqual([]);
      expect(q.lines.filter((l) => l.includes("primary gone"))).toEqual([]);
    } finally {
      blocker.stop(true);
    }
  });

  test("a source that fails after the workers started: exit 1, and no worker outlives the primary", async () => {
    const q = await startPortico(["--manifests", join(dir, "no-such-folder"), "--workers", "2"], { ready: false });
    started.push(q);
    // Collect the primary's children from /proc while it runs (they may not live long enough
    // to log "worker started").
    const children = new Set<number>();
    // Sampled every 2 ms until the primary has exited (a fine step: a worker may live briefly).
    await eventually(() => {
      for (const pid of childrenOf(q.proc.pid)) children.add(pid);
      return q.proc.exitCode !== null;
    }, 20_000, "the primary's exit", 2);
    expect(await q.proc.exited).toBe(1);
    expect(children.size).toBe(2);
    await q.waitForLine(/start-up failed.*no such file or folder/);
    // Gone by the time the primary's exit status is known, not later when they notice the
    // closed channel ("primary gone").
    expect([...children].filter((pid) => alive(pid))).toEqual([]);
  });

  test("a primary killed with SIGKILL leaves no worker behind", async () => {
    const q = await portico();
    const pids = [...workerPids(q).values()];
    expect(pids).toHaveLength(2);
    q.proc.kill("SIGKILL");
    await q.proc.exited;
    await eventually(() => pids.every((pid) => !alive(pid)), 5000);
  });
});
