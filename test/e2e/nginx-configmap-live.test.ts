// ingress-nginx's ConfigMap keys for the data plane apply while Portico serves, as ingress-nginx
// applies them by reloading nginx: the real process from --manifests, one process and two
// workers. An edit of proxy-body-size, hsts-max-age, server-tokens, large-client-header-buffers and limit-req-status-code changes the next
// requests' answers (every worker's: each request is a new connection, which the kernel spreads
// over the workers), with no "next restart" line; a key the listeners read at start
// (client-header-timeout) still says it needs a restart. Defaults and meanings:
// kubernetes/ingress-nginx at dbb11b92, internal/ingress/controller/config/config.go and
// docs/user-guide/nginx-configuration/configmap.md (proxy-body-size: nginx client_max_body_size,
// 413 above it).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { VERSION } from "../../src/version.ts";
import { createCertificate } from "../tls/pki.ts";
import { startPortico, waitReady, type Portico } from "./harness.ts";
import { rawBackend, type RawBackend } from "../proxy/raw.ts";
import { ingress, ingressClass, service, slice, tlsSecret, yamlDocs } from "./objects.ts";
import { eventually } from "../wait.ts";

const CM = { namespace: "ingress-nginx", name: "ingress-nginx-controller" };
const configMap = (data: Record<string, string>) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { ...CM }, data });

// A raw-socket backend: it takes a head of any size (a Bun.serve in this process would answer
// 431 past Bun's default 16 KiB before Portico's own limit is seen).
let backend: RawBackend;
let root: string;
beforeAll(async () => {
  backend = await rawBackend();
  root = mkdtempSync(join(tmpdir(), "portico-cm-live-"));
});
afterAll(async () => {
  await backend?.stop();
  rmSync(root, { recursive: true, force: true });
});

/** A POST of `bytes` bytes: its status. */
async function post(p: Portico, bytes: number): Promise<number> {
  const res = await fetch(`${p.http}/`, { method: "POST", headers: { host: "shop.test", "content-type": "text/plain", connection: "close" }, body: "x".repeat(bytes) });
  await res.text();
  return res.status;
}

async function hsts(p: Portico): Promise<string | null> {
  const res = await fetch(`${p.https}/`, { headers: { host: "shop.test", connection: "close" }, tls: { rejectUnauthorized: false, serverName: "shop.test" } } as RequestInit);
  await res.text();
  return res.headers.get("strict-transport-security");
}

/** The Server field of a proxied answer (server-tokens: --server-header, read per response). */
async function serverField(p: Portico): Promise<string | null> {
  const res = await fetch(`${p.http}/`, { headers: { host: "shop.test", connection: "close" } });
  await res.text();
  return res.headers.get("server");
}

/**
 * The status of a GET whose header fields take `bytes` (fields of 4,000 bytes): Portico's own
 * limit, large-client-header-buffers (config/header-buffers.ts), without --ingress-nginx-compat
 * answers 431 past it; Bun's parser, started with the 64 KiB limit, lets it see such a head.
 */
async function headStatus(p: Portico, bytes: number): Promise<number> {
  const headers: Record<string, string> = { host: "shop.test", connection: "close" };
  for (let i = 0, rest = bytes; rest > 0; i++, rest -= 4000) headers[`x-big-${i}`] = "c".repeat(Math.min(4000, rest) - 12);
  const res = await fetch(`${p.http}/`, { headers });
  await res.text();
  return res.status;
}

/** Several requests (new connections: spread over the workers); true when every one says `want`. */
async function all<T>(n: number, ask: () => Promise<T>, want: T): Promise<boolean> {
  for (let i = 0; i < n; i++) if ((await ask()) !== want) return false;
  return true;
}

for (const workers of [1, 2]) {
  describe(`--workers ${workers}`, () => {
    let portico: Portico;
    let folder: string;
    const write = (data: Record<string, string>) => {
      writeFileSync(join(folder, "cm.tmp"), yamlDocs([configMap(data)]));
      renameSync(join(folder, "cm.tmp"), join(folder, "manifests", "ingress-nginx.yaml"));
    };

    beforeAll(async () => {
      folder = join(root, `w${workers}`);
      mkdirSync(join(folder, "manifests"), { recursive: true });
      const cert = createCertificate({ subjectCN: "shop.test", sans: ["shop.test"] });
      writeFileSync(join(folder, "manifests", "objects.yaml"), yamlDocs([
        ingressClass(),
        service("shop", "web"),
        slice("shop", "web", [backend.port]),
        tlsSecret("shop", "tls", cert.certPem, cert.keyPem),
        ingress("shop", "shop", [{ host: "shop.test", paths: [{ path: "/", service: "web" }] }], { tls: [{ hosts: ["shop.test"], secretName: "tls" }] }),
      ]));
      // `4 32k` takes more than Bun's parser is given (64 KiB): applied as `2 32k`, with a warning.
      write({ "proxy-body-size": "1k", "hsts-max-age": "100", "ssl-redirect": "false", "large-client-header-buffers": "4 32k" });
      portico = await startPortico(["--manifests", join(folder, "manifests"), "--nginx-configmap", `${CM.namespace}/${CM.name}`, "--access-log", "off", "--workers", String(workers)]);
      await waitReady(portico);
    });
    afterAll(async () => {
      await portico?.stop("SIGKILL");
    });

    test("the start values apply", async () => {
      expect(await all(4, () => post(portico, 2048), 413)).toBe(true);
      expect(await all(4, () => post(portico, 512), 200)).toBe(true);
      expect(await hsts(portico)).toBe("max-age=100");
      // A 40 KiB head is served by every worker: each runs with Bun's parser limit raised.
      expect(await all(4, () => headStatus(portico, 40 * 1024), 200)).toBe(true);
      expect(portico.lines.find((l) => l.includes("ConfigMap key applied, bounded"))).toContain("bounded to 2 32k");
    });

    test("an edit applies to the next requests, with no restart", async () => {
      write({ "proxy-body-size": "4k", "hsts-max-age": "200", "ssl-redirect": "false", "server-tokens": "true", "large-client-header-buffers": "2 8k" });
      await eventually(async () => await all(6, () => post(portico, 2048), 200), 10_000);
      await eventually(async () => await all(6, () => headStatus(portico, 17 * 1024), 431), 10_000);
      // server-tokens true: Portico's name on every answer (nginx.tmpl server_tokens on).
      await eventually(async () => await all(6, () => serverField(portico), `portico/${VERSION}`), 10_000);
      await eventually(async () => await all(6, () => hsts(portico), "max-age=200"), 10_000);
      expect(await all(4, () => post(portico, 8192), 413)).toBe(true);
      await portico.waitForLine(/ConfigMap settings of the data plane applied/);
      expect(portico.lines.some((l) => /data plane change at the next restart/.test(l))).toBe(false);
      if (workers > 1) {
        // Every worker took the values, whichever got the requests above.
        await eventually(() => new Set(portico.lines.filter((l) => l.includes("settings from the primary applied")).map((l) => /"worker":(\d+)/.exec(l)?.[1])).size === workers, 10_000);
      }
    });

    test("a key removed goes back to the flag's value (no limit)", async () => {
      write({ "ssl-redirect": "false" });
      await eventually(async () => await all(6, () => post(portico, 64 * 1024), 200), 10_000);
      await eventually(async () => await all(6, () => hsts(portico), "max-age=31536000"), 10_000);
      await eventually(async () => await all(6, () => serverField(portico), null), 10_000);
      // ingress-nginx's `4 8k` again.
      await eventually(async () => await all(6, () => headStatus(portico, 17 * 1024), 200), 10_000);
      expect(await all(4, () => headStatus(portico, 33 * 1024), 431)).toBe(true);
    });

    test("a key the listeners read at start still waits for a restart, and says so", async () => {
      write({ "ssl-redirect": "false", "client-header-timeout": "30" });
      const line = await portico.waitForLine(/data plane change at the next restart/);
      expect(line).toContain("--client-header-timeout");
    });
  });
}
