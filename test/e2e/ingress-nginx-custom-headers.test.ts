// ingress-nginx's e2e cases for the custom-headers annotation and the add-headers,
// proxy-set-headers and block-* ConfigMap keys, run against the real Portico process
// (--manifests, --nginx-configmap), as test/e2e/ingress-nginx-e2e-audit.test.ts runs the
// others. Each case names its Go file (kubernetes/ingress-nginx test/e2e/, at dbb11b92) and
// the It(...) text; the expected answers are the ones that test asserts, and where it only
// reads nginx.conf, what that configuration does to a request (nginx.tmpl at the same commit).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rawRequest } from "../proxy/helpers.ts";
import { namedBackend, type RawBackend } from "../proxy/raw.ts";
import { startPortico, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice } from "./objects.ts";

const NGINX = "nginx.ingress.kubernetes.io/";
const configMap = (ns: string, name: string, data: Record<string, string>) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: ns }, data });

let dir = "";
let portico: Portico;
let echo: RawBackend;
let sent = 0;

beforeAll(async () => {
  echo = await namedBackend("echo");
  dir = mkdtempSync(join(tmpdir(), "portico-e2e-cheaders-"));
  const objects = [
    ingressClass(),
    service("web", "echo"), slice("web", "echo", [echo.port]),
    service("other", "echo"), slice("other", "echo", [echo.port]),
    // customheaders.go: f.CreateConfigMap("custom-headers", ...) in the test's namespace.
    configMap("web", "custom-headers", { "My-Custom-Header": "42", "My-Custom-Header-Dollar": "$remote_addr" }),
    configMap("ingress-nginx", "ingress-nginx-controller", {
      // customheaders.go: UpdateNginxConfigMapData("global-allowed-response-headers", ...).
      "global-allowed-response-headers": "My-Custom-Header,My-Custom-Header-Dollar",
    }),
    ingress("web", "plain", [{ host: "custom-headers-none", paths: [{ path: "/", service: "echo" }] }]),
    ingress("web", "custom", [{ host: "custom-headers", paths: [{ path: "/", service: "echo" }] }], { annotations: { [`${NGINX}custom-headers`]: "web/custom-headers" } }),
    // "with an invalid secret": the namespace has no ConfigMap of that name.
    ingress("other", "custom", [{ host: "custom-headers-missing", paths: [{ path: "/", service: "echo" }] }], { annotations: { [`${NGINX}custom-headers`]: "other/custom-headers" } }),
  ];
  writeFileSync(join(dir, "all.yaml"), objects.map((o) => JSON.stringify(o)).join("\n---\n"));
  portico = await startPortico(["--manifests", dir, "--nginx-configmap", "ingress-nginx/ingress-nginx-controller", "--ingress-nginx-compat", "--ingress-class", "portico", "--controller-name", "portico.dev/ingress-controller"]);
});

afterAll(async () => {
  await portico?.stop();
  await echo?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Outcome {
  readonly status: number;
  readonly head: string;
  readonly body: string;
  readonly upstream: string | null;
}

async function send(host: string, headers: Record<string, string> = {}): Promise<Outcome> {
  const id = `cheaders-${++sent}`;
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
  const raw = await rawRequest(portico.ports.http, `GET / HTTP/1.1\r\nHost: ${host}\r\nX-Request-ID: ${id}\r\n${extra}Connection: close\r\n\r\n`, 20_000);
  const end = raw.indexOf("\r\n\r\n");
  const hits = echo.hits.filter((h) => field(h.head, "x-request-id") === id);
  expect(hits.length).toBeLessThanOrEqual(1);
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0), head: raw.slice(0, end), body: raw.slice(end + 4), upstream: hits[0]?.head ?? null };
}

/** A field of a head (case-insensitive name), or null; at most one may be present. */
function field(head: string, name: string): string | null {
  const hits = head.split("\r\n").slice(1).filter((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  expect(hits.length).toBeLessThanOrEqual(1);
  return hits[0] === undefined ? null : hits[0].slice(name.length + 1).trim();
}

describe("annotations/customheaders.go", () => {
  test("should return status code 200 when no custom-headers is configured", async () => {
    const out = await send("custom-headers-none");
    expect(out.status).toBe(200);
    expect(field(out.upstream as string, "host")).toBe("custom-headers-none");
    expect(field(out.head, "my-custom-header")).toBeNull();
  });

  test("should return status code 503 when custom-headers is configured with an invalid secret", async () => {
    // customheaders/main.go: GetConfigMap fails, NewLocationDenied: the location answers 503.
    const out = await send("custom-headers-missing");
    expect(out.status).toBe(503);
    expect(out.body).toContain("503 Service Temporarily Unavailable");
    expect(out.upstream).toBeNull();
  });

  test(`should set "more_set_headers 'My-Custom-Header' '42';" when custom-headers are set`, async () => {
    const out = await send("custom-headers");
    expect(out.status).toBe(200);
    expect(field(out.head, "my-custom-header")).toBe("42");
    // nginx.tmpl escapeLiteralDollar: the value is sent as written, not expanded.
    expect(field(out.head, "my-custom-header-dollar")).toBe("$remote_addr");
    expect(out.upstream).not.toBeNull();
  });
});
