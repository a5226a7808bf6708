// Gateway API objects from --manifests files, served by a real Portico process (no cluster).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { get, startBackend, startPortico, type Backend, type Portico } from "../e2e/harness.ts";
import { eventually } from "../wait.ts";

let portico: Portico;
let dir: string;
let a: Backend;

beforeAll(async () => {
  a = startBackend("a");
  dir = mkdtempSync(join(tmpdir(), "portico-gw-manifests-"));
  writeFileSync(
    join(dir, "objects.yaml"),
    `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: portico }
spec: { controllerName: portico.dev/gateway-controller }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: infra }
spec:
  gatewayClassName: portico
  listeners: [{ name: http, port: 80, protocol: HTTP, hostname: "*.example.io", allowedRoutes: { namespaces: { from: All } } }]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: r, namespace: apps }
spec:
  parentRefs: [{ name: gw, namespace: infra }]
  rules: [{ matches: [{ path: { type: PathPrefix, value: /app } }], backendRefs: [{ name: a, port: 80 }] }]
---
apiVersion: v1
kind: Service
metadata: { name: a, namespace: apps }
spec: { ports: [{ name: http, port: 80 }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: a-x, namespace: apps, labels: { kubernetes.io/service-name: a } }
addressType: IPv4
ports: [{ name: http, port: ${a.port} }]
endpoints: [{ addresses: [127.0.0.1], conditions: { ready: true } }]
`,
  );
  portico = await startPortico(["--manifests", join(dir, "objects.yaml"), "--access-log", "off"]);
});

afterAll(async () => {
  await portico?.stop("SIGKILL");
  a?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("an HTTPRoute from --manifests is served on the listener's hostnames (a wildcard spans several labels)", async () => {
  await eventually(async () => (await get(portico.http, "x.example.io", "/app")).status === 200, 10_000);
  expect((await get(portico.http, "a.b.example.io:8080", "/app/z")).body).toBe("a /app/z");
  expect((await get(portico.http, "example.io", "/app")).status).toBe(404);
  expect((await get(portico.http, "x.example.io", "/application")).status).toBe(404);
});
