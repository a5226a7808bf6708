// ingress-nginx's ConfigMap limit-rate through the real process (--manifests, two workers):
// test/e2e/settings/limit_rate.go sets `limit-rate: "1"` then `"90"` and expects nginx.tmpl's
// `limit_rate <n>k;` (defaults.Backend LimitRate, the value of every location without the
// annotation). Here the key is edited while serving and the next responses are paced: the
// bytes the client holds at its time t never exceed 16 KiB × (t + 1) (nginx's write filter,
// ngx_http_write_filter_module.c), a bound load can only make safer. nginx paces only buffered
// answers (ngx_http_upstream.c ngx_http_upstream_send_response: `r->limit_rate = 0` when
// `!u->buffering`), so the ConfigMap turns proxy-buffering on with it, and back off: unpaced.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readPaced } from "../proxy/paced.ts";
import { rawBackend, type RawBackend } from "../proxy/raw.ts";
import { eventually } from "../wait.ts";
import { configMapManifests, startPortico, type ConfigMapManifests, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";

const KIB = 1024;
const SIZE = 40 * KIB;
const BODY = "0123456789abcdef".repeat(SIZE / 16);

let backend: RawBackend;
let m: ConfigMapManifests;
let portico: Portico;
beforeAll(async () => {
  backend = await rawBackend(() => `HTTP/1.1 200 OK\r\nContent-Length: ${SIZE}\r\n\r\n${BODY}`);
  m = configMapManifests("portico-limit-rate-");
  m.writeObjects(yamlDocs([ingressClass(), service("shop", "web"), slice("shop", "web", [backend.port]), ingress("shop", "web", [{ host: "shop.test", paths: [{ path: "/", service: "web" }] }])]));
  m.writeConfigMap({ "limit-rate": "0" });
  portico = await startPortico([...m.args, "--workers", "2", "--access-log", "off"]);
});
afterAll(async () => {
  await portico?.stop("SIGKILL");
  await backend?.stop();
  m?.remove();
});

/** One GET on a new connection: the whole body arrived with its Content-Length, which only an unpaced 40 KiB answer keeps. */
async function unpaced(): Promise<boolean> {
  const res = await fetch(`${portico.http}/`, { headers: { host: "shop.test", connection: "close" } });
  const length = res.headers.get("content-length");
  if (length === null) {
    await res.body?.cancel();
    return false;
  }
  return res.status === 200 && length === String(SIZE) && (await res.text()) === BODY;
}

/** One GET on a new connection: the whole body arrived, and every piece within 16 KiB × (t + 1). */
async function pacedAt16k(): Promise<boolean> {
  const r = await readPaced(`${portico.http}/`, "shop.test", 16 * KIB, 1);
  return r.status === 200 && r.body.length === SIZE && r.within;
}

test('limit-rate edited to "16" with proxy-buffering on while serving paces the next responses on every worker, with no restart; buffering off again: unpaced', async () => {
  const pid = portico.proc.pid;
  m.writeConfigMap({ "limit-rate": "16", "proxy-buffering": "on" });
  await eventually(pacedAt16k, 20_000);
  // Each request is a new connection, which the kernel spreads over the workers: all paced.
  for (let i = 0; i < 3; i++) expect(await pacedAt16k()).toBe(true);
  m.writeConfigMap({ "limit-rate": "16", "proxy-buffering": "off" });
  await eventually(unpaced, 20_000);
  for (let i = 0; i < 3; i++) expect(await unpaced()).toBe(true);
  expect(portico.proc.pid).toBe(pid);
  expect(portico.lines.some((l) => l.includes("limit-rate") && l.includes("next restart"))).toBe(false);
});
