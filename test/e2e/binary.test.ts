// The compiled executable (not the sources) routes: built with `bun run build` (CI builds it
// before the tests; built here when missing), run against --manifests and the fake API server.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { get, startBackend, startPortico, type Backend, type Portico } from "./harness.ts";
import { ingress, ingressClass, kubeconfig, service, slice, yamlDocs } from "./objects.ts";
import { eventually } from "../wait.ts";

const ROOT = join(import.meta.dir, "..", "..");
const BIN = join(ROOT, "dist", "portico");
let dir: string;
let backend: Backend;
// alice: "s3cret" (`openssl passwd -apr1 -salt 8sFt66rZ s3cret`); bob: "correct horse"
// (`htpasswd -bn5 u 'correct horse'`): both computed on the hashing threads (proxy/crypt/hash-pool.ts).
const USERS = "alice:$apr1$8sFt66rZ$5f4dG6uJPUDcCdyvCGEji1\nbob:$6$tT3LD4NgSxw2EavM$yo41WdndX2ZnoBHoQ5dmJcrWVrNMymg5o.2OGbU0H1JSYRJ6IgWR2qbvYNcQC5iNTzYnLVno9OZzno8Zvsn/5.\n";
let api: FakeApiServer;

/** startPortico with the binary instead of the sources (the harness reads PORTICO_BIN). */
async function startBinary(args: string[]): Promise<Portico> {
  const before = process.env.PORTICO_BIN;
  process.env.PORTICO_BIN = BIN;
  try {
    return await startPortico(args);
  } finally {
    if (before === undefined) delete process.env.PORTICO_BIN;
    else process.env.PORTICO_BIN = before;
  }
}

beforeAll(async () => {
  if (!existsSync(BIN)) {
    const r = Bun.spawnSync([process.execPath, join(ROOT, "scripts", "build.ts")], { cwd: ROOT, stdout: "ignore", stderr: "pipe" });
    if (r.exitCode !== 0) throw new Error(`build failed: ${r.stderr.toString()}`);
  }
  backend = startBackend("bin");
  dir = mkdtempSync(join(tmpdir(), "portico-bin-"));
  const objs = [
    ingressClass(),
    service("app", "bin"),
    slice("app", "bin", [backend.port]),
    ingress("app", "bin", [{ host: "bin.test", paths: [{ path: "/", service: "bin" }] }]),
    ingress("app", "vault", [{ host: "vault.test", paths: [{ path: "/", service: "bin" }] }], {
      annotations: { "nginx.ingress.kubernetes.io/auth-type": "basic", "nginx.ingress.kubernetes.io/auth-secret": "users" },
    }),
    { apiVersion: "v1", kind: "Secret", type: "Opaque", metadata: { name: "users", namespace: "app" }, data: { auth: Buffer.from(USERS).toString("base64") } },
  ];
  writeFileSync(join(dir, "app.yaml"), yamlDocs(objs));
  api = await startFakeApiServer({ token: "bin-token" });
  for (const o of objs) api.create(o.kind as string, o);
  writeFileSync(join(dir, "kubeconfig"), kubeconfig(api.url, "bin-token"));
}, 120_000);

afterAll(async () => {
  backend?.stop();
  await api?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("compiled binary", () => {
  test("--version names a real build", () => {
    const r = Bun.spawnSync([BIN, "--version"]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout.toString()).toMatch(/^portico \d+\.\d+\.\d+ \(commit (?!dev)\S+/);
  });

  test("routes with --manifests", async () => {
    const p = await startBinary(["--manifests", join(dir, "app.yaml")]);
    try {
      const r = await get(p.http, "bin.test", "/hello");
      expect(r.status).toBe(200);
      expect(r.body).toBe("bin /hello");
      expect((await get(p.http, "other.test", "/")).status).toBe(404);
    } finally {
      expect(await p.stop()).toBe(0);
    }
  });

  test("speaks HTTP/2 and HTTP/1.1 on its HTTPS port (node:http2, and the built-in ws the listener loads at start, work in the executable)", async () => {
    const p = await startBinary(["--manifests", join(dir, "app.yaml")]);
    try {
      for (const [flag, version] of [["--http2", "2"], ["--http1.1", "1.1"]] as const) {
        // Not spawnSync: the backend answers from this process's event loop.
        const c = Bun.spawn(["curl", "-sk", flag, "--max-time", "10", "-w", "\n%{http_version}", "--resolve", `bin.test:${p.ports.https}:127.0.0.1`, `https://bin.test:${p.ports.https}/h2`], { stdout: "pipe" });
        expect(await new Response(c.stdout).text()).toBe(`bin /h2\n${version}`);
      }
    } finally {
      expect(await p.stop()).toBe(0);
    }
  });

  test("runs the whole demo: its backends and manifests are inside the executable", async () => {
    const before = process.env.PORTICO_BIN;
    process.env.PORTICO_BIN = BIN;
    let p: Portico;
    try {
      p = await startPortico([], { subcommand: "demo", cwd: dir });
    } finally {
      if (before === undefined) delete process.env.PORTICO_BIN;
      else process.env.PORTICO_BIN = before;
    }
    try {
      // Run from another folder than the repository: nothing is read from k8s/examples.
      expect(JSON.parse((await get(p.http, "shop.demo.localhost", "/api/orders")).body)).toMatchObject({ backend: "api", path: "/api/orders" });
      expect(JSON.parse((await get(p.http, "alice.blog.demo.localhost", "/")).body).backend).toBe("blog");
      expect((await get(p.http, "shop.demo.localhost", "/reports")).status).toBe(503);
    } finally {
      expect(await p.stop()).toBe(0);
    }
  });

  test("checks passwords on its hashing threads: the worker is inside the executable, never read from disk", async () => {
    // Started from another folder than the repository, where no src/proxy/crypt/crypt-worker.ts exists.
    const before = process.env.PORTICO_BIN;
    process.env.PORTICO_BIN = BIN;
    let p: Portico;
    try {
      p = await startPortico(["--manifests", join(dir, "app.yaml")], { cwd: dir });
    } finally {
      if (before === undefined) delete process.env.PORTICO_BIN;
      else process.env.PORTICO_BIN = before;
    }
    const auth = (up: string) => ({ headers: { authorization: `Basic ${Buffer.from(up).toString("base64")}` } });
    try {
      // A thread that could not load would make these 503 (fail closed), never 200 or 401.
      expect((await get(p.http, "vault.test", "/a", auth("alice:s3cret"))).body).toBe("bin /a");
      expect((await get(p.http, "vault.test", "/b", auth("bob:correct horse"))).body).toBe("bin /b");
      expect((await get(p.http, "vault.test", "/", auth("alice:wrong"))).status).toBe(401);
      expect((await get(p.http, "vault.test", "/", auth("bob:wrong"))).status).toBe(401);
      const metrics = await (await fetch(`${p.admin}/metrics`)).text();
      expect(metrics).toMatch(/^portico_basic_auth_checks_peak_per_route [1-4]$/m);
    } finally {
      expect(await p.stop()).toBe(0);
    }
  });

  test("routes against the fake API server", async () => {
    const p = await startBinary(["--kubeconfig", join(dir, "kubeconfig"), "--election-namespace", "default"]);
    try {
      expect((await get(p.http, "bin.test", "/x")).body).toBe("bin /x");
      api.create("Ingress", ingress("app", "second", [{ host: "second.test", paths: [{ path: "/", service: "bin" }] }]));
      await eventually(async () => (await get(p.http, "second.test", "/")).status === 200, 5000);
    } finally {
      expect(await p.stop()).toBe(0);
    }
  });
});
