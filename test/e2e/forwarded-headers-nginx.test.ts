// The forwarded headers a pod receives under ingress-nginx's ConfigMap keys use-forwarded-headers,
// compute-full-forwarded-for and enable-real-ip, exactly as ingress-nginx sends them: the real
// Portico process (--manifests, --nginx-configmap, two workers) in front of a raw-socket backend
// that logs the upstream request head. Facts from kubernetes/ingress-nginx:
// - rootfs/etc/nginx/template/nginx.tmpl, the location's proxy_set_header block:
//   X-Real-IP $remote_addr; X-Forwarded-For $full_x_forwarded_for `if and UseForwardedHeaders
//   ComputeFullForwardedFor`, else $remote_addr; Host and X-Forwarded-Host $best_http_host;
//   X-Forwarded-Port $pass_port; X-Forwarded-Proto $pass_access_scheme.
// - the same template's http block: the realip module (real_ip_header X-Forwarded-For,
//   real_ip_recursive on, set_real_ip_from proxy-real-ip-cidr) with use-forwarded-headers or
//   enable-real-ip; map $http_x_forwarded_for $full_x_forwarded_for: "$http_x_forwarded_for,
//   $realip_remote_addr".
// - rootfs/etc/nginx/lua/lua_ingress.lua rewrite(): only with use_forwarded_headers are
//   $pass_access_scheme, $pass_server_port and $best_http_host taken from X-Forwarded-Proto,
//   -Port and the first entry of -Host.
// - internal/ingress/controller/config/config.go NewDefault: compute-full-forwarded-for false,
//   proxy-real-ip-cidr 0.0.0.0/0 (every peer trusted, so real_ip_recursive walks to the first entry).
// The ConfigMap changes while Portico serves; each key applies to the next requests, in every
// worker, as ingress-nginx's reload applies it (docs/design.md "ingress-nginx's ConfigMap").
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rawRequest } from "../proxy/helpers.ts";
import { namedBackend, type RawBackend } from "../proxy/raw.ts";
import { eventually } from "../wait.ts";
import { startPortico, waitReady, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";

const CM = { namespace: "ingress-nginx", name: "ingress-nginx-controller" };
const HOST = "forwarded-headers";

let backend: RawBackend;
let dir: string;
let portico: Portico;
let sent = 0;

const writeConfigMap = (data: Record<string, string>) => {
  writeFileSync(join(dir, "cm.tmp"), yamlDocs([{ apiVersion: "v1", kind: "ConfigMap", metadata: { ...CM }, data }]));
  renameSync(join(dir, "cm.tmp"), join(dir, "manifests", "ingress-nginx.yaml"));
};

beforeAll(async () => {
  backend = await namedBackend("echo");
  dir = mkdtempSync(join(tmpdir(), "portico-fwd-nginx-"));
  mkdirSync(join(dir, "manifests"));
  writeFileSync(join(dir, "manifests", "objects.yaml"), yamlDocs([
    ingressClass(), service("web", "echo"), slice("web", "echo", [backend.port]),
    ingress("web", "fwd", [{ host: HOST, paths: [{ path: "/", service: "echo" }] }]),
  ]));
  writeConfigMap({ "use-forwarded-headers": "true" });
  portico = await startPortico(["--manifests", join(dir, "manifests"), "--nginx-configmap", `${CM.namespace}/${CM.name}`, "--access-log", "off", "--workers", "2"]);
  await waitReady(portico);
});

afterAll(async () => {
  await portico?.stop("SIGKILL");
  await backend?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The upstream head of one request (a new connection, so the workers share them), as fields. */
async function upstream(headers: Record<string, string>): Promise<Record<string, string | null>> {
  const id = `fwd-nginx-${++sent}`;
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
  const raw = await rawRequest(portico.ports.http, `GET / HTTP/1.1\r\nHost: ${HOST}\r\nX-Request-ID: ${id}\r\n${extra}Connection: close\r\n\r\n`, 20_000);
  expect(raw).toStartWith("HTTP/1.1 200 ");
  const heads = backend.hits.map((h) => h.head).filter((h) => h.toLowerCase().includes(`\r\nx-request-id: ${id}\r\n`));
  expect(heads.length).toBe(1);
  const out: Record<string, string | null> = {};
  for (const name of ["host", "x-forwarded-for", "x-real-ip", "x-forwarded-host", "x-forwarded-proto", "x-forwarded-port", "x-request-id", "x-original-forwarded-for"]) {
    const lines = (heads[0] as string).split("\r\n").slice(1).filter((l) => l.toLowerCase().startsWith(`${name}:`));
    expect(lines.length).toBeLessThanOrEqual(1);
    out[name] = lines[0] === undefined ? null : lines[0].slice(name.length + 1).trim();
  }
  out["x-request-id"] = out["x-request-id"] === id ? "kept" : (out["x-request-id"] ?? null);
  return out;
}

const CLIENT = { "X-Forwarded-For": "1.2.3.4, 5.6.7.8", "X-Forwarded-Proto": "https", "X-Forwarded-Port": "1234", "X-Forwarded-Host": "myhost.com, another.host,example.net" };

/** Ten requests in a row (spread over both workers) all give `want`. */
async function settles(want: Record<string, string | null>): Promise<void> {
  await eventually(async () => {
    for (let i = 0; i < 10; i++) if (JSON.stringify(await upstream(CLIENT)) !== JSON.stringify(want)) return false;
    return true;
  }, 20_000, `upstream fields ${JSON.stringify(want)}`, 100);
}

describe("use-forwarded-headers, compute-full-forwarded-for, enable-real-ip (nginx.tmpl, lua_ingress.lua)", () => {
  test("use-forwarded-headers: X-Forwarded-For and X-Real-IP are $remote_addr; Host and X-Forwarded-Host the first X-Forwarded-Host", async () => {
    // settings/forwarded_headers.go "should trust X-Forwarded headers when setting is true":
    // host=myhost.com and x-forwarded-host=myhost.com from "myhost.com, another.host,example.net";
    // x-forwarded-for=1.2.3.4 from "1.2.3.4" (here a list: the realip module, every peer
    // trusted, walks to its first entry).
    expect(await upstream(CLIENT)).toEqual({
      host: "myhost.com", "x-forwarded-for": "1.2.3.4", "x-real-ip": "1.2.3.4", "x-forwarded-host": "myhost.com",
      "x-forwarded-proto": "https", "x-forwarded-port": "1234", "x-request-id": "kept", "x-original-forwarded-for": "1.2.3.4, 5.6.7.8",
    });
  });

  test("compute-full-forwarded-for: $full_x_forwarded_for, the received list and the peer; applied live", async () => {
    writeConfigMap({ "use-forwarded-headers": "true", "compute-full-forwarded-for": "true" });
    await settles({
      host: "myhost.com", "x-forwarded-for": "1.2.3.4, 5.6.7.8, 127.0.0.1", "x-real-ip": "1.2.3.4", "x-forwarded-host": "myhost.com",
      "x-forwarded-proto": "https", "x-forwarded-port": "1234", "x-request-id": "kept", "x-original-forwarded-for": "1.2.3.4, 5.6.7.8",
    });
  });

  test("enable-real-ip alone: the client address from X-Forwarded-For, nothing else believed", async () => {
    // compute-full-forwarded-for is read only with use-forwarded-headers (nginx.tmpl).
    writeConfigMap({ "enable-real-ip": "true", "compute-full-forwarded-for": "true" });
    await settles({
      host: HOST, "x-forwarded-for": "1.2.3.4", "x-real-ip": "1.2.3.4", "x-forwarded-host": HOST,
      "x-forwarded-proto": "http", "x-forwarded-port": "80", "x-request-id": "kept", "x-original-forwarded-for": "1.2.3.4, 5.6.7.8",
    });
    // settings/enable_real_ip.go "trusts X-Forwarded-For header only when setting is true",
    // its request as sent: host, x-forwarded-host the Host; proto http; port 80; for 1.2.3.4.
    expect(await upstream({ "X-Forwarded-Port": "1234", "X-Forwarded-Proto": "myproto", "X-Forwarded-For": "1.2.3.4", "X-Forwarded-Host": "myhost" })).toEqual({
      host: HOST, "x-forwarded-for": "1.2.3.4", "x-real-ip": "1.2.3.4", "x-forwarded-host": HOST,
      "x-forwarded-proto": "http", "x-forwarded-port": "80", "x-request-id": "kept", "x-original-forwarded-for": "1.2.3.4",
    });
    // No restart was needed: the trusted ranges (proxy-real-ip-cidr) did not change.
    expect(portico.lines.some((l) => l.includes("change at the next restart"))).toBe(false);
  });
});
