// Source ranges and basic authentication through the real process: from --manifests files
// (a password changed and a Secret deleted by editing the file) and from the fake API server
// (the Secret updated and deleted through the API, picked up by the watch), with no restart.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { rawBackend, type RawBackend } from "../proxy/raw.ts";
import { startPortico, type Portico } from "./harness.ts";
import { ingress, ingressClass, kubeconfig, service, slice, yamlDocs } from "./objects.ts";
import { eventually } from "../wait.ts";

const N = "nginx.ingress.kubernetes.io/";

// `openssl passwd -apr1 -salt 8sFt66rZ s3cret` and `openssl passwd -apr1 -salt Qm3x9Zp1 n3w-pass`.
const S3CRET = "$apr1$8sFt66rZ$5f4dG6uJPUDcCdyvCGEji1";
const NEW_PASS = "$apr1$Qm3x9Zp1$FZytMcYT0bZURKXvPDq1z1";

const users = (hash: string) => ({
  apiVersion: "v1", kind: "Secret", type: "Opaque",
  metadata: { name: "users", namespace: "shop" },
  data: { auth: Buffer.from(`alice:${hash}\n`).toString("base64") },
});

const protectedIngress = ingress("shop", "private", [{ host: "private.test", paths: [{ path: "/", service: "web" }] }], {
  annotations: { [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "users", [`${N}auth-realm`]: "Shop staff" },
});

const basic = (up: string) => ({ authorization: `Basic ${Buffer.from(up).toString("base64")}` });

async function status(p: Portico, host: string, headers: Record<string, string> = {}): Promise<number> {
  const r = await fetch(`${p.http}/`, { headers: { host, ...headers } });
  await r.arrayBuffer();
  return r.status;
}

describe("through --manifests", () => {
  let dir: string;
  let portico: Portico;
  let backend: RawBackend;
  const write = (secret: object | null, hash = S3CRET) => {
    const objs = [
      ingressClass(),
      service("shop", "web"),
      slice("shop", "web", [backend.port]),
      protectedIngress,
      // The flag's allow list covers loopback; this Ingress replaces it with one that does not.
      ingress("shop", "office", [{ host: "office.test", paths: [{ path: "/", service: "web" }] }], { annotations: { [`${N}whitelist-source-range`]: "10.0.0.0/8" } }),
      ingress("shop", "open", [{ host: "open.test", paths: [{ path: "/", service: "web" }] }]),
      ingress("shop", "broken", [{ host: "broken.test", paths: [{ path: "/", service: "web" }] }], { annotations: { [`${N}denylist-source-range`]: "10.0.0.0/8,10.0.0.0/33" } }),
      ...(secret === null ? [] : [{ ...users(hash), ...secret }]),
    ];
    writeFileSync(join(dir, "all.yaml"), yamlDocs(objs as Record<string, unknown>[]));
  };

  beforeAll(async () => {
    backend = await rawBackend();
    dir = mkdtempSync(join(tmpdir(), "portico-access-"));
    write({});
    portico = await startPortico(["--manifests", dir, "--allowlist-source-range", "127.0.0.0/8,::1", "--denylist-source-range", "192.0.2.0/24", "--log-level", "info", "--access-log", "off"]);
  });

  afterAll(async () => {
    await portico?.stop("SIGKILL");
    await backend?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("source ranges: the flags' list, an annotation replacing it, a bad CIDR refusing everyone", async () => {
    expect(await status(portico, "open.test")).toBe(200);
    expect(await status(portico, "office.test")).toBe(403);
    expect(await status(portico, "office.test", { "x-forwarded-for": "10.1.2.3" })).toBe(403); // no --trusted-proxies
    expect(await status(portico, "broken.test")).toBe(503);
  });

  test("basic auth: 401 with the realm, 200 with the password, Authorization kept from the backend", async () => {
    const r = await fetch(`${portico.http}/`, { headers: { host: "private.test" } });
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toBe('Basic realm="Shop staff"');
    const before = backend.heads().length;
    expect(await status(portico, "private.test", basic("alice:s3cret"))).toBe(200);
    expect(await status(portico, "private.test", basic("alice:wrong"))).toBe(401);
    expect(backend.heads().length).toBe(before + 1);
    expect(backend.heads().at(-1)?.toLowerCase()).not.toContain("authorization");
  });

  test("a password changed in the file applies without a restart; a deleted Secret refuses everyone (503)", async () => {
    const pid = portico.proc.pid;
    write({}, NEW_PASS);
    await eventually(async () => (await status(portico, "private.test", basic("alice:n3w-pass"))) === 200, 10_000);
    expect(await status(portico, "private.test", basic("alice:s3cret"))).toBe(401);
    write(null);
    await eventually(async () => (await status(portico, "private.test", basic("alice:n3w-pass"))) === 503, 10_000);
    expect(await status(portico, "private.test")).toBe(503);
    write({}, NEW_PASS);
    await eventually(async () => (await status(portico, "private.test", basic("alice:n3w-pass"))) === 200, 10_000);
    expect(portico.proc.pid).toBe(pid);
    expect(portico.proc.exitCode).toBeNull();
  });

  test("neither /debug/routes nor the logs hold a hash", async () => {
    const routes = await (await fetch(`${portico.admin}/debug/routes`)).text();
    expect(routes).toContain("shop/users");
    expect(routes).toContain("<redacted: 1 entry>");
    for (const text of [routes, portico.lines.join("\n")]) {
      expect(text).not.toContain("8sFt66rZ");
      expect(text).not.toContain("Qm3x9Zp1");
    }
    // The diagnostics name what is wrong.
    expect(portico.lines.join("\n")).toContain("Secret shop/users (auth-secret) not found");
    expect(portico.lines.join("\n")).toContain("denylist-source-range");
  });
});

describe("through the API server's watch", () => {
  let api: FakeApiServer;
  let portico: Portico;
  let backend: RawBackend;
  let dir: string;

  beforeAll(async () => {
    backend = await rawBackend();
    api = await startFakeApiServer({ token: "t", bookmarkIntervalMs: 500 });
    dir = mkdtempSync(join(tmpdir(), "portico-access-api-"));
    writeFileSync(join(dir, "kubeconfig"), kubeconfig(api.url, "t"));
    api.create("IngressClass", ingressClass());
    api.create("Service", service("shop", "web"));
    api.create("EndpointSlice", slice("shop", "web", [backend.port]));
    api.create("Secret", users(S3CRET));
    api.create("Ingress", protectedIngress);
    portico = await startPortico(["--kubeconfig", join(dir, "kubeconfig"), "--election-namespace", "default", "--log-level", "warn", "--access-log", "off"], {
      env: { POD_NAMESPACE: "default", POD_NAME: "portico-access-0" },
    });
  });

  afterAll(async () => {
    await portico?.stop("SIGKILL");
    await api?.stop();
    await backend?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("an Opaque Secret is listed and watched; a password update applies live; deletion refuses (503)", async () => {
    await eventually(async () => (await status(portico, "private.test", basic("alice:s3cret"))) === 200, 10_000);
    expect(await status(portico, "private.test")).toBe(401);
    const cur = api.get("Secret", "shop", "users")!;
    api.update("Secret", { ...users(NEW_PASS), metadata: { name: "users", namespace: "shop", resourceVersion: cur.metadata.resourceVersion } });
    await eventually(async () => (await status(portico, "private.test", basic("alice:n3w-pass"))) === 200, 10_000);
    expect(await status(portico, "private.test", basic("alice:s3cret"))).toBe(401);
    api.delete("Secret", "shop", "users");
    await eventually(async () => (await status(portico, "private.test", basic("alice:n3w-pass"))) === 503, 10_000);
    const selectors = api.requests.filter((r) => r.path === "/api/v1/secrets").map((r) => new URLSearchParams(r.query).get("fieldSelector") ?? "");
    expect(selectors.length).toBeGreaterThan(0);
    for (const s of selectors) expect(s).toContain("type!=kubernetes.io/service-account-token");
  });
});
