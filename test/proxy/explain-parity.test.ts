// Explain says what the proxy does to a request, and the proxy does it: for Ingresses with the
// annotations people migrate with (canary, rewrite-target with regex captures and
// x-forwarded-prefix, app-root, permanent-redirect, ssl-redirect, auth-url, source ranges,
// use-regex ordering, request-headers and upstream-vhost, a default backend) and an HTTPRoute
// with filters (URLRewrite, RequestHeaderModifier, RequestRedirect), each request is explained
// and then sent for real to the proxy's handler on a real listener, with a raw-socket backend
// per Service logging the request it gets. The status and Location must be explain's
// `response`; a proxied request must reach a backend explain names, with the request line,
// Host and fields explain's `response.upstream` claims (compile/answer.ts upstreamOf).
// test/proxy/explain-answers.test.ts checks the answers over every fixture; this file checks
// what reaches the backend, and the exact answers ingress-nginx gives for these cases.
//
// The auth service runs on 127.0.0.1, which the address policy refuses: as in
// test/proxy/external-auth.test.ts, the name auth.test.svc is looked up as 127.0.0.1 and a
// check permits exactly that address, so the real code makes the auth request.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { compile, Compiler } from "../../src/compile/compile.ts";
import { explain, type ExplainResult } from "../../src/compile/explain.ts";
import type { AnswerKind } from "../../src/compile/answer.ts";
import { silentLogger } from "../../src/log/logger.ts";
import { POLICY_KINDS } from "../../src/kinds/registry.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { startHttpListener } from "../../src/proxy/pipeline/listener.ts";
import { createExternalResolver } from "../../src/proxy/upstream/external.ts";
import type { Snapshot } from "../../src/store/types.ts";
import { lookup } from "../../src/table/lookup.ts";
import type { RouteTable } from "../../src/table/types.ts";
import * as K from "../../src/kinds/index.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import { loadFixture } from "../compile/snapshot.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "../e2e/objects.ts";
import { externalAuthWith, rawRequest, statusLine, testConfig, withCaps } from "./helpers.ts";
import { createAuthCache } from "../../src/proxy/policies/caps.ts";
import { PORTICO_SERVER } from "../../src/http/headers.ts";
import { namedBackend, rawBackend, type RawBackend } from "./raw.ts";

const N = "nginx.ingress.kubernetes.io/";
const NS = "par";
const SERVICES = ["web", "api", "canary", "fallback", "gw-a", "gw-b"] as const;
const backends = new Map<string, RawBackend>();
let auth: RawBackend;
/** The handler of each port behind a plain listener: "https" is the TLS port's (the client's scheme is https). */
const listeners = new Map<"http" | "https", ReturnType<typeof startHttpListener>>();
let table: RouteTable;
let snapshot: Snapshot;
let compiler: Compiler;
const config = { ...DEFAULT_COMPILE_CONFIG, httpRedirectCode: testConfig().httpRedirectCode, httpsPort: testConfig().httpsPort };

const ann = (a: Record<string, string>) => Object.fromEntries(Object.entries(a).map(([k, v]) => [k.includes("/") ? k : `${N}${k}`, v]));

function objects(authPort: number): string {
  const gateway = [
    { apiVersion: "gateway.networking.k8s.io/v1", kind: "GatewayClass", metadata: { name: "portico" }, spec: { controllerName: "portico.dev/gateway-controller" } },
    { apiVersion: "gateway.networking.k8s.io/v1", kind: "Gateway", metadata: { name: "edge", namespace: NS }, spec: { gatewayClassName: "portico", listeners: [{ name: "http", port: 80, protocol: "HTTP" }] } },
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "HTTPRoute",
      metadata: { name: "gw", namespace: NS },
      spec: {
        parentRefs: [{ name: "edge" }],
        hostnames: ["gw.test"],
        rules: [
          {
            matches: [{ path: { type: "PathPrefix", value: "/v1" } }],
            filters: [
              { type: "URLRewrite", urlRewrite: { hostname: "backend.internal", path: { type: "ReplacePrefixMatch", replacePrefixMatch: "/v2" } } },
              { type: "RequestHeaderModifier", requestHeaderModifier: { set: [{ name: "X-Env", value: "prod" }], add: [{ name: "X-Via", value: "gw" }], remove: ["X-Remove"] } },
            ],
            backendRefs: [{ name: "gw-a", port: 80 }],
          },
          { matches: [{ path: { type: "Exact", value: "/full" } }], filters: [{ type: "URLRewrite", urlRewrite: { path: { type: "ReplaceFullPath", replaceFullPath: "/replaced" } } }], backendRefs: [{ name: "gw-b", port: 80 }] },
          { matches: [{ path: { type: "PathPrefix", value: "/moved" } }], filters: [{ type: "RequestRedirect", requestRedirect: { hostname: "new.test", statusCode: 301 } }] },
          { matches: [{ path: { type: "PathPrefix", value: "/" } }], backendRefs: [{ name: "gw-b", port: 80 }] },
        ],
      },
    },
  ];
  return yamlDocs([
    ingressClass(),
    ...SERVICES.flatMap((s) => [service(NS, s), slice(NS, s, [(backends.get(s) as RawBackend).port])]),
    // canary.go: canary-weight 100 sends every request to the canary; a canary-by-header
    // canary is not chosen for a request without the header.
    ingress(NS, "main", [{ host: "canary.test", paths: [{ path: "/", service: "web" }] }]),
    ingress(NS, "canary-all", [{ host: "canary.test", paths: [{ path: "/", service: "canary" }] }], { annotations: ann({ canary: "true", "canary-weight": "100" }) }),
    ingress(NS, "main-h", [{ host: "canary-h.test", paths: [{ path: "/", service: "web" }] }]),
    ingress(NS, "canary-h", [{ host: "canary-h.test", paths: [{ path: "/", service: "canary" }] }], { annotations: ann({ canary: "true", "canary-by-header": "X-Canary" }) }),
    // rewrite.go, xforwardedprefix.go: `/$2` of `/api(/|$)(.*)` with X-Forwarded-Prefix.
    ingress(NS, "rewrite", [{ host: "rw.test", paths: [{ path: "/api(/|$)(.*)", type: "ImplementationSpecific", service: "api" }] }], {
      annotations: ann({ "use-regex": "true", "rewrite-target": "/$2", "x-forwarded-prefix": "/api" }),
    }),
    // approot.go: "/" answers 302 to the app root; other paths are proxied.
    ingress(NS, "approot", [{ host: "approot.test", paths: [{ path: "/", service: "web" }] }], { annotations: ann({ "app-root": "/foo" }) }),
    // redirect.go: permanent-redirect answers 301 with the URL as Location.
    ingress(NS, "moved", [{ host: "perm.test", paths: [{ path: "/", service: "web" }] }], { annotations: ann({ "permanent-redirect": "http://new.example.com/landing" }) }),
    // sslredirect: a host in spec.tls is redirected from HTTP (308 here: --http-redirect-code).
    ingress(NS, "secure", [{ host: "secure.test", paths: [{ path: "/", service: "web" }] }], { tls: [{ hosts: ["secure.test"] }] }),
    ingress(NS, "checked", [{ host: "auth.test", paths: [{ path: "/", service: "web" }] }], { annotations: ann({ "auth-url": `http://auth.test.svc:${authPort}/check` }) }),
    // ipallowlist.go: a client outside the ranges gets 403; this one (127.0.0.1) is inside the first.
    ingress(NS, "allowed", [{ host: "allow.test", paths: [{ path: "/", service: "web" }] }], { annotations: ann({ "whitelist-source-range": "127.0.0.1/32" }) }),
    ingress(NS, "refused", [{ host: "deny.test", paths: [{ path: "/", service: "web" }] }], { annotations: ann({ "whitelist-source-range": "10.0.0.0/8" }) }),
    // use-regex ordering: the host is in regex mode, longest location first (nginx's order).
    ingress(NS, "items-rx", [{ host: "order.test", paths: [{ path: "/items/[0-9]+", type: "ImplementationSpecific", service: "api" }] }], { annotations: ann({ "use-regex": "true" }) }),
    ingress(NS, "items", [{ host: "order.test", paths: [{ path: "/items", service: "web" }] }]),
    ingress(NS, "fields", [{ host: "hdr.test", paths: [{ path: "/", service: "web" }] }], {
      annotations: ann({ "portico.dev/request-headers": "X-Team: blue\nX-Team: green", "upstream-vhost": "internal.svc" }),
    }),
    // A rewrite-target on a plain Prefix path: the host goes to regex mode and nginx's rewrite
    // replaces the whole URI (ngx_http_rewrite: the replacement is the new URI).
    ingress(NS, "rewrite-plain", [{ host: "rwp.test", paths: [{ path: "/foo", service: "api" }] }], { annotations: ann({ "rewrite-target": "/bar" }) }),
    // redirect.go: permanent-redirect-code and temporal-redirect.
    ingress(NS, "moved-308", [{ host: "perm308.test", paths: [{ path: "/", service: "web" }] }], { annotations: ann({ "permanent-redirect": "https://new.example.com", "permanent-redirect-code": "308" }) }),
    ingress(NS, "away", [{ host: "temp.test", paths: [{ path: "/", service: "web" }] }], { annotations: ann({ "temporal-redirect": "https://status.example.com/maintenance" }) }),
    // spec.defaultBackend of a rule-less Ingress: every request no rule takes.
    { ...ingress(NS, "catch-all", [], { defaultBackend: "fallback" }) },
    ...gateway,
  ]);
}

/** The requests: host, path, and the exact answer ingress-nginx (or Gateway API) gives, where pinned. */
const CASES: { host: string; path: string; scheme?: "http" | "https"; expect?: { status: number; location?: string; line?: string; backend?: string } }[] = [
  { host: "canary.test", path: "/a", expect: { status: 200, line: "GET /a HTTP/1.1", backend: "canary" } },
  { host: "canary-h.test", path: "/a", expect: { status: 200, backend: "web" } },
  { host: "rw.test", path: "/api/users/7", expect: { status: 200, line: "GET /users/7 HTTP/1.1", backend: "api" } },
  { host: "rw.test", path: "/api", expect: { status: 200, line: "GET / HTTP/1.1", backend: "api" } },
  { host: "rw.test", path: "/other" },
  // nginx's `~*` locations are case-insensitive; captures are taken from the decoded $uri and
  // sent as nginx's rewrite escapes them; the query follows the rewritten path (ngx_http_rewrite).
  { host: "rw.test", path: "/API/users/7", expect: { status: 200, line: "GET /users/7 HTTP/1.1", backend: "api" } },
  { host: "rw.test", path: "/api/a%20b/c" },
  { host: "rw.test", path: "/api/users/7?x=1&y=%2F", expect: { status: 200, line: "GET /users/7?x=1&y=%2F HTTP/1.1", backend: "api" } },
  { host: "rw.test", path: "/api//users/./7" },
  { host: "approot.test", path: "/", expect: { status: 302, location: "http://approot.test/foo" } },
  { host: "approot.test", path: "/bar", expect: { status: 200, line: "GET /bar HTTP/1.1", backend: "web" } },
  { host: "perm.test", path: "/x", expect: { status: 301, location: "http://new.example.com/landing" } },
  { host: "secure.test", path: "/a/", expect: { status: 308, location: "https://secure.test/a" } },
  { host: "auth.test", path: "/me", expect: { status: 200, line: "GET /me HTTP/1.1", backend: "web" } },
  { host: "allow.test", path: "/", expect: { status: 200, backend: "web" } },
  { host: "deny.test", path: "/", expect: { status: 403 } },
  { host: "order.test", path: "/items/12/detail", expect: { status: 200, backend: "api" } },
  { host: "order.test", path: "/items/abc", expect: { status: 200, backend: "web" } },
  { host: "order.test", path: "/elsewhere" },
  { host: "order.test", path: "/ITEMS/12", expect: { status: 200, backend: "api" } },
  { host: "hdr.test", path: "/p" },
  { host: "nobody.test", path: "/anything", expect: { status: 200, backend: "fallback" } },
  // HTTPRoute filters (HTTPURLRewriteFilter, HTTPHeaderFilter, HTTPRequestRedirectFilter).
  { host: "gw.test", path: "/v1/list", expect: { status: 200, line: "GET /v2/list HTTP/1.1", backend: "gw-a" } },
  { host: "gw.test", path: "/full", expect: { status: 200, line: "GET /replaced HTTP/1.1", backend: "gw-b" } },
  { host: "gw.test", path: "/moved/here", expect: { status: 301, location: "http://new.test/moved/here" } },
  { host: "gw.test", path: "/plain" },
  { host: "rwp.test", path: "/foo/x", expect: { status: 200, line: "GET /bar HTTP/1.1", backend: "api" } },
  { host: "perm308.test", path: "/a", expect: { status: 308, location: "https://new.example.com" } },
  { host: "temp.test", path: "/a", expect: { status: 302, location: "https://status.example.com/maintenance" } },
  // Over the HTTPS port's handler: a TLS host is proxied there, not redirected.
  { host: "secure.test", path: "/a/", scheme: "https", expect: { status: 200, line: "GET /a/ HTTP/1.1", backend: "web" } },
  { host: "rw.test", path: "/api/x", scheme: "https", expect: { status: 200, line: "GET /x HTTP/1.1", backend: "api" } },
  { host: "gw.test", path: "/v1", expect: { status: 200, line: "GET /v2 HTTP/1.1", backend: "gw-a" } },
  { host: "gw.test", path: "/v1/?q=a", expect: { status: 200, line: "GET /v2/?q=a HTTP/1.1", backend: "gw-a" } },
  { host: "gw.test", path: "/v1x" },
  { host: "hdr.test", path: "/caf%C3%A9/%7Euser" },
];

beforeAll(async () => {
  for (const s of SERVICES) backends.set(s, await namedBackend(s));
  auth = await rawBackend(() => "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
  snapshot = loadFixture(objects(auth.port)).snapshot;
  table = compile(snapshot, config).table;
  compiler = new Compiler(config);
  const resolver = createExternalResolver({
    lookup: async (name) => (name === "auth.test.svc" ? ["127.0.0.1"] : Promise.reject(Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" }))),
    check: (a) => (a === "127.0.0.1" ? null : "not the test address"),
  });
  const kinds = new Map(POLICY_KINDS);
  kinds.set(K.EXTERNAL_AUTH.id, externalAuthWith({ resolver }));
  for (const scheme of ["http", "https"] as const) {
    const handler = createProxyHandler({ config: testConfig(), table: () => table, lookup, log: silentLogger, scheme, policyKinds: kinds });
    listeners.set(scheme, startHttpListener({ hostname: "127.0.0.1", port: 0, handler }));
  }
});
afterAll(async () => {
  for (const l of listeners.values()) await l.stop(true);
  for (const b of [...backends.values(), auth]) await b.stop();
});

/** Request fields by lower-cased name (each once in these requests). */
function fieldsOf(head: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of head.split("\r\n").slice(1)) {
    const i = line.indexOf(":");
    out.set(line.slice(0, i).toLowerCase(), line.slice(i + 1).trim());
  }
  return out;
}

interface Sent {
  readonly status: number;
  readonly location: string | null;
  /** The Service whose backend got the request, its request line and fields; null when none did. */
  readonly got: { service: string; line: string; fields: Map<string, string> } | null;
}

/** One GET on `port`; which of `pods` got it, and what it received. */
async function sendTo(port: number, pods: ReadonlyMap<string, RawBackend>, host: string, path: string, extra = ""): Promise<Sent & { fields: Map<string, string> }> {
  const before = new Map([...pods].map(([s, b]) => [s, b.hits.length]));
  const raw = await rawRequest(port, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${extra}Connection: close\r\n\r\n`, 10_000);
  const head = raw.slice(0, raw.indexOf("\r\n\r\n"));
  const hit = [...pods].filter(([s, b]) => b.hits.length > (before.get(s) as number));
  expect(hit.length, `${host}${path}: at most one backend gets the request`).toBeLessThanOrEqual(1);
  const [service, b] = hit[0] ?? [null, null];
  const req = b?.hits.at(-1);
  return {
    status: statusLine(raw),
    location: /\r\nlocation: ([^\r]*)/i.exec(head)?.[1] ?? null,
    got: service === null || req === undefined ? null : { service, line: req.line, fields: fieldsOf(req.head) },
    fields: fieldsOf(head),
  };
}

const send = (scheme: "http" | "https", host: string, path: string): Promise<Sent> => sendTo(listeners.get(scheme)!.port as number, backends, host, path);

const serviceOf = (id: string) => id.slice(id.indexOf("/") + 1, id.lastIndexOf(":"));

test("explain's response and upstream request are what the proxy answers and what the backend receives", async () => {
  const kinds: Record<string, number> = {};
  for (const c of CASES) {
    const scheme = c.scheme ?? "http";
    const e: ExplainResult = explain(snapshot, config, { host: c.host, path: c.path, scheme, client: "127.0.0.1" }, compiler);
    const r = e.response;
    const real = await send(scheme, c.host, c.path);
    const what = `GET ${scheme}://${c.host}${c.path} (explain: ${JSON.stringify(r)})`;
    kinds[r.kind] = (kinds[r.kind] ?? 0) + 1;
    if (c.expect !== undefined) {
      expect(real.status, what).toBe(c.expect.status);
      if (c.expect.location !== undefined) expect(real.location, what).toBe(c.expect.location);
      if (c.expect.line !== undefined) expect(real.got?.line, what).toBe(c.expect.line);
      if (c.expect.backend !== undefined) expect(real.got?.service, what).toBe(c.expect.backend);
    }
    if (r.kind === "proxied" || r.kind === "depends") {
      // depends: the auth service here lets every request through.
      expect(real.status, what).toBe(200);
      expect(real.got, what).not.toBeNull();
      const got = real.got!;
      expect((r.backends ?? []).map(serviceOf), what).toContain(got.service);
      const up = r.upstream;
      expect(up, `${what}: explain says what the backend receives`).toBeDefined();
      // Explain's request has no query; the proxy sends the client's after the path.
      const query = c.path.includes("?") ? c.path.slice(c.path.indexOf("?")) : "";
      expect(got.line, what).toBe(`GET ${up!.path}${query} HTTP/1.1`);
      expect(got.fields.get("host"), what).toBe(up!.host ?? c.host);
      for (const [name, value] of Object.entries(up!.headers)) expect(got.fields.get(name) ?? null, `${what}: ${name}`).toBe(value);
    } else {
      expect({ status: real.status, location: real.location }, what).toEqual({ status: r.status as number, location: r.location ?? null });
      expect(real.got, `${what}: no backend gets a request Portico answers itself`).toBeNull();
    }
  }
  expect(Object.keys(kinds).sort()).toEqual(["depends", "proxied", "redirect", "refused"]);
});

test("the fields explain claims, as the backend gets them: x-forwarded-prefix, request-headers, upstream-vhost, RequestHeaderModifier", () => {
  const ask = (host: string, path: string) => explain(snapshot, config, { host, path, scheme: "http", client: "127.0.0.1" }, compiler).response.upstream;
  // xforwardedprefix.go: the annotation's value is sent with the rewritten request.
  expect(ask("rw.test", "/api/users/7")).toEqual({ path: "/users/7", host: null, headers: { "x-forwarded-prefix": "/api" } });
  // A repeated name is one field, its values joined with ", " (RFC 9110 §5.3); upstream-vhost is the Host (nginx.tmpl proxy_set_header Host).
  expect(ask("hdr.test", "/p")).toEqual({ path: "/p", host: "internal.svc", headers: { "x-team": "blue, green" } });
  expect(ask("gw.test", "/v1/list")).toEqual({ path: "/v2/list", host: "backend.internal", headers: { "x-env": "prod", "x-via": "gw", "x-remove": null } });
  expect(ask("gw.test", "/full")).toEqual({ path: "/replaced", host: null, headers: {} });
  // Answers Portico gives itself reach no backend: nothing is claimed.
  expect(ask("perm.test", "/x")).toBeUndefined();
});

// The settings that act on every request or answer (add-headers, proxy-set-headers,
// --server-header, --block-*), and the annotations that change the answer's fields or who is
// let in (custom-headers, response-headers, satisfy any, mirror-target), against a proxy of
// their own: explain's status, request line, Host, the fields it says the backend receives and
// the fields it says the answer carries must be what the real proxy does.
describe("global headers, block lists, satisfy any, custom-headers and mirror-target", () => {
  const NS2 = "par2";
  const own = new Map<string, RawBackend>();
  let auth2: RawBackend;
  let mirror: RawBackend;
  let listener2: ReturnType<typeof startHttpListener>;
  let snap2: Snapshot;
  let table2: RouteTable;
  const cfg = testConfig({
    addHeaders: { namespace: NS2, name: "add" },
    proxySetHeaders: { namespace: NS2, name: "set" },
    globalAllowedResponseHeaders: ["X-Custom"],
    serverHeader: "portico",
    // nginx.tmpl `deny` in the http block and the $block_ua map (ingress-nginx configmap
    // block-cidrs, block-user-agents); the client's address is the one realip gives, from
    // X-Forwarded-For behind a trusted proxy (nginx.tmpl set_real_ip_from).
    blockCidrs: ["10.0.0.0/8"],
    blockUserAgents: ["~*badbot"],
    trustedProxies: ["127.0.0.0/8"],
  });
  const HASH = Bun.password.hashSync("pwd", { algorithm: "bcrypt", cost: 4 });

  beforeAll(async () => {
    for (const s of ["web2", "web3"]) own.set(s, await namedBackend(s));
    auth2 = await rawBackend(() => "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
    mirror = await rawBackend(() => "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
    const cm = (name: string, data: Record<string, string>) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: NS2 }, data });
    const secret = { apiVersion: "v1", kind: "Secret", type: "Opaque", metadata: { name: "basic", namespace: NS2 }, data: { auth: Buffer.from(`uname:${HASH}`, "latin1").toString("base64") } };
    const basic = { "auth-type": "basic", "auth-secret": "basic", "auth-realm": "members" };
    const authUrl = `http://auth.test.svc:${auth2.port}/check`;
    snap2 = loadFixture(
      yamlDocs([
        ingressClass(),
        ...["web2", "web3"].flatMap((s) => [service(NS2, s), slice(NS2, s, [(own.get(s) as RawBackend).port])]),
        cm("add", { "X-Added": "yes", "X-Req": "$uri" }),
        cm("set", { "X-Set": "from-global", "X-Empty": "", "X-Path": "$uri" }),
        cm("custom", { "X-Custom": "c1" }),
        secret,
        ingress(NS2, "plain", [{ host: "plain.test", paths: [{ path: "/", service: "web2" }] }]),
        ingress(NS2, "custom", [{ host: "custom.test", paths: [{ path: "/", service: "web3" }] }], {
          annotations: ann({ "custom-headers": `${NS2}/custom`, "portico.dev/request-headers": "X-Set: from-route\nX-Own: mine", "portico.dev/response-headers": "X-Resp: r1" }),
        }),
        // satisfy.go: with `satisfy any`, an address in the allow list needs no password.
        ingress(NS2, "sat-ok", [{ host: "sat-ok.test", paths: [{ path: "/", service: "web2" }] }], { annotations: ann({ ...basic, "whitelist-source-range": "127.0.0.1/32", satisfy: "any" }) }),
        // Neither the address nor a password: 401 (ngx_http_core_post_access_phase keeps the 401).
        ingress(NS2, "sat-401", [{ host: "sat-401.test", paths: [{ path: "/", service: "web2" }] }], { annotations: ann({ ...basic, "whitelist-source-range": "10.0.0.0/8", satisfy: "any" }) }),
        ingress(NS2, "sat-auth", [{ host: "sat-auth.test", paths: [{ path: "/", service: "web3" }] }], { annotations: ann({ "auth-url": authUrl, "whitelist-source-range": "10.0.0.0/8", satisfy: "any" }) }),
        ingress(NS2, "mirrored", [{ host: "mirror.test", paths: [{ path: "/", service: "web2" }] }], { annotations: ann({ "mirror-target": `http://auth.test.svc:${mirror.port}/copy` }) }),
      ]),
    ).snapshot;
    table2 = compile(snap2, cfg).table;
    const resolver = createExternalResolver({
      lookup: async (name) => (name === "auth.test.svc" ? ["127.0.0.1"] : Promise.reject(Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" }))),
      check: (a) => (a === "127.0.0.1" ? null : "not the test address"),
    });
    const kinds = new Map(POLICY_KINDS);
    kinds.set(K.EXTERNAL_AUTH.id, externalAuthWith({ resolver }));
    const authCache = createAuthCache();
    kinds.set(K.SATISFY_ANY.id, withCaps(K.SATISFY_ANY, { resolve: (u, ms) => resolver.target(u, ms), authCache: () => authCache }));
    kinds.set(K.INGRESS_MIRROR.id, withCaps(K.INGRESS_MIRROR, { resolve: (u, ms) => resolver.target(u, ms) }));
    const handler = createProxyHandler({ config: cfg, table: () => table2, lookup, log: silentLogger, scheme: "http", policyKinds: kinds });
    listener2 = startHttpListener({ hostname: "127.0.0.1", port: 0, handler });
  });
  afterAll(async () => {
    await listener2?.stop(true);
    for (const b of [...own.values(), auth2, mirror]) await b?.stop();
  });

  const send2 = (host: string, path: string, extra = "") => sendTo(listener2.port as number, own, host, path, extra);

  const CASES2: { host: string; path: string; client?: string; extra?: string; expect: { status: number; kind: AnswerKind; backend?: string } }[] = [
    { host: "plain.test", path: "/a", expect: { status: 200, kind: "proxied", backend: "web2" } },
    { host: "custom.test", path: "/b", expect: { status: 200, kind: "proxied", backend: "web3" } },
    { host: "sat-ok.test", path: "/", expect: { status: 200, kind: "proxied", backend: "web2" } },
    { host: "sat-401.test", path: "/", expect: { status: 401, kind: "challenge" } },
    { host: "sat-auth.test", path: "/x", expect: { status: 200, kind: "depends", backend: "web3" } },
    { host: "mirror.test", path: "/m", expect: { status: 200, kind: "proxied", backend: "web2" } },
    // A blocked client: 403 before any route's policy, and on a host no rule serves.
    { host: "plain.test", path: "/a", client: "10.1.2.3", extra: "X-Forwarded-For: 10.1.2.3\r\n", expect: { status: 403, kind: "refused" } },
    { host: "nobody.test", path: "/", client: "10.1.2.3", extra: "X-Forwarded-For: 10.1.2.3\r\n", expect: { status: 403, kind: "refused" } },
    { host: "nobody.test", path: "/", expect: { status: 404, kind: "refused" } },
  ];

  test("explain says the status, the backend's request and fields, and the answer's fields the proxy gives", async () => {
    for (const c of CASES2) {
      const client = c.client ?? "127.0.0.1";
      const r = explain(snap2, cfg, { host: c.host, path: c.path, scheme: "http", client }, new Compiler(cfg)).response;
      const real = await send2(c.host, c.path, c.extra ?? "");
      const what = `GET http://${c.host}${c.path} from ${client} (explain: ${JSON.stringify(r)})`;
      expect(real.status, what).toBe(c.expect.status);
      expect(r.kind, what).toBe(c.expect.kind);
      if (c.expect.backend !== undefined) expect(real.got?.service, what).toBe(c.expect.backend);
      if (r.kind === "proxied" || r.kind === "depends") {
        const got = real.got!;
        expect(got, what).not.toBeNull();
        expect((r.backends ?? []).map(serviceOf), what).toContain(got.service);
        const up = r.upstream!;
        expect(up, what).toBeDefined();
        expect(got.line, what).toBe(`GET ${up.path} HTTP/1.1`);
        expect(got.fields.get("host"), what).toBe(up.host ?? c.host);
        for (const [name, value] of Object.entries(up.headers)) expect(got.fields.get(name) ?? null, `${what}: ${name}`).toBe(value);
      } else {
        expect(r.status, what).toBe(real.status);
        expect(real.got, `${what}: no backend gets a request Portico answers itself`).toBeNull();
      }
      // The answer's fields explain claims: add-headers and Server on every answer.
      expect(r.headers, what).toBeDefined();
      for (const [name, value] of Object.entries(r.headers ?? {})) expect(real.fields.get(name) ?? null, `${what}: answer field ${name}`).toBe(value);
    }
  });

  test("what explain claims for these features, as ingress-nginx configures them", () => {
    const ask = (host: string, client: string | null = "127.0.0.1") => explain(snap2, cfg, { host, path: "/p", scheme: "http", ...(client === null ? {} : { client }) }, new Compiler(cfg)).response;
    const plain = ask("plain.test");
    // proxy-set-headers: `proxy_set_header X-Set "from-global"`; an empty value sends no field.
    expect(plain.upstream).toEqual({ path: "/p", host: null, headers: { "x-set": "from-global", "x-empty": null } });
    expect(plain.notes).toContain("proxy-set-headers: x-path is $uri, expanded per request");
    // add-headers: more_set_headers on every answer; --server-header=portico.
    expect(plain.headers).toEqual({ "x-added": "yes", server: PORTICO_SERVER });
    expect(plain.notes).toContain("add-headers: x-req is $uri, expanded per request");
    const custom = ask("custom.test");
    expect(custom.headers).toEqual({ "x-resp": "r1", "x-custom": "c1", "x-added": "yes", server: PORTICO_SERVER });
    expect(ask("sat-401.test")).toMatchObject({ kind: "challenge", status: 401, realm: "members", by: "satisfy-any" });
    expect(ask("sat-ok.test")).toMatchObject({ kind: "proxied", by: "proxy" });
    expect(ask("sat-auth.test")).toMatchObject({ kind: "depends", by: "satisfy-any" });
    expect(ask("mirror.test").notes.some((n) => n.startsWith("mirror-target: a copy of the request goes to http://auth.test.svc:"))).toBe(true);
    // block-cidrs: without a client address explain cannot know; with one it decides.
    expect(ask("plain.test", null)).toMatchObject({ kind: "depends", status: null, by: "block" });
    expect(ask("plain.test", "10.9.9.9")).toMatchObject({ kind: "refused", status: 403, by: "block" });
    expect(ask("plain.test").notes).toContain("block-user-agents: 403 for a User-Agent in the list");
  });
});
