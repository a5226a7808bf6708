// ingress-nginx's ConfigMap key global-auth-url served by the real process from --manifests,
// and edited while it serves, as test/e2e/settings/global_external_auth.go edits the
// controller's ConfigMap (kubernetes/ingress-nginx at dbb11b92): foo-ingress (/foo) and
// bar-ingress (/bar) on one host; nginx.tmpl gives each location the global auth location unless
// the Ingress sets enable-global-auth: "false" (template.go shouldApplyGlobalAuth) or the path is
// in no-auth-locations (auth_request left out).
//
// The auth service is never reached here: its name (auth.invalid, RFC 6761 §6.4) resolves to
// nothing, so a request that asks it answers 500 (nginx's auth_request when the auth service
// cannot be reached), which tells an authenticated route from an open one (200). What the auth
// service receives and what its answers do is checked against a real one in
// test/proxy/global-auth.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rawRequest } from "../proxy/helpers.ts";
import { rawBackend, type RawBackend } from "../proxy/raw.ts";
import { eventually } from "../wait.ts";
import { startPortico, waitReady, configMapManifests, type ConfigMapManifests, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";

const N = "nginx.ingress.kubernetes.io/";
const HOST = "global-external-auth";

let pod: RawBackend;
let manifests: ConfigMapManifests;
let portico: Portico;


const objects = (barAnnotations: Record<string, string>) =>
  yamlDocs([
    ingressClass(),
    service("web", "echo"),
    slice("web", "echo", [pod.port]),
    ingress("web", "foo-ingress", [{ host: HOST, paths: [{ path: "/foo", service: "echo" }] }]),
    ingress("web", "bar-ingress", [{ host: HOST, paths: [{ path: "/bar", service: "echo" }] }], { annotations: barAnnotations }),
  ]);

beforeAll(async () => {
  pod = await rawBackend();
  manifests = configMapManifests("portico-cm-global-auth-");
  manifests.writeObjects(objects({}));
  manifests.writeConfigMap({});
  portico = await startPortico([...manifests.args, "--access-log", "off"]);
  await waitReady(portico);
});

afterAll(async () => {
  await portico?.stop("SIGKILL");
  await pod?.stop();
  manifests?.remove();
});

async function status(path: string): Promise<number> {
  const raw = await rawRequest(portico.ports.http, `GET ${path} HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`, 10_000);
  return Number(/^HTTP\/1\.1 (\d{3}) /.exec(raw)?.[1] ?? 0);
}

const both = async () => ({ foo: await status("/foo"), bar: await status("/bar") });

describe("[Security] global-auth-url, edited while serving (settings/global_external_auth.go)", () => {
  test("set: every location asks the auth service; no-auth-locations and enable-global-auth: \"false\" exempt theirs; removed: open again", async () => {
    expect(await both()).toEqual({ foo: 200, bar: 200 });
    manifests.writeConfigMap({ "global-auth-url": "http://auth.invalid/status/401" });
    await eventually(async () => (await status("/foo")) === 500, 15_000, "/foo asks the auth service");
    expect(await both()).toEqual({ foo: 500, bar: 500 });

    manifests.writeConfigMap({ "global-auth-url": "http://auth.invalid/status/401", "no-auth-locations": "/bar" });
    await eventually(async () => (await status("/bar")) === 200, 15_000, "/bar exempt by no-auth-locations");
    expect(await both()).toEqual({ foo: 500, bar: 200 });

    manifests.writeConfigMap({ "global-auth-url": "http://auth.invalid/status/401" });
    manifests.writeObjects(objects({ [`${N}enable-global-auth`]: "false" }));
    await eventually(async () => JSON.stringify(await both()) === JSON.stringify({ foo: 500, bar: 200 }), 15_000, "/bar opted out by its annotation");

    manifests.writeConfigMap({});
    await eventually(async () => (await status("/foo")) === 200, 15_000, "no global auth without the key");
    expect(await both()).toEqual({ foo: 200, bar: 200 });
    expect(portico.proc.exitCode).toBeNull();
  });
});
