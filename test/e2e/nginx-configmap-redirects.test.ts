// ingress-nginx's ConfigMap keys for redirects, served by the real process from --manifests:
// use-port-in-redirects, preserve-trailing-slash, relative-redirects and no-tls-redirect-locations
// act as their flags, an Ingress's own annotation wins where ingress-nginx lets it, and an edit
// of the ConfigMap applies without a restart. Expectations (kubernetes/ingress-nginx at dbb11b92):
//   LUA  rootfs/etc/nginx/lua/lua_ingress.lua redirect_to_https (force_no_ssl_redirect first) and
//        the redirect URI (one trailing "/" cut unless preserve_trailing_slash; `:<port>` with
//        use_port_in_redirects);
//   TG   internal/ingress/controller/template/template.go buildRedirects' vars:
//        force_no_ssl_redirect = isLocationInLocationList(loc, NoTLSRedirectLocations), a
//        strings.HasPrefix on the path as written;
//   ANN  annotations/portinredirect/main.go and rewrite/main.go: a missing or invalid annotation
//        takes the ConfigMap's value;
//   TPL  rootfs/etc/nginx/template/nginx.tmpl: `absolute_redirect off` in the http block for
//        relative-redirects; `return 301 <url>` for permanent-redirect.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { get, startBackend, startPortico, waitReady, type Backend, configMapManifests, type ConfigMapManifests, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "./objects.ts";
import { eventually } from "../wait.ts";

const N = "nginx.ingress.kubernetes.io/";

let backend: Backend;
let manifests: ConfigMapManifests;
let portico: Portico;


const KEYS = {
  "use-port-in-redirects": "true",
  "preserve-trailing-slash": "true",
  "relative-redirects": "true",
  "no-tls-redirect-locations": "/.well-known/acme-challenge, /public",
};

beforeAll(async () => {
  backend = startBackend("web");
  manifests = configMapManifests("portico-cm-redirects-");
  manifests.writeObjects(yamlDocs([
    ingressClass(),
    service("shop", "web"),
    slice("shop", "web", [backend.port]),
    ingress("shop", "secure", [{ host: "secure.test", paths: [{ path: "/", service: "web" }, { path: "/public", service: "web" }, { path: "/.well-known/acme-challenge", service: "web" }] }], { tls: [{ hosts: ["secure.test"] }] }),
    // Its own annotations: they win over the ConfigMap.
    ingress("shop", "own", [{ host: "own.test", paths: [{ path: "/", service: "web" }] }], {
      tls: [{ hosts: ["own.test"] }],
      annotations: { [`${N}use-port-in-redirects`]: "false", [`${N}preserve-trailing-slash`]: "false" },
    }),
    ingress("shop", "moved", [{ host: "moved.test", paths: [{ path: "/old", service: "web" }] }], { annotations: { [`${N}permanent-redirect`]: "/new" } }),
  ]));
  manifests.writeConfigMap(KEYS);
  portico = await startPortico([...manifests.args, "--access-log", "off"]);
  await waitReady(portico);
});

afterAll(async () => {
  await portico?.stop("SIGKILL");
  backend?.stop();
  manifests?.remove();
});

const answer = async (host: string, path: string) => {
  const r = await get(portico.http, host, path);
  return { status: r.status, location: r.headers.get("location") };
};

describe("ingress-nginx's redirect keys act as their flags", () => {
  test("use-port-in-redirects and preserve-trailing-slash: the HTTPS redirect carries the port and keeps the /", async () => {
    // LUA: `https://<host>:<https port><uri>`, the trailing "/" kept.
    expect(await answer("secure.test", "/docs/")).toEqual({ status: 308, location: `https://secure.test:${portico.ports.https}/docs/` });
  });

  test("an Ingress's own annotations win over the keys", async () => {
    // ANN: the ConfigMap is the fallback only; LUA cuts one trailing "/".
    expect(await answer("own.test", "/docs/")).toEqual({ status: 308, location: "https://own.test/docs" });
  });

  test("no-tls-redirect-locations: a path starting with an entry is served over HTTP", async () => {
    // TG isLocationInLocationList (prefix of the path as written), LUA force_no_ssl_redirect.
    expect((await answer("secure.test", "/public/x")).status).toBe(200);
  });

  test("relative-redirects: a permanent-redirect to /new is sent as written", async () => {
    // TPL absolute_redirect off: nginx does not prefix the scheme and host.
    expect(await answer("moved.test", "/old")).toEqual({ status: 301, location: "/new" });
  });

  test("an edit of the ConfigMap applies without a restart", async () => {
    manifests.writeConfigMap({});
    // ingress-nginx's defaults: no port, one "/" cut, /public redirected, an absolute Location.
    await eventually(async () => (await answer("secure.test", "/docs/")).location === "https://secure.test/docs", 10_000);
    expect(await answer("secure.test", "/public/x")).toEqual({ status: 308, location: "https://secure.test/public/x" });
    expect(await answer("moved.test", "/old")).toEqual({ status: 301, location: "http://moved.test/new" });
    // config.go's default no-tls-redirect-locations: the path cert-manager's solver Ingress adds
    // is served over HTTP; "/" (TG: its path as written is "/") still redirects.
    expect((await answer("secure.test", "/.well-known/acme-challenge/token")).status).toBe(200);
    expect((await answer("secure.test", "/.well-known/other")).status).toBe(308);
    expect(portico.lines.some((l) => /data plane change at the next restart/.test(l))).toBe(false);
  });
});
