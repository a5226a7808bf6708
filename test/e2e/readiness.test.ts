// Readiness that tells the truth, and a shutdown that does not wait for nothing: with worker
// processes the traffic ports are announced when they listen and `ready` comes after they
// serve; /readyz names the first cause; a process that never reported ready skips
// --shutdown-delay (nothing routes to it).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, startBackend, startPortico, type Backend } from "./harness.ts";
import { ingress, ingressClass, kubeconfig, service, slice, yamlDocs } from "./objects.ts";

let dir: string;
let backend: Backend;
let nowhere: string;

beforeAll(() => {
  backend = startBackend("r");
  dir = mkdtempSync(join(tmpdir(), "portico-ready-"));
  writeFileSync(join(dir, "app.yaml"), yamlDocs([ingressClass(), service("app", "r"), slice("app", "r", [backend.port]), ingress("app", "r", [{ host: "r.test", paths: [{ path: "/", service: "r" }] }])]));
  // A cluster that never answers: the kinds are never listed, so the process is never ready.
  nowhere = join(dir, "kubeconfig-nowhere");
  writeFileSync(nowhere, kubeconfig(`http://127.0.0.1:${freePort()}`, "t"));
});

afterAll(() => {
  backend.stop();
  rmSync(dir, { recursive: true, force: true });
});

const msgIndex = (lines: readonly string[], re: RegExp) => lines.findIndex((l) => re.test(l));

describe("with worker processes", () => {
  test("listening names only what listens; ready comes after every worker serves", async () => {
    const p = await startPortico(["--manifests", dir, "--workers", "2"]);
    try {
      await p.waitForLine(/"msg":"ready"/);
      // Each worker logs its own "listening" line; lines of different processes reach the pipe in
      // no set order (each process flushes its log on its own), so only the primary's lines are
      // ordered here: "every worker is serving" is logged once every worker has told the primary.
      await p.waitForLine(/"msg":"listening","worker":/);
      const lines = p.lines;
      const primaryListening = JSON.parse(lines.find((l) => /"msg":"listening"/.test(l) && !/"worker":/.test(l))!) as Record<string, unknown>;
      expect(primaryListening).toMatchObject({ admin: p.ports.admin, workers: 2 });
      expect(primaryListening).not.toHaveProperty("http");
      expect(primaryListening).not.toHaveProperty("argv");
      const serving = msgIndex(lines, /"msg":"every worker is serving"/);
      expect(JSON.parse(lines[serving]!)).toMatchObject({ http: p.ports.http, https: p.ports.https });
      expect(serving).toBeGreaterThan(-1);
      expect(msgIndex(lines, /"msg":"ready"/)).toBeGreaterThan(serving);
    } finally {
      expect(await p.stop()).toBe(0);
    }
  });

  test("/readyz names the first cause (kinds not listed), not the workers waiting for them", async () => {
    const p = await startPortico(["--kubeconfig", nowhere, "--election-namespace", "default", "--workers", "2"], { ready: false });
    try {
      await p.waitForLine(/list\/watch failed/);
      const res = await fetch(`${p.admin}/readyz`);
      expect(res.status).toBe(503);
      expect(await res.text()).toBe("not ready: not synced: ConfigMap, EndpointSlice, GRPCRoute, Gateway, GatewayClass, HTTPRoute, Ingress, IngressClass, IngressNginxPolicy, Namespace, ReferenceGrant, Secret, Service");
    } finally {
      await p.stop();
    }
  });
});

describe("health endpoints", () => {
  test("/healthz and /readyz answer text/plain", async () => {
    const p = await startPortico(["--manifests", dir]);
    try {
      for (const path of ["/healthz", "/readyz"]) {
        const res = await fetch(`${p.admin}${path}`);
        expect(res.status).toBe(200);
        expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
        expect(await res.text()).toBe("ok");
      }
    } finally {
      await p.stop();
    }
  });
});

describe("shutdown", () => {
  for (const workers of ["1", "2"]) {
    test(`--workers ${workers}: SIGTERM before ready does not wait out --shutdown-delay`, async () => {
      // 120 s would outlast the test's timeout if it were waited.
      const p = await startPortico(["--kubeconfig", nowhere, "--election-namespace", "default", "--workers", workers, "--shutdown-delay", "120s"], { ready: false });
      try {
        await p.waitForLine(/list\/watch failed/);
        p.proc.kill("SIGTERM");
        expect(await p.proc.exited).toBe(0);
        expect(p.lines.some((l) => l.includes('"msg":"stopped"'))).toBe(true);
        expect(p.lines.some((l) => l.includes("still serving"))).toBe(false);
        if (workers === "1") expect(p.lines.some((l) => l.includes('"msg":"drain: never reported ready, so no shutdown delay"'))).toBe(true);
      } finally {
        await p.stop("SIGKILL"); // a regression must not leave a process waiting out 120 s
      }
    });
  }

  test("after ready, the shutdown delay is kept (load balancers may still send)", async () => {
    const p = await startPortico(["--manifests", dir, "--shutdown-delay", "200ms"]);
    p.proc.kill("SIGTERM");
    expect(await p.proc.exited).toBe(0);
    expect(JSON.parse(p.lines.find((l) => l.includes('"msg":"drain: not ready, still serving"'))!).delayMs).toBe(200);
  });
});
