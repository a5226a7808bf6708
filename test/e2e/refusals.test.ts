// Fail-closed refusals on the real process, from the fake API server: a snippet that is not
// known to be harmless refuses its Ingress's paths (503) and the raw backend behind them never
// receives a byte, while a snippet of header and timeout directives leaves its route served;
// an auth-url on a loopback address is refused when the Ingress is read, and the refusal,
// naming the address and the reason, is a log line and an Event on the Ingress
// (docs/design.md, "Annotations and policies").
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { rawBackend, type RawBackend } from "../proxy/raw.ts";
import { get, startPortico, waitReady, type Portico } from "./harness.ts";
import { ingress, ingressClass, kubeconfig, service, slice } from "./objects.ts";
import { eventually } from "../wait.ts";

const N = "nginx.ingress.kubernetes.io/";

// Each of these kept requests from the backend where ingress-nginx ran snippets.
const REFUSED: Record<string, [string, string]> = {
  apikey: ["configuration-snippet", 'if ($http_x_api_key != "s3cr3t") { return 444; }'],
  actuator: ["server-snippet", 'location ~* "^/actuator" { return 404; }'],
  internal: ["configuration-snippet", "location /x { internal; }"],
  lua: ["configuration-snippet", "access_by_lua_file /etc/nginx/lua/gate.lua;"],
  mtls: ["server-snippet", "ssl_verify_client on;"],
  cookie: ["configuration-snippet", 'if ($cookie_session = "") { return 302 https://login.example.com/; }'],
  gone: ["configuration-snippet", "return 410;"],
};

describe("refusals on a running Portico", () => {
  let api: FakeApiServer;
  let portico: Portico;
  let backend: RawBackend;
  let auth: RawBackend;
  let dir: string;

  beforeAll(async () => {
    backend = await rawBackend();
    auth = await rawBackend();
    dir = mkdtempSync(join(tmpdir(), "portico-refusals-"));
    api = await startFakeApiServer({ token: "t", bookmarkIntervalMs: 500 });
    for (const o of [ingressClass(), service("shop", "web"), slice("shop", "web", [backend.port])]) api.create(o.kind as string, o);
    for (const [name, [annotation, text]] of Object.entries(REFUSED)) {
      api.create("Ingress", ingress("shop", name, [{ host: `${name}.test`, paths: [{ path: "/", service: "web" }] }], { annotations: { [`${N}${annotation}`]: text } }));
    }
    api.create("Ingress", ingress("shop", "headers", [{ host: "headers.test", paths: [{ path: "/", service: "web" }] }], {
      annotations: { [`${N}configuration-snippet`]: 'more_set_headers "X-Frame-Options: DENY";\nproxy_read_timeout 120s;\nclient_max_body_size 8m;' },
    }));
    api.create("Ingress", ingress("shop", "auth-loopback", [{ host: "auth.test", paths: [{ path: "/", service: "web" }] }], {
      annotations: { [`${N}auth-url`]: `http://127.0.0.1:${auth.port}/check` },
    }));
    const kc = join(dir, "kubeconfig");
    writeFileSync(kc, kubeconfig(api.url, "t"));
    portico = await startPortico(["--kubeconfig", kc, "--election-namespace", "default", "--access-log", "off"], { env: { POD_NAME: "portico-refusals-0" } });
    await waitReady(portico);
  });
  afterAll(async () => {
    await portico?.stop("SIGKILL");
    await api?.stop();
    await backend?.stop();
    await auth?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("a harmless snippet leaves its route served", async () => {
    expect((await get(portico.http, "headers.test", "/actuator/env")).status).toBe(200);
    expect(backend.lines()).toEqual(["GET /actuator/env HTTP/1.1"]);
  });

  test.each(Object.keys(REFUSED))("%s: 503, the backend receives nothing", async (name) => {
    const before = backend.lines().length;
    expect((await get(portico.http, `${name}.test`, "/actuator/env")).status).toBe(503);
    expect(backend.lines().length).toBe(before);
  });

  test("an auth-url on loopback: 503, never connected to; a log line and an Event name the address and the reason", async () => {
    expect((await get(portico.http, "auth.test", "/")).status).toBe(503);
    expect(auth.conns).toHaveLength(0);
    const line = await portico.waitForLine(/auth-loopback.*127\.0\.0\.1 is refused \(loopback\)/, 10_000);
    expect(line).toContain("InvalidAnnotation");
    await eventually(() =>
        api.list("Event").some((e) => {
          const ev = e as { regarding?: { name?: string; namespace?: string }; reason?: string; note?: string };
          return ev.regarding?.namespace === "shop" && ev.regarding?.name === "auth-loopback" && ev.reason === "InvalidAnnotation" && (ev.note ?? "").includes("127.0.0.1 is refused (loopback)");
        }), 10_000);
    expect(auth.conns).toHaveLength(0);
  });
});
