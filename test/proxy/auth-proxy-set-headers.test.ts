// auth-proxy-set-headers end to end, in one process: the fake API server, the real list+watch
// source (with the ConfigMaps named by reference, kube/configmap-refs.ts), the real controller
// (store, coalescer, compiler) and the real proxy handler on 127.0.0.1, with a raw-socket auth
// service that logs the bytes of every auth request. Expectations come from ingress-nginx at
// dbb11b92: internal/ingress/annotations/authreq/main.go (how the ConfigMap is found and
// checked), buildAuthProxySetHeaders in internal/ingress/controller/template/template.go and
// the auth location of rootfs/etc/nginx/template/nginx.tmpl (each entry becomes
// `proxy_set_header "NAME" "VALUE";` there), and test/e2e/annotations/auth.go.
//
// Injected, as in test/proxy/external-auth.test.ts: the auth service runs on 127.0.0.1, which
// the address policy refuses, so the external-auth kind gets a lookup of auth.test.svc to
// 127.0.0.1 and a check permitting exactly that address. Everything else is the real code.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startFakeApiServer, type FakeApiServer } from "../fake-apiserver.ts";
import { ingress, ingressClass, service, slice } from "../e2e/objects.ts";
import { headFields, rawBackend, type RawBackend } from "./raw.ts";
import { rawRequest, startWatchedAuthProxy, statusLine } from "./helpers.ts";
import { eventually } from "../wait.ts";
import type { KubeSource } from "../../src/kube/watch.ts";
import type { Controller } from "../../src/runtime/controller.ts";

const N = "nginx.ingress.kubernetes.io/";
const NS = "shop";

const configMap = (name: string, data: Record<string, string>, resourceVersion?: string) => ({
  apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: NS, ...(resourceVersion ? { resourceVersion } : {}) }, data,
});

let api: FakeApiServer;
let auth: RawBackend;
let backend: RawBackend;
let controller: Controller;
let source: KubeSource;
let server: { port: number | undefined; stop(force?: boolean): unknown };
let stopProxy: (() => Promise<void>) | undefined;

/** An Ingress for `host` asking the auth service, with auth-proxy-set-headers set to `headers`. */
const authIngress = (name: string, host: string, headers: string) =>
  ingress(NS, name, [{ host, paths: [{ path: "/", service: "web" }] }], {
    annotations: { [`${N}auth-url`]: `http://auth.test.svc:${auth.port}/check`, [`${N}auth-proxy-set-headers`]: headers },
  });

async function send(host: string, path = "/", headers: Record<string, string> = {}): Promise<number> {
  const lines = Object.entries({ host, ...headers }).map(([k, v]) => `${k}: ${v}\r\n`).join("");
  return statusLine(await rawRequest(server.port as number, `GET ${path} HTTP/1.1\r\n${lines}connection: close\r\n\r\n`, 5_000));
}

/** The auth request's fields (lower-cased name → every value), from the bytes the auth service received. */
function lastAuthFields(): Record<string, string[]> {
  return headFields(auth.requests().at(-1)?.head ?? "");
}

beforeAll(async () => {
  auth = await rawBackend(() => "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
  backend = await rawBackend();
  api = await startFakeApiServer({ token: "t", bookmarkIntervalMs: 500 });
  api.create("IngressClass", ingressClass());
  api.create("Service", service(NS, "web"));
  api.create("EndpointSlice", slice(NS, "web", [backend.port]));
  api.create("ConfigMap", configMap("auth-headers", {
    "My-Custom-Header": "42", "X-Client-Host": "$host", "X-Who": "${request_method} $http_x_user/$cookie_session",
    "X-Empty": "", "X-Forwarded-For": "203.0.113.9",
  }));
  api.create("ConfigMap", configMap("bad-var", { "X-Path": "$uri" }));
  api.create("ConfigMap", configMap("user-header", { "X-User": "$remote_user", "X-Fixed": "1" }));
  // A ConfigMap no Ingress names: never listed, watched or held.
  api.create("ConfigMap", configMap("unrelated", { big: "x".repeat(1000) }));
  api.create("ConfigMap", configMap("bad-name", { "My.Header": "1" }));
  api.create("Ingress", authIngress("headers", "headers.test", `${NS}/auth-headers`));
  api.create("Ingress", authIngress("missing", "missing.test", `${NS}/absent`));
  api.create("Ingress", authIngress("bad-name", "bad-name.test", `${NS}/bad-name`));
  api.create("Ingress", authIngress("bad-var", "bad-var.test", `${NS}/bad-var`));
  api.create("Ingress", authIngress("user", "user.test", `${NS}/user-header`));
  // ingress-nginx looks the value up as written: a bare name is never found (503).
  api.create("Ingress", authIngress("bare", "bare.test", "auth-headers"));

  ({ controller, source, server, stop: stopProxy } = await startWatchedAuthProxy(api.url, "portico-authcm-", 10_000));
});

afterAll(async () => {
  await stopProxy?.();
  await api?.stop();
  await auth?.stop();
  await backend?.stop();
});

describe("auth-proxy-set-headers through the API server's watch", () => {
  test("the ConfigMap's entries reach the auth service, from the first table on (auth.go: proxy_set_header \"My-Custom-Header\" \"42\")", async () => {
    // test/e2e/annotations/auth.go `should set "proxy_set_header "My-Custom-Header" "42";"
    // when auth-headers are set`: the value `<namespace>/auth-headers` names a ConfigMap of
    // the Ingress's namespace, whose entry is written into the auth location. nginx expands
    // the variable in a value (the line is a quoted nginx string): $host is the request's host.
    const client = { "my-custom-header": "from-the-client", "x-user": "ann", cookie: "a=1; session=s3", "x-empty": "client" };
    expect(await send("headers.test", "/a?b=c", client)).toBe(200);
    const f = lastAuthFields();
    // proxy_set_header replaces the client's field of that name.
    expect(f["my-custom-header"]).toEqual(["42"]);
    expect(f["x-client-host"]).toEqual(["headers.test"]);
    expect(f["x-who"]).toEqual(["GET ann/s3"]);
    // An empty value sends no field, the client's included (nginx's proxy_set_header).
    expect(f["x-empty"]).toBeUndefined();
    // The template's own X-Forwarded-For ($remote_addr) stays; the entry is left out with a warning.
    expect(f["x-forwarded-for"]).toEqual(["127.0.0.1"]);
    expect(controller.diagnostics().find((x) => x.name === "headers")?.message).toContain("X-Forwarded-For is left out");
    expect(f["x-sent-from"]).toEqual(["nginx-ingress-controller"]);
    expect(backend.requests().at(-1)?.line).toBe("GET /a?b=c HTTP/1.1");
  });

  test("editing the ConfigMap changes the headers without a restart; deleting it refuses (503), creating it again serves", async () => {
    const cur = api.get("ConfigMap", NS, "auth-headers")!;
    api.update("ConfigMap", configMap("auth-headers", { "My-Custom-Header": "43" }, cur.metadata.resourceVersion as string));
    await eventually(async () => (await send("headers.test")) === 200 && lastAuthFields()["my-custom-header"]?.[0] === "43", 10_000, "the new value at the auth service");
    expect(lastAuthFields()["x-client-host"]).toBeUndefined();
    // authreq: a ConfigMap it cannot find denies the location (503). ingress-nginx's store has
    // no delete handler for ConfigMaps and keeps the old headers until the Ingress is synced
    // again; Portico follows the object as it is now.
    api.delete("ConfigMap", NS, "auth-headers");
    await eventually(async () => (await send("headers.test")) === 503, 10_000, "503 once the ConfigMap is gone");
    const asked = auth.requests().length;
    expect(await send("headers.test")).toBe(503);
    expect(auth.requests().length).toBe(asked);
    api.create("ConfigMap", configMap("auth-headers", { "My-Custom-Header": "44" }));
    await eventually(async () => (await send("headers.test")) === 200 && lastAuthFields()["my-custom-header"]?.[0] === "44", 10_000, "served again");
  });

  test("a ConfigMap that does not exist: every request 503, the auth service never asked (authreq: `unable to find configMap`)", async () => {
    // authreq.Parse: GetConfigMap fails → ing_errors.NewLocationDenied → nginx.tmpl's denied
    // location returns 503.
    const asked = auth.requests().length;
    expect(await send("missing.test")).toBe(503);
    expect(auth.requests().length).toBe(asked);
    const d = controller.diagnostics().find((x) => x.name === "missing");
    expect(d?.message).toContain(`ConfigMap "${NS}/absent" (${N}auth-proxy-set-headers) not found`);
  });

  test("a key that is no header name: every request 503 (authreq: `invalid proxy-set-headers in configmap`)", async () => {
    // authreq.Parse checks every key with headerRegexp `^[a-zA-Z\d\-_]+$`; "My.Header" (a valid
    // ConfigMap key) fails it → ing_errors.NewLocationDenied → 503.
    const asked = auth.requests().length;
    expect(await send("bad-name.test")).toBe(503);
    expect(auth.requests().length).toBe(asked);
    expect(controller.diagnostics().find((x) => x.name === "bad-name")?.message).toContain(`"My.Header" is not a header name`);
  });

  test("a variable nginx would evaluate for the auth location itself ($uri), or a bare ConfigMap name: 503 with a diagnostic", async () => {
    const asked = auth.requests().length;
    expect(await send("bad-var.test")).toBe(503);
    expect(controller.diagnostics().find((x) => x.name === "bad-var")?.message).toContain("the variable $uri is not supported");
    // authreq.Parse: `GetConfigMap("auth-headers")` misses the store's `namespace/name` keys.
    expect(await send("bare.test")).toBe(503);
    expect(controller.diagnostics().find((x) => x.name === "bare")?.message).toContain(`found only as ${NS}/auth-headers`);
    expect(auth.requests().length).toBe(asked);
  });

  test("a $remote_user holding CR/LF (Basic YQ0KOnA= is \"a\\r\\n:p\") sends no such field; the request is still asked and served", async () => {
    // The decoded user name is client bytes; a rendered value that is not valid field text
    // (RFC 9110 section 5.5) is left out, as proxy-set-headers values are
    // (proxy/pipeline/global-headers.ts), rather than failing the request.
    const asked = auth.requests().length;
    expect(await send("user.test", "/", { authorization: "Basic YQ0KOnA=" })).toBe(200);
    expect(auth.requests().length).toBe(asked + 1);
    const f = lastAuthFields();
    expect(f["x-user"]).toBeUndefined();
    expect(f["x-fixed"]).toEqual(["1"]);
    // A CR/LF inside the name ("a\r\nb:p"): still asked, still served, no field.
    expect(await send("user.test", "/", { authorization: `Basic ${btoa("a\r\nb:p")}` })).toBe(200);
    expect(auth.requests().length).toBe(asked + 2);
    expect(lastAuthFields()["x-user"]).toBeUndefined();
    expect(lastAuthFields()["x-fixed"]).toEqual(["1"]);
    // A clean user name is still sent: "ann:p".
    expect(await send("user.test", "/", { authorization: `Basic ${btoa("ann:p")}` })).toBe(200);
    expect(lastAuthFields()["x-user"]).toEqual(["ann"]);
  });

  test("only the named ConfigMaps are asked for, each by name, and only they are held", async () => {
    const paths = api.requests.filter((r) => r.path.includes("/configmaps"));
    expect(paths.length).toBeGreaterThan(0);
    for (const r of paths) expect(r.path).toBe(`/api/v1/namespaces/${NS}/configmaps`);
    // Each named ConfigMap asked for by its name, and nothing else.
    const selectors = new Set(paths.map((r) => new URLSearchParams(r.query).get("fieldSelector")));
    expect([...selectors].sort()).toEqual(["auth-headers", "absent", "bad-name", "bad-var", "user-header"].map((n) => `metadata.name=${n}`).sort());
    expect([...controller.store.view("ConfigMap").keys()].sort()).toEqual([`${NS}/auth-headers`, `${NS}/bad-name`, `${NS}/bad-var`, `${NS}/user-header`]);
  });

  test("an Ingress that stops naming a ConfigMap lets it go", async () => {
    const cur = api.get("Ingress", NS, "bad-name")!;
    const meta = cur.metadata as unknown as { annotations: Record<string, string> };
    delete meta.annotations[`${N}auth-proxy-set-headers`];
    api.update("Ingress", cur);
    await eventually(async () => (await send("bad-name.test")) === 200, 10_000, "served without the headers");
    await eventually(() => !controller.store.view("ConfigMap").has(`${NS}/bad-name`), 5_000, "the ConfigMap dropped");
  });
});
