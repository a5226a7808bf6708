// Global external authentication, ingress-nginx's ConfigMap keys global-auth-* and the
// annotation enable-global-auth, through the real ConfigMap reader (runtime/nginx-settings.ts),
// the real compiler and a real proxy, with a real auth service and real backends on 127.0.0.1
// (raw sockets that log every byte). One describe per context of ingress-nginx's
// test/e2e/settings/global_external_auth.go at dbb11b92, one test per `It`, same names.
// Expectations come from that file and from what it checks in nginx.conf, read as nginx runs
// it: rootfs/etc/nginx/template/nginx.tmpl (the auth location, written for a location when
// template.go shouldApplyGlobalAuth: no auth-url of its own, global-auth-url set, the Ingress's
// enable-global-auth not false; `auth_request` left out of a no-auth-locations location),
// internal/ingress/controller/template/configmap.go (the keys), template.go buildAuthSignURL.
//
// The auth service runs on 127.0.0.1, which the address policy refuses, so the external-auth
// kind is given, as in test/proxy/external-auth.test.ts, a lookup of auth.test.svc to
// 127.0.0.1 and a check permitting exactly that address; the request is made by the real code.
import { afterEach, describe, expect, test } from "bun:test";
import { compile } from "../../src/compile/compile.ts";
import { createExternalResolver } from "../../src/proxy/upstream/external.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import { createNginxSettings } from "../../src/runtime/nginx-settings.ts";
import { POLICY_KINDS } from "../../src/kinds/registry.ts";
import type { PolicyKind } from "../../src/kinds/types.ts";
import type { Diagnostic } from "../../src/model/diagnostic.ts";
import { lookup } from "../../src/table/lookup.ts";
import * as K from "../../src/kinds/index.ts";
import { loadFixture } from "../compile/snapshot.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "../e2e/objects.ts";
import { externalAuthWith, quietLog, rawRequest, testConfig } from "./helpers.ts";
import { rawBackend, type RawBackend, type RawRequest } from "./raw.ts";

const N = "nginx.ingress.kubernetes.io/";
const HOST = "global-external-auth";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

const reply = (status: string, headers: string[] = [], body = "") =>
  `HTTP/1.1 ${status}\r\n${headers.map((h) => `${h}\r\n`).join("")}content-length: ${body.length}\r\n\r\n${body}`;

/** httpbun's /status/<code>: that status; otherwise 200. */
const httpbun = (r: RawRequest) => {
  const m = /^\S+ \/status\/(\d{3}) /.exec(r.line);
  return m === null ? reply("200 OK") : reply(`${m[1]} Status`);
};

interface Served {
  readonly auth: RawBackend;
  readonly pod: RawBackend;
  /** The ConfigMap's diagnostics and the compiler's. */
  readonly diagnostics: readonly Diagnostic[];
  get(path: string, headers?: Record<string, string>, method?: string): Promise<{ status: number; head: string; fields: Record<string, string[]> }>;
}

async function listen(handlerReply: (r: RawRequest) => string): Promise<RawBackend> {
  const b = await rawBackend(handlerReply);
  cleanup.push(() => b.stop());
  return b;
}

/**
 * Portico with ingress-nginx's ConfigMap `data` (AUTH in a value: the auth service's
 * host:port), the Ingresses `ingresses` (service "echo" is the pod), host HOST.
 */
async function serve(data: Record<string, string>, ingresses: object[], o: { auth?: (r: RawRequest) => string; pod?: (r: RawRequest) => string } = {}): Promise<Served> {
  const auth = await listen(o.auth ?? httpbun);
  const pod = await listen(o.pod ?? (() => reply("200 OK", ["content-type: text/plain"], "ok")));
  const diagnostics: Diagnostic[] = [];
  const settings = createNginxSettings({
    base: testConfig(), explicit: new Set(), ref: { namespace: "ingress-nginx", name: "ingress-nginx-controller" }, log: quietLog,
    onDiagnostics: (d) => diagnostics.push(...d), onCompileConfig: () => {},
  });
  const filled = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, v.replaceAll("AUTH", `auth.test.svc:${auth.port}`)]));
  settings.update({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ingress-nginx", name: "ingress-nginx-controller" }, data: filled });
  const docs = yamlDocs([ingressClass(), service("web", "echo"), slice("web", "echo", [pod.port]), ...(ingresses as Parameters<typeof yamlDocs>[0])]);
  const result = compile(loadFixture(docs).snapshot, settings.config);
  diagnostics.push(...result.diagnostics);
  const resolver = createExternalResolver({
    lookup: async (name) => (name === "auth.test.svc" ? ["127.0.0.1"] : Promise.reject(Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" }))),
    check: (a) => (a === "127.0.0.1" ? null : "not the test address"),
  });
  const kinds = new Map<string, PolicyKind>(POLICY_KINDS);
  kinds.set(K.EXTERNAL_AUTH.id, externalAuthWith({ resolver }));
  const handler = createProxyHandler({ config: testConfig(), table: () => result.table, lookup, log: quietLog, scheme: "http", policyKinds: kinds });
  const server = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
  cleanup.push(() => server.stop(true));
  return {
    auth, pod, diagnostics,
    async get(path, headers = {}, method = "GET") {
      const lines = Object.entries({ host: HOST, ...headers }).map(([k, v]) => `${k}: ${v}\r\n`).join("");
      const raw = await rawRequest(server.port as number, `${method} ${path} HTTP/1.1\r\n${lines}connection: close\r\n\r\n`, 5_000);
      const head = raw.slice(0, raw.indexOf("\r\n\r\n"));
      return { status: Number(head.slice(9, 12)), head, fields: fieldsOf(head) };
    },
  };
}

/** A request head's fields by lower-cased name. */
function fieldsOf(head: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const line of head.split("\r\n").slice(1)) (out[line.slice(0, line.indexOf(":")).toLowerCase()] ??= []).push(line.slice(line.indexOf(":") + 1).trim());
  return out;
}

// global_external_auth.go BeforeEach: foo-ingress (/foo) and bar-ingress (/bar) on one host, the
// echo service behind both, and global-auth-url http://<httpbun>/status/401.
const fooIng = (annotations: Record<string, string> = {}) => ingress("web", "foo-ingress", [{ host: HOST, paths: [{ path: "/foo", service: "echo" }] }], { annotations });
const barIng = (annotations: Record<string, string> = {}) => ingress("web", "bar-ingress", [{ host: HOST, paths: [{ path: "/bar", service: "echo" }] }], { annotations });
const URL_401 = "http://AUTH/status/401";

describe("[Security] global-auth-url: when global external authentication is configured (settings/global_external_auth.go)", () => {
  test("should return status code 401 when request any protected service", async () => {
    const s = await serve({ "global-auth-url": URL_401 }, [fooIng(), barIng()]);
    expect((await s.get("/foo")).status).toBe(401);
    expect((await s.get("/bar")).status).toBe(401);
    expect(s.auth.lines()).toEqual(["GET /status/401 HTTP/1.1", "GET /status/401 HTTP/1.1"]);
    expect(s.pod.hits).toHaveLength(0);
  });

  test("should return status code 200 when request whitelisted (via no-auth-locations) service and 401 when request protected service", async () => {
    const s = await serve({ "global-auth-url": URL_401, "no-auth-locations": "/bar" }, [fooIng(), barIng()]);
    expect((await s.get("/foo")).status).toBe(401);
    expect((await s.get("/bar")).status).toBe(200);
    // nginx.tmpl writes no auth_request into /bar: the auth service is asked for /foo alone.
    expect(s.auth.hits.map((r) => fieldsOf(r.head)["x-original-url"])).toEqual([[`http://${HOST}/foo`]]);
    expect(s.pod.lines()).toEqual(["GET /bar HTTP/1.1"]);
  });

  test("should return status code 200 when request whitelisted (via ingress annotation) service and 401 when request protected service", async () => {
    const s = await serve({ "global-auth-url": URL_401 }, [fooIng(), barIng({ [`${N}enable-global-auth`]: "false" })]);
    expect((await s.get("/foo")).status).toBe(401);
    expect((await s.get("/bar")).status).toBe(200);
    expect(s.auth.hits).toHaveLength(1);
    expect(s.pod.lines()).toEqual(["GET /bar HTTP/1.1"]);
  });

  test("should still return status code 200 after auth backend is deleted using cache", async () => {
    // The Go test's key is `fooHost` ("foo", default_ssl_certificate.go), its duration "200 201 401 30m".
    const s = await serve(
      { "global-auth-url": "http://AUTH/status/200", "global-auth-cache-key": "foo", "global-auth-cache-duration": "200 201 401 30m" },
      [fooIng(), barIng()],
    );
    const basic = { authorization: `Basic ${Buffer.from("user:password").toString("base64")}` };
    expect((await s.get("/bar", basic)).status).toBe(200);
    await s.auth.stop();
    expect((await s.get("/bar", basic)).status).toBe(200);
    expect(s.auth.hits).toHaveLength(1);
    expect(s.pod.lines()).toEqual(["GET /bar HTTP/1.1", "GET /bar HTTP/1.1"]);
  });

  test("should proxy_method method when global-auth-method is configured", async () => {
    // nginx.tmpl: `proxy_method GET` in the auth location, with X-Original-URI and X-Scheme,
    // which the location gets only when a method is set. A POST asks with GET.
    const s = await serve({ "global-auth-url": "http://AUTH/status/200", "global-auth-method": "GET" }, [fooIng(), barIng()]);
    expect((await s.get("/foo?a=b", {}, "POST")).status).toBe(200);
    expect(s.auth.lines()).toEqual(["GET /status/200 HTTP/1.1"]);
    const f = fieldsOf(s.auth.hits[0]!.head);
    expect([f["x-original-uri"], f["x-scheme"], f["x-original-method"]]).toEqual([["/foo?a=b"], ["http"], ["POST"]]);
    expect(s.pod.lines()).toEqual(["POST /foo?a=b HTTP/1.1"]);
  });

  test("should add custom error page when global-auth-signin url is configured", async () => {
    // `error_page 401 = <signin location>`, which answers `return 302` to buildAuthSignURL's
    // `<url>?rd=$pass_access_scheme://$http_host$escaped_request_uri`.
    const s = await serve({ "global-auth-url": URL_401, "global-auth-signin": "http://foo.com/global-error-page" }, [fooIng(), barIng()]);
    const r = await s.get("/foo");
    expect(r.status).toBe(302);
    expect(r.fields.location).toEqual([`http://foo.com/global-error-page?rd=http://${HOST}%2Ffoo`]);
    expect(s.pod.hits).toHaveLength(0);
  });

  test("should add auth headers when global-auth-response-headers is configured", async () => {
    // `auth_request_set $authHeader0 $upstream_http_foo;` and `proxy_set_header 'Foo' $authHeader0;`:
    // the auth answer's fields replace the client's on the upstream request.
    const s = await serve({ "global-auth-url": "http://AUTH/check", "global-auth-response-headers": "Foo, Bar" }, [fooIng(), barIng()], {
      auth: () => reply("200 OK", ["Foo: from-auth", "Bar: also-from-auth"]),
    });
    expect((await s.get("/foo", { foo: "from-client" })).status).toBe(200);
    const f = fieldsOf(s.pod.hits[0]!.head);
    expect([f.foo, f.bar]).toEqual([["from-auth"], ["also-from-auth"]]);
  });

  test("should set request-redirect when global-auth-request-redirect is configured", async () => {
    // `proxy_set_header X-Auth-Request-Redirect Foo-Redirect;` in the auth location.
    const s = await serve({ "global-auth-url": "http://AUTH/status/200", "global-auth-request-redirect": "Foo-Redirect" }, [fooIng(), barIng()]);
    expect((await s.get("/foo")).status).toBe(200);
    expect(fieldsOf(s.auth.hits[0]!.head)["x-auth-request-redirect"]).toEqual(["Foo-Redirect"]);
  });

  test("should set snippet when global external auth is configured (refused: Portico never applies a snippet)", async () => {
    // ingress-nginx writes the text into the auth location; Portico reports the key and sends
    // the auth request without it, the global auth itself still applied.
    const s = await serve({ "global-auth-url": URL_401, "global-auth-snippet": "proxy_set_header My-Custom-Header 42;" }, [fooIng(), barIng()]);
    expect((await s.get("/foo")).status).toBe(401);
    expect(fieldsOf(s.auth.hits[0]!.head)["my-custom-header"]).toBeUndefined();
    expect(s.diagnostics.filter((d) => d.reason === "UnsupportedConfigKey").map((d) => d.message)).toEqual([
      'global-auth-snippet="proxy_set_header My-Custom-Header 42;" is not honoured: snippets are never applied: nginx configuration text (README, snippets)',
    ]);
  });
});

describe("[Security] global-auth-url: cookie set by external authentication server (settings/global_external_auth.go)", () => {
  // The Go test's nginx: /cookies/set/<k>/<v> answers 200 with Set-Cookie k=v (the auth URL),
  // / answers 200, /error answers 503; ing1 routes / and ing2 /error to it.
  const cookieServer = (r: RawRequest) => {
    const m = /^\S+ \/cookies\/set\/([^/ ]*)\/([^/ ]*) /.exec(r.line);
    if (m !== null) return reply("200 OK", [`Set-Cookie: ${m[1]}=${m[2]}`], "OK\n");
    return / \/error[ ?]/.test(r.line) ? reply("503 Service Unavailable") : reply("200 OK");
  };
  const ings = [
    ingress("web", HOST, [{ host: HOST, paths: [{ path: "/", service: "echo" }] }]),
    ingress("web", `${HOST}-error`, [{ host: HOST, paths: [{ path: "/error", service: "echo" }] }]),
  ];
  const url = "http://AUTH/cookies/set/alma/armud";

  test("user retains cookie by default", async () => {
    const s = await serve({ "global-auth-url": url }, ings, { auth: cookieServer, pod: cookieServer });
    const r = await s.get("/?a=b&c=d");
    expect(r.status).toBe(200);
    expect(r.fields["set-cookie"]).toEqual(["alma=armud"]);
  });

  test("user does not retain cookie if upstream returns error status code", async () => {
    const s = await serve({ "global-auth-url": url }, ings, { auth: cookieServer, pod: cookieServer });
    const r = await s.get("/error?a=b&c=d");
    expect(r.status).toBe(503);
    expect(r.fields["set-cookie"]).toBeUndefined();
    // The auth service was asked and set its cookie; nginx's `add_header Set-Cookie $auth_cookie`
    // (without `always`) leaves it off a 503.
    expect(s.auth.lines()).toEqual(["GET /cookies/set/alma/armud HTTP/1.1"]);
    expect(s.pod.lines()).toEqual(["GET /error?a=b&c=d HTTP/1.1"]);
  });

  test("user with global-auth-always-set-cookie key in configmap retains cookie if upstream returns error status code", async () => {
    const s = await serve({ "global-auth-url": url, "global-auth-always-set-cookie": "true" }, ings, { auth: cookieServer, pod: cookieServer });
    const r = await s.get("/error?a=b&c=d");
    expect(r.status).toBe(503);
    expect(r.fields["set-cookie"]).toEqual(["alma=armud"]);
  });
});

describe("global-auth-url: which routes take it, and values that cannot be applied", () => {
  test("an Ingress with its own auth-url asks that one only (template.go shouldApplyGlobalAuth)", async () => {
    const own = await listen(() => reply("200 OK"));
    const s = await serve({ "global-auth-url": URL_401 }, [fooIng({ [`${N}auth-url`]: `http://auth.test.svc:${own.port}/own` }), barIng()]);
    expect((await s.get("/foo")).status).toBe(200);
    expect(own.lines()).toEqual(["GET /own HTTP/1.1"]);
    expect(s.auth.hits).toHaveLength(0);
    expect((await s.get("/bar")).status).toBe(401);
  });

  test("a global-auth-url that cannot be applied refuses the routes it covers (503), said on each Ingress; an opted-out one is served", async () => {
    const s = await serve({ "global-auth-url": "ftp://auth.example/check" }, [fooIng(), barIng({ [`${N}enable-global-auth`]: "false" })]);
    expect((await s.get("/foo")).status).toBe(503);
    expect((await s.get("/bar")).status).toBe(200);
    expect(s.pod.lines()).toEqual(["GET /bar HTTP/1.1"]);
    expect(s.diagnostics.filter((d) => d.reason === "InvalidConfigKey").map((d) => `${d.kind} ${d.namespace}/${d.name}: ${d.message}`)).toEqual([
      'Ingress web/foo-ingress: global-auth-url="ftp://auth.example/check": scheme ftp is not http or https; every request of the route answers 503',
    ]);
  });

  test("an unreadable enable-global-auth counts as true (authreqglobal/main.go), so the route is still authenticated", async () => {
    const s = await serve({ "global-auth-url": URL_401 }, [fooIng({ [`${N}enable-global-auth`]: "nope" })]);
    expect((await s.get("/foo")).status).toBe(401);
    expect(s.pod.hits).toHaveLength(0);
  });
});
