// A tenant's Ingress for another namespace's host, with an auth-tls-secret that does not exist,
// through the real process (--manifests, the file edited while it runs). ingress-nginx merges
// the server-level annotations of every Ingress of a host into one server block
// (controller.go getBackendServers sets the server's CertificateAuth / AuthTLSError from any
// Ingress of the host; nginx.tmpl answers AuthTLSError with `return 403` before any location),
// so every path of the host answers 403: Portico's default. Likewise another namespace's
// spec.tls for a host turns on its HTTPS redirect. With --host-policy-scope=namespace
// only the namespace of the host's oldest Ingress sets those policies (docs/design.md,
// "Host-wide policies"), and the owner's paths stay served.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rawBackend, type RawBackend } from "../proxy/raw.ts";
import { get, startPortico, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";
import { eventually } from "../wait.ts";

const N = "nginx.ingress.kubernetes.io/";

const created = (obj: Record<string, unknown>, at: string) => ({ ...obj, metadata: { ...(obj.metadata as object), creationTimestamp: at } });

let backend: RawBackend;
let dir: string;

function write(withIntruder: boolean): void {
  const objs = [
    ingressClass(),
    service("shop", "web"),
    slice("shop", "web", [backend.port]),
    service("tenant-b", "web"),
    slice("tenant-b", "web", [backend.port]),
    created(ingress("shop", "storefront", [{ host: "app.test", paths: [{ path: "/", service: "web" }] }, { host: "plain.test", paths: [{ path: "/", service: "web" }] }]), "2026-01-01T00:00:00Z"),
    ...(withIntruder
      ? [
          created(ingress("tenant-b", "grab", [{ host: "app.test", paths: [{ path: "/b", service: "web" }] }], { annotations: { [`${N}auth-tls-secret`]: "missing" } }), "2026-02-01T00:00:00Z"),
          // spec.tls for the owner's plain-HTTP host: ingress-nginx gives the server a certificate and ssl-redirect (on by default) follows.
          created(ingress("tenant-b", "tls-grab", [{ host: "plain.test", paths: [{ path: "/t", service: "web" }] }], { tls: [{ hosts: ["plain.test"], secretName: "missing" }] }), "2026-02-01T00:00:00Z"),
        ]
      : []),
  ];
  writeFileSync(join(dir, "all.yaml"), yamlDocs(objs as Record<string, unknown>[]));
}

beforeAll(async () => {
  backend = await rawBackend();
});

afterAll(async () => {
  await backend?.stop();
});

describe("another namespace's Ingress with a missing auth-tls-secret on the host", () => {
  let portico: Portico | undefined;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "portico-host-scope-"));
  });

  afterAll(async () => {
    await portico?.stop("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  test("default (--host-policy-scope=all, as ingress-nginx): the owner's path answers 403 once it is added", async () => {
    write(false);
    portico = await startPortico(["--manifests", dir, "--access-log", "off"]);
    expect((await get(portico.http, "app.test", "/")).status).toBe(200);
    write(true);
    await eventually(async () => (await get(portico!.http, "app.test", "/")).status === 403, 10_000);
    expect((await get(portico.http, "app.test", "/b")).status).toBe(403);
    const redirected = await get(portico.http, "plain.test", "/");
    expect([redirected.status, redirected.headers.get("location")]).toEqual([308, "https://plain.test"]); // lua_ingress.lua cuts one trailing "/"
    expect(portico.lines.some((l) => l.includes('"reason":"HostPolicyIgnored"'))).toBe(false);
    await portico.stop("SIGKILL");
    portico = undefined;
  });

  test("--host-policy-scope=namespace: the owner's path stays 200 from the backend, and the diagnostic names the Ingress and the annotation", async () => {
    write(false);
    // Workers, as the shipped Deployment runs: they serve the table the primary compiled.
    portico = await startPortico(["--manifests", dir, "--access-log", "off", "--host-policy-scope", "namespace", "--workers", "2"]);
    expect((await get(portico.http, "app.test", "/")).status).toBe(200);
    const before = backend.requests().length;
    write(true);
    // The intruder's own path serves once the new table is live (its auth-tls-secret is not applied there either).
    await eventually(async () => (await get(portico!.http, "app.test", "/b")).status === 200, 10_000);
    const line = await portico.waitForLine(/"reason":"HostPolicyIgnored"/);
    expect(JSON.parse(line)).toMatchObject({
      msg: "object problem",
      kind: "Ingress",
      namespace: "tenant-b",
      name: "grab",
      reason: "HostPolicyIgnored",
      err: expect.stringContaining("nginx.ingress.kubernetes.io/auth-tls-secret is ignored on host app.test"),
    });
    const owner = await get(portico.http, "app.test", "/");
    expect(owner.status).toBe(200);
    expect(owner.body).toBe("ok");
    const plain = await get(portico.http, "plain.test", "/");
    expect([plain.status, plain.body]).toEqual([200, "ok"]);
    const tlsLine = await portico.waitForLine(/"name":"tls-grab".*"reason":"HostPolicyIgnored"/);
    expect(JSON.parse(tlsLine).err).toStartWith("spec.tls is ignored on host plain.test: with --host-policy-scope=namespace only Ingresses in namespace shop");
    // Both answers came from the backend (the raw backend's 200), not from Portico.
    const lines = backend.lines().slice(before);
    expect(lines).toContain("GET /b HTTP/1.1");
    expect(lines.filter((l) => l === "GET / HTTP/1.1")).toHaveLength(2);
  });
});
