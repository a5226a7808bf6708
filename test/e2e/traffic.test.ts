// Affinity, hashing and limits end to end through the real process: --manifests → compile →
// stage policies → proxy → five real backends on 127.0.0.1; endpoints change by rewriting the
// EndpointSlices under live sessions. Expectations from ingress-nginx's
// test/e2e/annotations/affinity.go (cookie attributes; Expires as "Mon, 02-Jan-06 15:04"),
// affinitymode.go (persistent sessions through scaling) and its template's limit_req.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startBackend, startPortico, type Backend, type Portico } from "./harness.ts";
import { ingress, ingressClass, service } from "./objects.ts";
import { eventually } from "../wait.ts";

const P = "nginx.ingress.kubernetes.io/";
let dir: string;
let portico: Portico;
const pods: Backend[] = [];

/** One EndpointSlice per pod (each pod is its own port on 127.0.0.1). */
const podSlices = (ports: number[]) =>
  ports.map((port, i) => ({
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { name: `web-${i}`, namespace: "shop", labels: { "kubernetes.io/service-name": "web" } },
    addressType: "IPv4",
    ports: [{ name: "http", port }],
    endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true } }],
  }));

function write(ports: number[]): void {
  const objs = [
    ingressClass(),
    service("shop", "web"),
    ...podSlices(ports),
    ingress("shop", "sticky", [{ host: "sticky.test", paths: [{ path: "/app", service: "web" }] }], {
      annotations: {
        [`${P}affinity`]: "cookie", [`${P}session-cookie-name`]: "SERVERID", [`${P}session-cookie-expires`]: "172800",
        [`${P}session-cookie-max-age`]: "259200", [`${P}session-cookie-domain`]: "sticky.test", [`${P}session-cookie-samesite`]: "Lax",
      },
    }),
    ingress("shop", "persistent", [{ host: "persistent.test", paths: [{ path: "/", service: "web" }] }], {
      annotations: { [`${P}affinity`]: "cookie", [`${P}affinity-mode`]: "persistent" },
    }),
    ingress("shop", "hashed", [{ host: "hash.test", paths: [{ path: "/", service: "web" }] }], {
      annotations: { [`${P}upstream-hash-by`]: "$http_x_user" },
    }),
    ingress("shop", "limited", [{ host: "limit.test", paths: [{ path: "/", service: "web" }] }], {
      annotations: { [`${P}limit-rpm`]: "1", [`${P}limit-burst-multiplier`]: "1" },
    }),
  ];
  writeFileSync(join(dir, "all.yaml"), objs.map((o) => `---\n${JSON.stringify(o)}\n`).join(""));
}

beforeAll(async () => {
  for (let i = 0; i < 5; i++) pods.push(startBackend(`pod${i}`));
  dir = mkdtempSync(join(tmpdir(), "portico-traffic-"));
  write(pods.map((p) => p.port));
  portico = await startPortico(["--manifests", dir, "--log-level", "warn", "--access-log", "off", "--limit-req-status-code", "429"]);
});

afterAll(async () => {
  await portico?.stop("SIGKILL");
  for (const p of pods) p.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function get(host: string, path: string, headers: Record<string, string> = {}) {
  const r = await fetch(`${portico.http}${path}`, { headers: { host, ...headers } });
  const body = await r.text();
  return { status: r.status, pod: body.split(" ")[0]!, setCookie: r.headers.get("set-cookie") };
}
const pair = (c: string) => c.slice(0, c.indexOf(";"));

/** Rewrite the slices and wait until Portico routes as they say: `probe` true for the new set. */
async function endpoints(ports: number[], probe: () => Promise<boolean>): Promise<void> {
  write(ports);
  await eventually(probe, 10_000);
}

describe("through the real process", () => {
  test("cookie affinity: ingress-nginx's attributes; sessions keep their pods while other pods come and go", async () => {
    const before = Math.floor(Date.now() / 1000);
    const first = await get("sticky.test", "/app/x");
    const after = Math.floor(Date.now() / 1000);
    expect(first.status).toBe(200);
    const m = /^SERVERID=[0-9a-f]{16}\|[0-9a-f]{32}; Expires=(\w{3}, \d\d-\w{3}-\d\d \d\d:\d\d:\d\d GMT); Max-Age=259200; Domain=sticky\.test; Path=\/app; HttpOnly; SameSite=Lax$/.exec(first.setCookie ?? "");
    expect(m).not.toBeNull();
    const expires = Date.parse(m![1]!.replace(/-(\d\d) /, (_, y) => `-20${y} `)) / 1000;
    expect(expires).toBeGreaterThanOrEqual(before + 172800);
    expect(expires).toBeLessThanOrEqual(after + 172800);

    const open: { cookie: string; pod: string }[] = [];
    for (let i = 0; i < 30; i++) {
      const r = await get("sticky.test", "/app/");
      open.push({ cookie: pair(r.setCookie!), pod: r.pod });
    }
    expect(new Set(open.map((s) => s.pod)).size).toBeGreaterThan(2);
    // One pod goes: its sessions move (no new cookie in balanced mode); the others stay put.
    const gone = open[0]!.pod;
    const left = pods.filter((p) => p.name !== gone);
    await endpoints(left.map((p) => p.port), async () => (await get("sticky.test", "/app/", { cookie: open[0]!.cookie })).pod !== gone);
    for (const s of open) {
      const r = await get("sticky.test", "/app/", { cookie: s.cookie });
      expect(r.setCookie).toBeNull();
      if (s.pod === gone) expect(r.pod).not.toBe(gone);
      else expect(r.pod).toBe(s.pod);
    }
    // It comes back: the ring is a function of the endpoint set, so every session is on its first pod again.
    await endpoints(pods.map((p) => p.port), async () => (await get("sticky.test", "/app/", { cookie: open[0]!.cookie })).pod === gone);
    for (const s of open) expect((await get("sticky.test", "/app/", { cookie: s.cookie })).pod).toBe(s.pod);
  });

  test("persistent affinity: a session stays on its pod through scaling, and moves with a new cookie when its pod goes", async () => {
    const r0 = await get("persistent.test", "/");
    const cookie = pair(r0.setCookie!);
    const mine = r0.pod;
    const others = pods.filter((p) => p.name !== mine);
    // Scale down to the session's pod and one more, then back up: the session never moves.
    await endpoints([pods.find((p) => p.name === mine)!.port, others[0]!.port], async () => {
      const r = await get("hash.test", "/", { "x-user": "probe-scale" });
      return r.pod === mine || r.pod === others[0]!.name;
    });
    for (let i = 0; i < 5; i++) expect(await get("persistent.test", "/", { cookie })).toMatchObject({ pod: mine, setCookie: null });
    await endpoints(pods.map((p) => p.port), async () => {
      for (let i = 0; i < 20; i++) if (![mine, others[0]!.name].includes((await get("hash.test", "/", { "x-user": `probe-${i}` })).pod)) return true;
      return false;
    });
    for (let i = 0; i < 5; i++) expect(await get("persistent.test", "/", { cookie })).toMatchObject({ pod: mine, setCookie: null });
    // Its pod goes: a new pod, a new cookie, kept from then on.
    await endpoints(others.map((p) => p.port), async () => (await get("persistent.test", "/", { cookie })).pod !== mine);
    const moved = await get("persistent.test", "/", { cookie });
    expect(moved.setCookie).not.toBeNull();
    const next = pair(moved.setCookie!);
    expect(next).not.toBe(cookie);
    for (let i = 0; i < 3; i++) expect(await get("persistent.test", "/", { cookie: next })).toMatchObject({ pod: moved.pod, setCookie: null });
    write(pods.map((p) => p.port));
  });

  test("upstream-hash-by $http_x_user: a user keeps its pod; only the users of a pod that goes move", async () => {
    await endpoints(pods.map((p) => p.port), async () => {
      const seen = new Set<string>();
      for (let i = 0; i < 40; i++) seen.add((await get("hash.test", "/", { "x-user": `u${i}` })).pod);
      return seen.size === 5;
    });
    const where = new Map<string, string>();
    for (let i = 0; i < 40; i++) {
      const u = `u${i}`;
      const a = await get("hash.test", "/a", { "x-user": u });
      expect((await get("hash.test", "/b?c=d", { "x-user": u })).pod).toBe(a.pod);
      where.set(u, a.pod);
    }
    const gone = where.get("u0")!;
    await endpoints(pods.filter((p) => p.name !== gone).map((p) => p.port), async () => (await get("hash.test", "/", { "x-user": "u0" })).pod !== gone);
    for (const [u, pod] of where) {
      const now = (await get("hash.test", "/", { "x-user": u })).pod;
      if (pod === gone) expect(now).not.toBe(gone);
      else expect(now).toBe(pod);
    }
    write(pods.map((p) => p.port));
  });

  test("limit-rpm 1 with multiplier 1: two requests pass, the third gets --limit-req-status-code (429)", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await get("limit.test", "/")).status);
    expect(statuses).toEqual([200, 200, 429, 429]);
    // Another Ingress on the same Service is not limited.
    expect((await get("hash.test", "/", { "x-user": "x" })).status).toBe(200);
  });
});
