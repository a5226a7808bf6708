// --workers 2 with Ingresses whose only path cannot be served: use-regex with a path RE2
// refuses (a lookahead, a backreference, `{2,1}`), a rewrite-target for a path that does not
// compile, and outside regex mode a path that is not a literal path. Such a host is still a
// host, as in ingress-nginx, whose controller.go createServers gives every rule's host a server
// block with a "/" location to the default backend: its requests answer 404 (no default
// backend here) and never reach the hostless rule. Every worker must be able to take the table
// that holds it, at start-up and after a restart, and /readyz must say whether every worker
// serves.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { alive, freshGet, startBackend, startPortico, type Backend, type Portico } from "../e2e/harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "../e2e/objects.ts";
import { eventually } from "../wait.ts";

const N = "nginx.ingress.kubernetes.io/";
/** host, path, annotations: each host's only path is refused. */
const REFUSED: [string, string, Record<string, string>][] = [
  ["look.test", "/(?=x)", { [`${N}use-regex`]: "true" }],
  ["back.test", "/(a)\\1", { [`${N}use-regex`]: "true" }],
  ["range.test", "/a{2,1}", { [`${N}use-regex`]: "true" }],
  ["rewrite.test", "/[", { [`${N}rewrite-target`]: "/$1" }],
  // Not in regex mode: a path that is no literal path (a query) is refused the same way.
  ["www.a.test", "/a?b", {}],
];

let web: Backend;
let api: Backend;
const dirs: string[] = [];
const started: Portico[] = [];

function manifests(dir: string, refused: boolean): void {
  writeFileSync(
    join(dir, "all.yaml"),
    yamlDocs([
      ingressClass(),
      service("shop", "web"),
      slice("shop", "web", [web.port]),
      service("shop", "api"),
      slice("shop", "api", [api.port]),
      ingress("shop", "main", [{ host: "shop.test", paths: [{ path: "/", service: "web" }] }]),
      // The rule without a host: what a host with no entry of its own would reach.
      ingress("shop", "catch-all", [{ paths: [{ path: "/", service: "api" }] }]),
      ...(refused
        ? REFUSED.map(([host, path, annotations], i) => ingress("tenant", `typo-${i}`, [{ host, paths: [{ path, type: "ImplementationSpecific", service: "web" }] }], { annotations }))
        : []),
    ]),
  );
}

async function portico(refused: boolean): Promise<Portico> {
  const dir = mkdtempSync(join(tmpdir(), "portico-refused-"));
  dirs.push(dir);
  manifests(dir, refused);
  const p = await startPortico(["--manifests", dir, "--workers", "2", "--access-log", "off"], { ready: false });
  started.push(p);
  return p;
}

/** Every one of `n` fresh connections answers shop.test from web and each refused host with 404. */
async function routesServed(p: Portico, n = 12): Promise<boolean> {
  const shop = await Promise.all(Array.from({ length: n }, () => freshGet(p, "shop.test", "/x")));
  const refused = await Promise.all(REFUSED.flatMap(([host]) => Array.from({ length: n / 3 }, () => freshGet(p, host, "/xa"))));
  return shop.every((r) => r.status === 200 && r.body === "web /x") && refused.every((r) => r.status === 404);
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

/** Requests each worker answered, from the summed /metrics. */
async function perWorker(p: Portico): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const line of (await (await fetch(`${p.admin}/metrics`)).text()).split("\n")) {
    const m = /^portico_worker_requests_total\{worker="(\d+)"\} (\S+)$/.exec(line);
    if (m) out.set(m[1] as string, Number(m[2]));
  }
  return out;
}

const readyz = async (p: Portico) => {
  try {
    const r = await fetch(`${p.admin}/readyz`);
    return { status: r.status, body: await r.text() };
  } catch {
    return { status: 0, body: "" };
  }
};

beforeAll(() => {
  web = startBackend("web");
  api = startBackend("api");
});

afterAll(async () => {
  for (const p of started) {
    const pids = [...workerPids(p).values()];
    await p.stop("SIGKILL");
    for (const pid of pids) if (alive(pid)) process.kill(pid, "SIGKILL");
  }
  web.stop();
  api.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("--workers 2, hosts whose only path is refused", () => {
  test("present at start-up: every worker listens and serves the other hosts; those hosts answer 404", async () => {
    const p = await portico(true);
    await eventually(async () => (await readyz(p)).status === 200, 20_000);
    await p.waitForLine(/every worker is serving/, 10_000);
    expect(await routesServed(p)).toBe(true);
    // Both workers answered some of the fresh connections.
    await eventually(async () => {
      await routesServed(p);
      const served = await perWorker(p);
      return served.size === 2 && [...served.values()].every((n) => n > 0);
    }, 10_000);
    // The hostless rule still answers every other host.
    expect(await freshGet(p, "other.test", "/y")).toEqual({ status: 200, body: "api /y" });
    // Each refused path is a diagnostic naming its Ingress.
    for (let i = 0; i < REFUSED.length; i++) expect(p.lines.some((l) => l.includes(`typo-${i}`) && /InvalidPath|InvalidAnnotation/.test(l))).toBe(true);
  });

  test("added live, then a worker killed: /readyz says not ready until the restarted worker serves the table, which it does", async () => {
    const p = await portico(false);
    await eventually(async () => (await readyz(p)).status === 200, 20_000);
    expect((await freshGet(p, "look.test", "/xa")).body).toBe("api /xa");
    manifests(dirs[dirs.length - 1] as string, true);
    await eventually(() => routesServed(p), 10_000);

    // Watch /readyz from before the kill until the restarted worker has said it listens.
    const seen: { status: number; body: string }[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        seen.push(await readyz(p));
        await Bun.sleep(5); // sampling pace of the watcher, not a wait
      }
    })();
    const victim = workerPids(p).get(0) as number;
    const listening = p.lines.filter((l) => l.includes('"msg":"listening"')).length;
    process.kill(victim, "SIGKILL");
    await eventually(() => (workerPids(p).get(0) ?? victim) !== victim, 10_000);
    // The restarted worker decodes the whole table, listens, and readiness comes back.
    await eventually(() => p.lines.filter((l) => l.includes('"msg":"listening"')).length > listening, 15_000);
    await eventually(async () => (await readyz(p)).status === 200, 10_000);
    watching = false;
    await watcher;
    // Not ready while worker 0 was gone or starting, named as such; ready again after.
    const down = seen.filter((r) => r.status === 503);
    expect(down.length).toBeGreaterThan(0);
    expect(down.every((r) => r.body === "not ready: workers not serving the current route table: 0")).toBe(true);
    expect(p.lines.some((l) => l.includes("is unreadable") || l.includes("cannot be served"))).toBe(false);
    // The new worker 0 serves (its fresh registry counts from zero) the table with those hosts.
    await eventually(async () => {
      if (!(await routesServed(p))) return false;
      return ((await perWorker(p)).get("0") ?? 0) > 0;
    }, 10_000);
    expect(alive(victim)).toBe(false);
  });
});
