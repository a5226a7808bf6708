// The access log as ingress-nginx users turn it off, through the real process from
// --manifests: the annotation enable-access-log: "false" (ingress-nginx
// internal/ingress/annotations/log/main.go; nginx.tmpl writes `access_log off;` into the
// Ingress's locations, test/e2e/annotations/log.go "set access_log off") and the ConfigMap's
// disable-access-log / disable-http-access-log (nginx.tmpl `{{ if or $cfg.DisableAccessLog
// $cfg.DisableHTTPAccessLog }} access_log off;` in the http block,
// test/e2e/annotations/disableaccesslog.go), ingress-nginx at dbb11b92. Requests still answer
// 200; only the line is gone.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rawBackend, type RawBackend } from "../proxy/raw.ts";
import { configMapManifests, get, startPortico, type ConfigMapManifests, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";

const N = "nginx.ingress.kubernetes.io/";

/** The access-log lines (JSON with a request_id) among the process's output. */
function accessLines(p: Portico): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const l of p.lines) {
    if (!l.startsWith("{")) continue;
    try {
      const o = JSON.parse(l) as Record<string, unknown>;
      if (typeof o.request_id === "string" && typeof o.status === "number") out.push(o);
    } catch {}
  }
  return out;
}

let backend: RawBackend;
beforeAll(async () => {
  backend = await rawBackend();
});
afterAll(async () => {
  await backend?.stop();
});

const objects = (annotations: Record<string, string>) => [
  ingressClass(),
  service("shop", "web"),
  slice("shop", "web", [backend.port]),
  ingress("shop", "quiet", [{ host: "quiet.test", paths: [{ path: "/", service: "web" }] }], { annotations }),
  ingress("shop", "loud", [{ host: "loud.test", paths: [{ path: "/", service: "web" }] }]),
];

describe("enable-access-log per Ingress", () => {
  let dir: string;
  let portico: Portico;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "portico-access-log-"));
    writeFileSync(join(dir, "all.yaml"), yamlDocs(objects({ [`${N}enable-access-log`]: "false" })));
    portico = await startPortico(["--manifests", dir]);
  });
  afterAll(async () => {
    await portico?.stop("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  test('"false": a request to that Ingress writes no line; a request to another Ingress still does', async () => {
    expect((await get(portico.http, "quiet.test", "/quiet-1")).status).toBe(200);
    expect((await get(portico.http, "loud.test", "/loud-1")).status).toBe(200);
    // Lines are written in the order requests finish: once the later request's line is out,
    // the earlier one's would be too (the sequence point for the absence).
    await portico.waitForLine(/"path":"\/loud-1"/);
    const paths = accessLines(portico).map((l) => `${l.host as string}${l.path as string}`);
    expect(paths).toContain("loud.test/loud-1");
    expect(paths.filter((p) => p.startsWith("quiet.test"))).toEqual([]);
    // Both reached the pod: only the line is gone.
    expect(backend.lines().filter((l) => l.includes("/quiet-1") || l.includes("/loud-1"))).toEqual(["GET /quiet-1 HTTP/1.1", "GET /loud-1 HTTP/1.1"]);
  });
});

for (const key of ["disable-access-log", "disable-http-access-log"]) {
  describe(`ConfigMap ${key}: "true"`, () => {
    let m: ConfigMapManifests;
    let portico: Portico;
    beforeAll(async () => {
      m = configMapManifests("portico-access-log-cm-");
      m.writeObjects(yamlDocs(objects({})));
      m.writeConfigMap({ [key]: "true" });
      portico = await startPortico([...m.args]);
    });
    afterAll(async () => {
      await portico?.stop("SIGKILL");
      m?.remove();
    });

    test("requests answer 200 and no access-log line is written", async () => {
      expect((await get(portico.http, "loud.test", `/${key}`)).status).toBe(200);
      // SIGTERM drains and flushes the access log before the process exits: every line it
      // would have written is out by then.
      expect(await portico.stop("SIGTERM")).toBe(0);
      expect(accessLines(portico)).toEqual([]);
    });
  });
}

// disable-stream-access-log turns off nginx's stream block log only (tcp-services and
// udp-services, which Portico does not proxy): HTTP requests are still logged.
describe('ConfigMap disable-stream-access-log: "true"', () => {
  let m: ConfigMapManifests;
  let portico: Portico;
  beforeAll(async () => {
    m = configMapManifests("portico-access-log-stream-");
    m.writeObjects(yamlDocs(objects({})));
    m.writeConfigMap({ "disable-stream-access-log": "true" });
    portico = await startPortico([...m.args]);
  });
  afterAll(async () => {
    await portico?.stop("SIGKILL");
    m?.remove();
  });

  test("requests answer 200 and are still logged", async () => {
    expect((await get(portico.http, "loud.test", "/stream-off")).status).toBe(200);
    await portico.waitForLine(/"path":"\/stream-off"/);
    expect(accessLines(portico).map((l) => [l.host, l.path, l.status])).toEqual([["loud.test", "/stream-off", 200]]);
    // On main the key was reported as not honoured (UnsupportedConfigKey); it is the same now.
    expect(portico.lines.filter((l) => l.includes("UnsupportedConfigKey"))).toEqual([]);
  });
});
