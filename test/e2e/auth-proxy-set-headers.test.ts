// auth-proxy-set-headers from --manifests files: the real process reads the ConfigMap from the
// files and follows their edits, and `portico explain` and `portico migrate` report the
// Ingress as they serve it. ingress-nginx (authreq/main.go at dbb11b92) denies the location
// (503) while the ConfigMap named is missing; with it, the auth service decides.
//
// The auth service is never reached here: its name (auth.invalid, RFC 6761 §6.4) resolves to
// nothing, so a request that gets as far as asking it answers 500 (nginx's auth_request when
// the auth service cannot be reached), which tells it apart from the 503 of a missing
// ConfigMap. The headers it would carry are checked against a real auth service in
// test/proxy/auth-proxy-set-headers.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rawBackend, type RawBackend } from "../proxy/raw.ts";
import { startPortico, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";
import { eventually } from "../wait.ts";

const ROOT = join(import.meta.dir, "..", "..");
const cmd = process.env.PORTICO_BIN ? [process.env.PORTICO_BIN] : [process.execPath, join(ROOT, "src", "main.ts")];
const N = "nginx.ingress.kubernetes.io/";

function runCli(args: string[]): { code: number; stdout: string; stderr: string } {
  const r = Bun.spawnSync([...cmd, ...args], { stdin: "ignore", env: { ...process.env, PORTICO_HTTP_PORT: "" } });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

let dir: string;
let backend: RawBackend;
let portico: Portico;

const headers = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "auth-headers", namespace: "shop" }, data: { "X-Tenant": "shop" } };

function write(withConfigMap: boolean, className = "portico"): void {
  const objs = [
    ingressClass(className),
    service("shop", "web"),
    slice("shop", "web", [backend.port]),
    ingress("shop", "guarded", [{ host: "guarded.test", paths: [{ path: "/", service: "web" }] }], {
      className,
      annotations: { [`${N}auth-url`]: "http://auth.invalid/check", [`${N}auth-proxy-set-headers`]: "shop/auth-headers" },
    }),
    ...(withConfigMap ? [headers] : []),
  ];
  writeFileSync(join(dir, "all.yaml"), yamlDocs(objs as Record<string, unknown>[]));
}

async function status(host: string): Promise<number> {
  const r = await fetch(`${portico.http}/`, { headers: { host } });
  await r.arrayBuffer();
  return r.status;
}

beforeAll(async () => {
  backend = await rawBackend();
  dir = mkdtempSync(join(tmpdir(), "portico-authcm-files-"));
  write(true);
  portico = await startPortico(["--manifests", dir, "--log-level", "info", "--access-log", "off"]);
});

afterAll(async () => {
  await portico?.stop("SIGKILL");
  await backend?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("auth-proxy-set-headers from --manifests", () => {
  test("the ConfigMap in the files is read: the auth service is asked (500: it cannot be reached); removed from the file, 503; back, asked again", async () => {
    await eventually(async () => (await status("guarded.test")) === 500, 15_000, "asked with the ConfigMap read");
    expect(backend.requests()).toHaveLength(0);
    const pid = portico.proc.pid;
    write(false);
    await eventually(async () => (await status("guarded.test")) === 503, 10_000, "503 without the ConfigMap");
    write(true);
    await eventually(async () => (await status("guarded.test")) === 500, 15_000, "asked again");
    expect(portico.proc.pid).toBe(pid);
    expect(portico.lines.join("\n")).toContain(`ConfigMap \\"shop/auth-headers\\" (${N}auth-proxy-set-headers) not found`);
  });

  test("portico explain: `depends` (the auth service decides) with the ConfigMap, 503 and why without it", () => {
    const withCm = mkdtempSync(join(tmpdir(), "portico-authcm-explain-"));
    try {
      writeFileSync(join(withCm, "a.yaml"), yamlDocs([ingressClass(), service("shop", "web"), slice("shop", "web", [backend.port]), headers,
        ingress("shop", "guarded", [{ host: "guarded.test", paths: [{ path: "/", service: "web" }] }], { annotations: { [`${N}auth-url`]: "http://auth.invalid/check", [`${N}auth-proxy-set-headers`]: "shop/auth-headers" } }),
        ingress("shop", "missing", [{ host: "missing.test", paths: [{ path: "/", service: "web" }] }], { annotations: { [`${N}auth-url`]: "http://auth.invalid/check", [`${N}auth-proxy-set-headers`]: "shop/nope" } }),
      ] as Record<string, unknown>[]));
      const ok = runCli(["explain", "--manifests", withCm, "--host", "guarded.test", "--path", "/"]);
      expect(ok.code).toBe(0);
      expect((JSON.parse(ok.stdout) as { match: { answers: string } }).match.answers).toBe("depends");
      const missing = runCli(["explain", "--manifests", withCm, "--host", "missing.test", "--path", "/"]);
      expect(missing.code).toBe(0);
      const out = JSON.parse(missing.stdout) as { match: { answers: string }; response: { kind: string; status: number; cause: string } };
      expect(out.match.answers).toBe("503");
      expect(out.response).toMatchObject({ kind: "refused", status: 503 });
      expect(out.response.cause).toContain(`ConfigMap "shop/nope" (${N}auth-proxy-set-headers) not found`);
    } finally {
      rmSync(withCm, { recursive: true, force: true });
    }
  });

  test("portico migrate: the annotation is served as ingress-nginx serves it; a missing ConfigMap refuses the Ingress, as in ingress-nginx", () => {
    const m = mkdtempSync(join(tmpdir(), "portico-authcm-migrate-"));
    try {
      const auth = (name: string, cm: string) =>
        ingress("shop", name, [{ host: `${name}.test`, paths: [{ path: "/", service: "web" }] }], { className: "nginx", annotations: { [`${N}auth-url`]: "http://auth.example/check", [`${N}auth-proxy-set-headers`]: cm } });
      writeFileSync(join(m, "a.yaml"), yamlDocs([service("shop", "web"), slice("shop", "web", [backend.port]), headers, auth("ok", "shop/auth-headers"), auth("missing", "shop/nope")] as Record<string, unknown>[]));
      const r = runCli(["migrate", "--manifests", m, "--output", "json"]);
      // 3: not every Ingress is served unchanged (the refused one).
      expect(r.code).toBe(3);
      const report = JSON.parse(r.stdout) as { ingresses: { ingress: string; status: string; refused: string | null; annotations: { name: string; status: string }[] }[] };
      const ok = report.ingresses.find((i) => i.ingress === "shop/ok")!;
      expect(ok.annotations.find((a) => a.name === `${N}auth-proxy-set-headers`)?.status).toBe("same");
      expect(ok.refused).toBeNull();
      const missing = report.ingresses.find((i) => i.ingress === "shop/missing")!;
      expect(missing.status).toBe("refused");
      expect(missing.refused).toContain("not found");
    } finally {
      rmSync(m, { recursive: true, force: true });
    }
  });
});
