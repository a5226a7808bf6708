// portico_diagnostics on a running process follows its causes: a file that does not parse, an
// invalid object (in a file or from the API), an unresolved backend. Each goes from the metric
// (and the log says so) when its cause does, whether or not a compile follows.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { startBackend, startPortico, type Backend, type Portico } from "./harness.ts";
import { ingress, ingressClass, kubeconfig, service, slice, yamlDocs } from "./objects.ts";
import { eventually } from "../wait.ts";

let dir: string;
let backend: Backend;

/** `portico_diagnostics` by reason, as scraped now (absent reasons are 0). */
async function diagnostics(p: Portico): Promise<Record<string, number>> {
  const text = await (await fetch(`${p.admin}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^portico_diagnostics\{reason="([^"]+)"\} (\S+)$/gm)) if (Number(m[2]) !== 0) out[m[1]!] = Number(m[2]);
  return out;
}

const same = async (p: Portico, want: Record<string, number>) => JSON.stringify(await diagnostics(p)) === JSON.stringify(want);

const BAD_INGRESS = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: weird, namespace: app }
spec: { ingressClassName: portico, rules: [{ http: { paths: [{ path: /, pathType: Sometimes, backend: { service: { name: x, port: { number: 80 } } } }] } }] }
`;

beforeAll(() => {
  backend = startBackend("ok");
  dir = mkdtempSync(join(tmpdir(), "portico-diag-"));
});

afterAll(() => {
  backend.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("--manifests", () => {
  test("a file that failed to parse stops counting once fixed, or deleted", async () => {
    const m = join(dir, "m1");
    Bun.spawnSync(["mkdir", "-p", m]);
    writeFileSync(join(m, "app.yaml"), yamlDocs([ingressClass(), service("app", "ok"), slice("app", "ok", [backend.port]), ingress("app", "web", [{ host: "a.test", paths: [{ path: "/", service: "ok" }] }])]));
    const p = await startPortico(["--manifests", m, "--access-log", "off"]);
    try {
      expect(await diagnostics(p)).toEqual({});
      const broken = join(m, "broken.yaml");
      writeFileSync(broken, "kind: Service\nmetadata: [\n");
      await eventually(() => same(p, { InvalidObject: 1 }), 5000);
      // Fixed: the metric clears and the log says the file parses again.
      writeFileSync(broken, yamlDocs([service("app", "extra")]));
      await eventually(() => same(p, {}), 5000);
      await p.waitForLine(/"msg":"manifest file parses again".*broken\.yaml/);
      // Broken again, then deleted (it holds no objects: no compile follows the deletion).
      writeFileSync(broken, "kind: [\n");
      await eventually(() => same(p, { InvalidObject: 1 }), 5000);
      unlinkSync(broken);
      await eventually(() => same(p, {}), 5000);
      // An invalid object, then the file without it.
      writeFileSync(broken, BAD_INGRESS);
      await eventually(() => same(p, { InvalidObject: 1 }), 5000);
      writeFileSync(broken, yamlDocs([service("app", "extra")]));
      await eventually(() => same(p, {}), 5000);
      // The applied line counts what the metric counts.
      writeFileSync(broken, BAD_INGRESS);
      await p.waitForLine(/"msg":"configuration applied".*"diagnostics":1/);
    } finally {
      await p.stop();
    }
  });

  test("a compile diagnostic clears with its cause, and the log says it is resolved", async () => {
    const m = join(dir, "m2");
    Bun.spawnSync(["mkdir", "-p", m]);
    const app = join(m, "app.yaml");
    const objs = [ingressClass(), ingress("app", "web", [{ host: "a.test", paths: [{ path: "/", service: "later" }] }])];
    writeFileSync(app, yamlDocs(objs));
    const p = await startPortico(["--manifests", m, "--access-log", "off"]);
    try {
      expect(await diagnostics(p)).toEqual({ ServiceNotFound: 1 });
      writeFileSync(app, yamlDocs([...objs, service("app", "later"), slice("app", "later", [backend.port])]));
      await eventually(() => same(p, {}), 5000);
      await p.waitForLine(/"msg":"object problem resolved".*"name":"web".*"reason":"ServiceNotFound"/);
    } finally {
      await p.stop();
    }
  });
});

describe("against the fake API server", () => {
  let api: FakeApiServer;
  beforeAll(async () => {
    api = await startFakeApiServer({ token: "diag-token" });
  });
  afterAll(async () => {
    await api.stop();
  });

  test("an invalid object stops counting once fixed, or deleted", async () => {
    writeFileSync(join(dir, "kubeconfig"), kubeconfig(api.url, "diag-token"));
    api.create("IngressClass", ingressClass());
    api.create("Service", service("app", "ok"));
    api.create("EndpointSlice", slice("app", "ok", [backend.port]));
    const weird = { rules: [{ http: { paths: [{ path: "/", pathType: "Weird", backend: {} }] } }] };
    api.create("Ingress", { ...ingress("app", "bad", []), spec: weird });
    const p = await startPortico(["--kubeconfig", join(dir, "kubeconfig"), "--election-namespace", "default", "--access-log", "off"]);
    try {
      expect(await diagnostics(p)).toEqual({ InvalidObject: 1 }); // from the initial list
      api.update("Ingress", ingress("app", "bad", [{ host: "b.test", paths: [{ path: "/", service: "ok" }] }]));
      await eventually(() => same(p, {}), 5000);
      const cur = api.get("Ingress", "app", "bad")!;
      api.update("Ingress", { ...cur, spec: weird });
      await eventually(() => same(p, { InvalidObject: 1 }), 5000);
      api.delete("Ingress", "app", "bad");
      await eventually(() => same(p, {}), 5000);
    } finally {
      await p.stop();
    }
  });
});
