// ingress-nginx's --disable-catch-all, ported from kubernetes/ingress-nginx
// test/e2e/settings/disable_catch_all.go (at dbb11b92), against the real Portico process
// (--manifests). ingress-nginx's store ignores every Ingress with spec.defaultBackend
// (internal/ingress/controller/store/store.go hasCatchAllIngressRule), rules and all, and an
// update that adds one deletes the Ingress. Where the Go test reads nginx.conf (the "_" server
// keeps upstream-default-backend), the case asserts what that does to a request: a host no
// rule names gets the default backend's 404, not the catch-all's Service.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually } from "../wait.ts";
import { get, startBackend, startPortico, type Backend, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";

const root = mkdtempSync(join(tmpdir(), "portico-catch-all-"));
const dir = join(root, "manifests");
let echo: Backend;
let portico: Portico;

// framework.NewSingleCatchAllIngress: a defaultBackend and no rules.
const catchAll = () => ingress("web", "catch-all", [], { defaultBackend: "echo" });
const single = (name: string, host: string) => ingress("web", name, [{ host, paths: [{ path: "/", service: "echo" }] }]);
// framework.NewSingleIngressWithBackendAndRules: a defaultBackend and a rule for the host.
const backendAndRules = () => ingress("web", "backend-and-rules", [{ host: "rules.foo", paths: [{ path: "/", service: "echo" }] }], { defaultBackend: "echo" });

function writeUpdated(updated: Record<string, unknown>) {
  writeFileSync(join(root, "updated.tmp"), yamlDocs([updated]));
  renameSync(join(root, "updated.tmp"), join(dir, "updated.yaml"));
}

beforeAll(async () => {
  echo = startBackend("echo");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "objects.yaml"), yamlDocs([
    ingressClass(),
    service("web", "echo"),
    slice("web", "echo", [echo.port]),
    catchAll(),
    single("foo", "foo"),
    backendAndRules(),
    single("not-catch-all", "allowed.foo"),
  ]));
  writeUpdated(single("updated", "updated.foo"));
  portico = await startPortico(["--manifests", dir, "--disable-catch-all", "--access-log", "off"]);
});

afterAll(async () => {
  await portico?.stop("SIGKILL");
  echo?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe("disable_catch_all.go", () => {
  test("should ignore catch all Ingress with backend", async () => {
    const foo = await get(portico.http, "foo", "/");
    expect(foo.status).toBe(200);
    expect(foo.body).toBe("echo /");
    // The "_" server keeps upstream-default-backend: Portico has no --default-backend-service
    // here, so its own 404, and the catch-all's Service is never reached.
    const before = echo.hits;
    const other = await get(portico.http, "not-a-rule.example", "/");
    expect(other.status).toBe(404);
    expect(echo.hits).toBe(before);
  });

  test("should ignore catch all Ingress with backend and rules", async () => {
    const before = echo.hits;
    const other = await get(portico.http, "not-a-rule.example", "/");
    expect(other.status).toBe(404);
    // ingress-nginx drops the whole Ingress, so its rules' host is not served either.
    const rules = await get(portico.http, "rules.foo", "/");
    expect(rules.status).toBe(404);
    expect(echo.hits).toBe(before);
  });

  test("should delete Ingress updated to catch-all", async () => {
    const first = await get(portico.http, "updated.foo", "/");
    expect(first.status).toBe(200);
    // The update of the Go test: rules nil, a defaultBackend to the echo Service.
    writeUpdated(ingress("web", "updated", [], { defaultBackend: "echo" }));
    await eventually(async () => (await get(portico.http, "updated.foo", "/")).status === 404, 10_000, "updated.foo answered 404");
    // Still the default backend's 404 for any host: the updated Ingress is no catch-all either.
    expect((await get(portico.http, "not-a-rule.example", "/")).status).toBe(404);
  });

  test("should allow Ingress with rules", async () => {
    const res = await get(portico.http, "allowed.foo", "/");
    expect(res.status).toBe(200);
    expect(res.body).toBe("echo /");
  });
});
