// End to end through the real process: --manifests → compile → Bun.serve → fetch → backends.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { get, startBackend, startPortico, type Backend, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";
import { eventually } from "../wait.ts";

let dir: string;
let portico: Portico;
const backends: Record<string, Backend> = {};

function writeManifests(extra: Record<string, unknown>[] = []): void {
  const b = backends;
  const objs = [
    ingressClass(),
    ...["web", "api", "exact", "wild", "fallback"].flatMap((n) => [service("shop", n), slice("shop", n, [b[n]!.port])]),
    service("shop", "down"),
    slice("shop", "down", [b.web!.port], false), // only a not-ready endpoint: 503
    ingress("shop", "main", [
      {
        host: "shop.test",
        paths: [
          { path: "/", service: "web" },
          { path: "/api", service: "api" },
          { path: "/api/v1", type: "Exact", service: "exact" },
          { path: "/down", service: "down" },
          { path: "/missing", service: "nosuchservice" },
        ],
      },
      { host: "*.wild.test", paths: [{ path: "/", service: "wild" }] },
      { host: "only-api.test", paths: [{ path: "/api", service: "api" }] },
    ]),
    ...extra,
  ];
  writeFileSync(join(dir, "all.yaml"), yamlDocs(objs));
}

beforeAll(async () => {
  for (const n of ["web", "api", "exact", "wild", "fallback"]) backends[n] = startBackend(n);
  dir = mkdtempSync(join(tmpdir(), "portico-e2e-"));
  writeManifests();
  portico = await startPortico(["--manifests", dir, "--log-level", "warn", "--access-log", "off"]);
});

afterAll(async () => {
  await portico?.stop("SIGKILL");
  for (const b of Object.values(backends)) b.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("routing through --manifests", () => {
  const cases: [string, string, number, string | null][] = [
    ["shop.test", "/", 200, "web /"],
    ["shop.test", "/anything/deep", 200, "web /anything/deep"],
    ["SHOP.test:8080", "/api/x", 200, "api /api/x"], // case-insensitive host, port ignored
    ["shop.test", "/apix", 200, "web /apix"], // Prefix is element-wise
    ["shop.test", "/api/v1", 200, "exact /api/v1"], // Exact beats the /api prefix
    ["shop.test", "/api/v1/", 200, "api /api/v1/"], // Exact does not take the trailing slash
    ["a.wild.test", "/x", 200, "wild /x"],
    ["a.b.wild.test", "/x", 404, null], // a wildcard covers one label only
    ["wild.test", "/x", 404, null],
    ["only-api.test", "/other", 404, null], // host matched, no path, no default backend
    ["unknown.test", "/", 404, null],
    ["shop.test", "/down", 503, null], // no ready endpoint
    ["shop.test", "/missing", 503, null], // Service does not exist
  ];
  for (const [host, path, status, body] of cases) {
    test(`${host}${path} → ${status}`, async () => {
      const r = await get(portico.http, host, path);
      expect(r.status).toBe(status);
      if (body !== null) expect(r.body).toBe(body);
      else expect(r.body).not.toContain(host.toLowerCase()); // error bodies never echo input
    });
  }

  test("a defaultBackend added to the files takes unmatched requests", async () => {
    writeManifests([ingress("shop", "fallback", [], { defaultBackend: "fallback" })]);
    await eventually(async () => (await get(portico.http, "unknown.test", "/zzz")).status === 200, 5000);
    expect((await get(portico.http, "unknown.test", "/zzz")).body).toBe("fallback /zzz");
    expect((await get(portico.http, "only-api.test", "/other")).body).toBe("fallback /other");
  });

  test("a file that stops parsing keeps the last good routes", async () => {
    writeFileSync(join(dir, "all.yaml"), "kind: Ingress\nmetadata: [unclosed\n");
    await portico.waitForLine(/all\.yaml/);
    // A later good change is served: the table it built was built after the broken file.
    writeFileSync(join(dir, "probe.yaml"), yamlDocs([ingress("shop", "probe", [{ host: "probe.test", paths: [{ path: "/", service: "web" }] }])]));
    await eventually(async () => (await get(portico.http, "probe.test", "/p")).body === "web /p", 10_000, "the later change served");
    expect((await get(portico.http, "shop.test", "/api/x")).body).toBe("api /api/x");
    rmSync(join(dir, "probe.yaml"));
    writeManifests();
  });

  test("/debug/routes shows the live table and /metrics counts requests", async () => {
    const routes = (await (await fetch(`${portico.admin}/debug/routes`)).json()) as { hosts?: unknown };
    expect(JSON.stringify(routes)).toContain("shop.test");
    const metrics = await (await fetch(`${portico.admin}/metrics`)).text();
    expect(metrics).toMatch(/portico_requests_total\{[^}]*ingress="main"[^}]*\} [1-9]/);
  });

  test("portico_active_connections counts a request in flight", async () => {
    const hits = backends.web!.hits;
    const slow = fetch(`${portico.http}/slow?ms=600`, { headers: { host: "shop.test" } });
    await eventually(() => backends.web!.hits > hits, 5_000, "the slow request at the backend");
    const during = await (await fetch(`${portico.admin}/metrics`)).text();
    expect(during).toMatch(/^portico_active_connections 1$/m);
    expect((await slow).status).toBe(200);
    const after = await (await fetch(`${portico.admin}/metrics`)).text();
    expect(after).toMatch(/^portico_active_connections 0$/m);
  });
});
