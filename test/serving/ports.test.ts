// Ports are shared only with Portico's own workers (serving/ports.ts). A port held by anything
// else (a Bun.serve with reusePort, which SO_REUSEPORT would let Portico join silently, or a
// plain node:net server) makes start-up fail with exit 1 and a line naming the port and the
// flag; a second Portico on the ports of a running one fails the same way, and the running one
// keeps every request.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, startBackend, startPortico, type Backend, type Portico } from "../e2e/harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "../e2e/objects.ts";

let dir: string;
let web: Backend;
const started: Portico[] = [];

beforeAll(() => {
  web = startBackend("web");
  dir = mkdtempSync(join(tmpdir(), "portico-ports-"));
  writeFileSync(
    join(dir, "all.yaml"),
    yamlDocs([ingressClass(), service("shop", "web"), slice("shop", "web", [web.port]), ingress("shop", "main", [{ host: "shop.test", paths: [{ path: "/", service: "web" }] }])]),
  );
});

afterAll(async () => {
  for (const p of started) await p.stop("SIGKILL");
  web.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A stranger on 127.0.0.1:port; returns its stop function. */
async function holdPort(kind: "bun-reuseport" | "node-net", port: number): Promise<() => Promise<void>> {
  if (kind === "bun-reuseport") {
    const s = Bun.serve({ hostname: "127.0.0.1", port, reusePort: true, fetch: () => new Response("stranger") });
    return async () => void (await s.stop(true));
  }
  const s = net.createServer((c) => c.destroy());
  await new Promise<void>((resolve, reject) => {
    s.once("error", reject);
    s.listen({ host: "127.0.0.1", port }, resolve);
  });
  return () => new Promise<void>((resolve) => s.close(() => resolve()));
}

/** Starts Portico expecting it to fail by itself; its exit code (-1: still running after 15 s) and its "start-up failed" error. */
async function exitOf(args: string[]) {
  const p = await startPortico(["--manifests", dir, "--access-log", "off", ...args], { ready: false });
  started.push(p);
  const code = await Promise.race([p.proc.exited, Bun.sleep(15_000).then(() => -1)]);
  const line = p.lines.find((l) => l.includes('"start-up failed"'));
  return { code, err: line ? String((JSON.parse(line) as { err?: unknown }).err) : `no start-up failed line in:\n${p.lines.join("\n")}` };
}

describe("a port held by a stranger fails start-up", () => {
  const cases: [kind: "bun-reuseport" | "node-net", flag: string, workers: string][] = [
    ["bun-reuseport", "--https-port", "1"],
    ["node-net", "--https-port", "1"],
    ["bun-reuseport", "--http-port", "1"],
    ["node-net", "--http-port", "1"],
    ["bun-reuseport", "--admin-port", "1"],
    ["node-net", "--admin-port", "1"],
    ["bun-reuseport", "--http-port", "2"],
    ["bun-reuseport", "--https-port", "2"],
    ["node-net", "--http-port", "2"],
  ];
  test.each(cases)("%s holding %s, --workers %s: exit 1 naming the port", async (kind, flag, workers) => {
    const port = freePort();
    const release = await holdPort(kind, port);
    try {
      const r = await exitOf(["--workers", workers, flag, String(port)]);
      expect(r.err).toBe(`port ${port} (${flag}) on 127.0.0.1 is in use by another process; Portico shares its ports only with its own workers`);
      expect(r.code).toBe(1);
    } finally {
      await release();
    }
  });
});

describe("a second Portico cannot join a running one", () => {
  for (const workers of ["1", "2"]) {
    test(`--workers ${workers}: the second exits 1; the first keeps every request`, async () => {
      const first = await startPortico(["--manifests", dir, "--access-log", "off", "--workers", workers]);
      started.push(first);
      const { http, https, admin } = first.ports;
      // The traffic ports first: the admin port would fail it anyway, and last.
      for (const [flag, port] of [["--http-port", http], ["--https-port", https]] as const) {
        const free = { http: freePort(), https: freePort(), admin: freePort() };
        const ports = { ...free, [flag === "--http-port" ? "http" : "https"]: port };
        const r = await exitOf(["--workers", workers, "--http-port", String(ports.http), "--https-port", String(ports.https), "--admin-port", String(ports.admin)]);
        expect(r.err).toStartWith(`port ${port} (${flag}) on 127.0.0.1 is in use`);
        expect(r.code).toBe(1);
      }
      const r = await exitOf(["--workers", workers, "--http-port", String(freePort()), "--https-port", String(freePort()), "--admin-port", String(admin)]);
      expect(r.err).toStartWith(`port ${admin} (--admin-port) on 127.0.0.1 is in use`);
      expect(r.code).toBe(1);
      // Fresh connections, so SO_REUSEPORT would have spread them over any joiner.
      const answers = await Promise.all(
        Array.from({ length: 20 }, () =>
          fetch(`${first.http}/x`, { headers: { host: "shop.test", connection: "close" }, keepalive: false }).then(async (res) => `${res.status} ${await res.text()}`),
        ),
      );
      expect(answers).toEqual(Array.from({ length: 20 }, () => "200 web /x"));
    });
  }
});
