// ingress-nginx's ConfigMap keys no-auth-locations and server-tokens, served by the real process
// with --ingress-nginx-compat from --manifests, and edited while it serves. Expectations
// (kubernetes/ingress-nginx at dbb11b92):
//   NAL  test/e2e/settings/no_auth_locations.go: a basic-auth Ingress (realm "test auth") with
//        the paths / and /noauth, and `no-auth-locations: /noauth`: "/" without credentials is
//        401 with "401 Authorization Required", with them 200; "/noauth" is 200 (the Go test
//        sends credentials there too; the exemption is what lets a request without them in);
//   TPL  rootfs/etc/nginx/template/nginx.tmpl: auth_basic and auth_request are written only
//        `if not (isLocationInLocationList $location $all.Cfg.NoAuthLocations)`; template.go
//        isLocationInLocationList is strings.HasPrefix on the location's path as written;
//        config.go NewDefault: NoAuthLocations "/.well-known/acme-challenge";
//   ST   test/e2e/settings/server_tokens.go: server-tokens false writes `server_tokens off` and
//        `more_clear_headers Server` (no Server field at all); true writes `server_tokens on`
//        (nginx's own Server field, with its version). Portico names itself: portico/<version>.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { VERSION } from "../../src/version.ts";
import { rawRequest } from "../proxy/helpers.ts";
import { rawBackend, type RawBackend } from "../proxy/raw.ts";
import { eventually } from "../wait.ts";
import { startPortico, waitReady, configMapManifests, type ConfigMapManifests, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";

const N = "nginx.ingress.kubernetes.io/";
// no_auth_locations.go buildSecret: "<user>:<bcrypt>" under `auth`; cost 4 (the Go test: 14) only to be quick.
const HASH = await Bun.password.hash("bar", { algorithm: "bcrypt", cost: 4 });
const CREDENTIALS = `Basic ${Buffer.from("foo:bar").toString("base64")}`;

let pod: RawBackend;
let manifests: ConfigMapManifests;
let portico: Portico;


beforeAll(async () => {
  pod = await rawBackend(() => "HTTP/1.1 200 OK\r\nServer: gunicorn/21.2.0\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
  manifests = configMapManifests("portico-cm-auth-server-");
  manifests.writeObjects(yamlDocs([
    ingressClass(),
    service("web", "echo"),
    slice("web", "echo", [pod.port]),
    {
      apiVersion: "v1", kind: "Secret", type: "Opaque", metadata: { name: "test-secret", namespace: "web" },
      data: { auth: Buffer.from(`foo:${HASH}\n`).toString("base64") },
    },
    ingress("web", "no-auth-locations", [{
      host: "no-auth-locations",
      paths: [{ path: "/", service: "echo" }, { path: "/noauth", service: "echo" }, { path: "/.well-known/acme-challenge", service: "echo" }],
    }], { annotations: { [`${N}auth-type`]: "basic", [`${N}auth-secret`]: "test-secret", [`${N}auth-realm`]: "test auth" } }),
  ]));
  manifests.writeConfigMap({ "no-auth-locations": "/noauth" });
  portico = await startPortico([
    ...manifests.args, "--access-log", "off",
    // compat's class flags would name the nginx IngressClass; these objects use Portico's.
    "--ingress-nginx-compat", "--ingress-class", "portico", "--controller-name", "portico.dev/ingress-controller",
  ]);
  await waitReady(portico);
});

afterAll(async () => {
  await portico?.stop("SIGKILL");
  await pod?.stop();
  manifests?.remove();
});

interface Answer {
  readonly status: number;
  readonly server: string[];
  readonly body: string;
}

async function ask(host: string, path: string, authorization: string | null = null): Promise<Answer> {
  const auth = authorization === null ? "" : `Authorization: ${authorization}\r\n`;
  const raw = await rawRequest(portico.ports.http, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${auth}Connection: close\r\n\r\n`, 10_000);
  const end = raw.indexOf("\r\n\r\n");
  const lines = raw.slice(0, end).split("\r\n");
  return {
    status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(lines[0] ?? "")?.[1] ?? 0),
    server: lines.slice(1).filter((l) => /^server:/i.test(l)).map((l) => l.slice(l.indexOf(":") + 1).trim()),
    body: raw.slice(end + 4),
  };
}

describe("no-auth-locations (settings/no_auth_locations.go)", () => {
  test("should return status code 401 when accessing '/' unauthentication", async () => {
    const a = await ask("no-auth-locations", "/");
    expect(a.status).toBe(401);
    expect(a.body).toContain("401 Authorization Required");
    expect(pod.hits.length).toBe(0);
  });

  test("should return status code 200 when accessing '/'  authentication", async () => {
    expect((await ask("no-auth-locations", "/", CREDENTIALS)).status).toBe(200);
  });

  test("should return status code 200 when accessing '/noauth' unauthenticated", async () => {
    // The Go test sends credentials; without them the location must still answer 200 (TPL: no auth_basic there).
    expect((await ask("no-auth-locations", "/noauth", CREDENTIALS)).status).toBe(200);
    expect((await ask("no-auth-locations", "/noauth")).status).toBe(200);
    expect((await ask("no-auth-locations", "/noauth/deeper")).status).toBe(200);
  });

  test("the key replaces the default list: /.well-known/acme-challenge is authenticated while it is not listed", async () => {
    expect((await ask("no-auth-locations", "/.well-known/acme-challenge/token")).status).toBe(401);
  });

  test("an edit applies without a restart; without the key, config.go's default exempts the ACME path again", async () => {
    manifests.writeConfigMap({});
    await eventually(async () => (await ask("no-auth-locations", "/noauth")).status === 401, 10_000, "/noauth authenticated again");
    expect((await ask("no-auth-locations", "/.well-known/acme-challenge/token")).status).toBe(200);
    expect((await ask("no-auth-locations", "/")).status).toBe(401);
    manifests.writeConfigMap({ "no-auth-locations": "/noauth" });
    await eventually(async () => (await ask("no-auth-locations", "/noauth")).status === 200, 10_000, "/noauth exempt again");
  });
});

describe("server-tokens (settings/server_tokens.go)", () => {
  test("should not exists Server header in the response (ingress-nginx's default; the pod sends one)", async () => {
    const proxied = await ask("no-auth-locations", "/noauth");
    const own = await ask("elsewhere.test", "/");
    expect([proxied.status, own.status]).toEqual([200, 404]);
    expect([proxied.server, own.server]).toEqual([[], []]);
    manifests.writeConfigMap({ "no-auth-locations": "/noauth", "server-tokens": "false" });
    await eventually(() => portico.lines.some((l) => l.includes("--server-header=none")), 10_000, "server-tokens false applied");
    expect((await ask("no-auth-locations", "/noauth")).server).toEqual([]);
  });

  test("should exists Server header in the response when is enabled (Portico's name and version, the pod's replaced)", async () => {
    manifests.writeConfigMap({ "no-auth-locations": "/noauth", "server-tokens": "true" });
    await eventually(async () => (await ask("no-auth-locations", "/noauth")).server.length > 0, 10_000, "server-tokens true applied");
    const proxied = await ask("no-auth-locations", "/noauth");
    const challenged = await ask("no-auth-locations", "/");
    const own = await ask("elsewhere.test", "/");
    expect([proxied.status, challenged.status, own.status]).toEqual([200, 401, 404]);
    expect([proxied.server, challenged.server, own.server]).toEqual([[`portico/${VERSION}`], [`portico/${VERSION}`], [`portico/${VERSION}`]]);
    expect(portico.lines.some((l) => /data plane change at the next restart/.test(l))).toBe(false);
  });
});
