// The migration fixtures (test/fixtures/migrate/manifests: Ingresses written for ingress-nginx)
// served from the fake API server by the real process with --ingress-nginx-compat, next to an
// ingress-nginx that owns the status (--update-status=false): the Ingresses ingress-nginx takes
// are served and no others, status stays ingress-nginx's, the compat metric and explain agree
// with the checked-in report, and `portico migrate` reads the same report (and ingress-nginx's
// ConfigMap) from the cluster.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadAll } from "js-yaml";
import type { MigrationReport } from "../../src/compile/migrate.ts";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { get, startPortico, type Portico } from "./harness.ts";
import { kubeconfig } from "./objects.ts";
import { eventually } from "../wait.ts";

const ROOT = join(import.meta.dir, "..", "..");
const FIXTURES = join(ROOT, "test", "fixtures", "migrate");
const cmd = process.env.PORTICO_BIN ? [process.env.PORTICO_BIN] : [process.execPath, join(ROOT, "src", "main.ts")];

type Obj = Record<string, unknown> & { kind: string; metadata: { name: string; namespace?: string; annotations?: Record<string, string> } };

/** A pod per Service: answers with what it received (path and headers) and a header of its own. */
function pod(name: string) {
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const headers: Record<string, string> = {};
      req.headers.forEach((v, k) => void (headers[k] = v));
      return Response.json({ pod: name, path: new URL(req.url).pathname, headers }, { headers: { "x-frame-options": "SAMEORIGIN" } });
    },
  });
  return { port: server.port as number, stop: () => void server.stop(true) };
}

let api: FakeApiServer;
let portico: Portico;
let dir: string;
let kubeconfigPath: string;
const pods: { stop(): void }[] = [];
const expected = JSON.parse(readFileSync(join(FIXTURES, "expected-report.json"), "utf8")) as MigrationReport;

beforeAll(async () => {
  api = await startFakeApiServer({ token: "t", bookmarkIntervalMs: 500 });
  dir = mkdtempSync(join(tmpdir(), "portico-nginx-class-"));
  kubeconfigPath = join(dir, "kubeconfig");
  writeFileSync(kubeconfigPath, kubeconfig(api.url, "t"));
  const docs: Obj[] = [];
  for (const f of readdirSync(join(FIXTURES, "manifests")).sort()) {
    for (const d of loadAll(readFileSync(join(FIXTURES, "manifests", f), "utf8"))) if (d !== null) docs.push(d as Obj);
  }
  for (const d of docs) {
    if (d.kind === "EndpointSlice") {
      // The same slice, pointing at a pod of this test.
      const svc = (d.metadata as unknown as { labels: Record<string, string> }).labels["kubernetes.io/service-name"]!;
      const p = pod(`${d.metadata.namespace}/${svc}`);
      pods.push(p);
      api.create("EndpointSlice", { ...d, ports: [{ name: "http", port: p.port }], endpoints: [{ addresses: ["127.0.0.1"], conditions: { ready: true } }] });
    } else if (d.kind === "Ingress") {
      // ingress-nginx's address, as it wrote it.
      api.create("Ingress", { ...d, status: { loadBalancer: { ingress: [{ ip: "203.0.113.80" }] } } });
    } else api.create(d.kind, d);
  }
  portico = await startPortico(
    ["--kubeconfig", kubeconfigPath, "--ingress-nginx-compat", "--update-status=false", "--publish-status-address", "192.0.2.10", "--election-namespace", "default", "--access-log", "off"],
    { env: { POD_NAME: "portico-nginx-0" } },
  );
});

afterAll(async () => {
  await portico?.stop("SIGKILL");
  await api?.stop();
  for (const p of pods) p.stop();
  rmSync(dir, { recursive: true, force: true });
});

const json = async (host: string, path: string) => {
  const r = await get(portico.http, host, path);
  return { status: r.status, headers: r.headers, body: r.status === 200 ? (JSON.parse(r.body) as { pod: string; path: string; headers: Record<string, string> }) : null };
};

describe("ingress-nginx's Ingresses served with --ingress-nginx-compat", () => {
  test("the Ingresses ingress-nginx takes are served: by spec.ingressClassName and by the class annotation", async () => {
    // A TLS host: plain HTTP is redirected, as ingress-nginx does.
    expect((await get(portico.http, "shop.example.com", "/cart")).status).toBe(308);
    expect((await json("intranet.example.com", "/")).body).toMatchObject({ pod: "legacy/legacy" });
    expect((await json("public-api.example.com", "/v1/items")).body).toMatchObject({ pod: "web/web", path: "/v1/items" });
  });

  test("access annotations apply: a source allowlist without this client answers 403 (before basic authentication)", async () => {
    expect((await get(portico.http, "dashboard.internal.example.com", "/")).status).toBe(403);
  });

  test("and no others: no class (the default IngressClass is not read), an empty class annotation, another class", async () => {
    for (const host of ["unclassed.example.com", "empty-class.example.com", "traefik.example.com"]) {
      expect((await get(portico.http, host, "/")).status, host).toBe(404);
    }
  });

  test("a canary Ingress splits its main Ingress's path (canary-by-header decides here)", async () => {
    const to = async (value: string) => (await get(portico.http, "api.example.com", "/healthz", { headers: { "x-canary": value } })).body;
    expect(JSON.parse(await to("always"))).toMatchObject({ pod: "shop/api-v2" });
    expect(JSON.parse(await to("never"))).toMatchObject({ pod: "shop/api" });
  });

  test("a snippet moved to Portico's annotations: the pod gets the request header, the client the response header", async () => {
    const moved = await json("moved.example.com", "/");
    expect(moved.body?.headers["x-tenant"]).toBe("acme");
    expect(moved.headers.get("x-frame-options")).toBe("DENY");
    // Not moved yet: the snippet is never executed, so the pod's own header reaches the client.
    const notYet = await json("www.example.com", "/");
    expect(notYet.body?.headers["x-tenant"]).toBeUndefined();
    expect(notYet.headers.get("x-frame-options")).toBe("SAMEORIGIN");
  });

  test("status stays ingress-nginx's; the leader still writes Events", async () => {
    // The snippet is an UnsupportedAnnotation: its Event shows the leader acting on the compile.
    await eventually(() => api.list("Event").some((e) => (e.regarding as { name?: string }).name === "security-headers"), 10_000);
    for (const ing of api.list("Ingress")) {
      expect((ing.status as { loadBalancer: { ingress: unknown[] } }).loadBalancer.ingress, ing.metadata.name).toEqual([{ ip: "203.0.113.80" }]);
    }
    expect(api.requests.filter((r) => r.method === "PATCH" && r.path.endsWith("/status"))).toEqual([]);
  });

  test("portico_ingress_compat counts the Ingresses as the checked-in report does", async () => {
    const metrics = await (await fetch(`${portico.admin}/metrics`)).text();
    const value = (status: string) => Number(new RegExp(`^portico_ingress_compat\\{status="${status}"\\} (\\d+)$`, "m").exec(metrics)?.[1]);
    const s = expected.summary;
    expect({ unchanged: value("unchanged"), differs: value("differs"), partlyServed: value("partly-served"), refused: value("refused") }).toEqual({
      unchanged: s.unchanged,
      differs: s.differs,
      partlyServed: s.partlyServed,
      refused: s.refused,
    });
  });

  test("/debug/explain names the annotations that shaped a request", async () => {
    const r = (await (await fetch(`${portico.admin}/debug/explain?host=www.example.com&path=/`)).json()) as { match: { ingress: string }; annotations: { name: string; status: string }[] };
    expect(r.match.ingress).toBe("web/security-headers");
    expect(r.annotations).toEqual([expect.objectContaining({ name: "nginx.ingress.kubernetes.io/configuration-snippet", status: "not-served" })]);
  });

  test("portico migrate reads the same report from the cluster", async () => {
    // Not spawnSync: the fake API server answers from this process's event loop.
    const args = ["migrate", "--kubeconfig", kubeconfigPath, "--output", "json", "--nginx-configmap", "ingress-nginx/ingress-nginx-controller"];
    const p = Bun.spawn([...cmd, ...args], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const [code, stdout] = await Promise.all([p.exited, new Response(p.stdout).text()]);
    expect(code).toBe(3);
    const got = JSON.parse(stdout) as MigrationReport;
    expect(got.ingresses).toEqual(expected.ingresses);
    expect(got.ignored).toEqual(expected.ignored);
    expect(got.configMap).toEqual(expected.configMap);
    expect(got.summary).toEqual(expected.summary);
  });
});
