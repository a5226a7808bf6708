// The redirect, host-name and upstream-identity annotations as ingress-nginx answers them,
// one table of cases: Ingress objects compiled by the real compiler, served by the real handler on real
// HTTP and HTTPS listeners, in front of a raw-socket backend that logs the request line and
// Host it receives (and whether it came over TLS). Each case names the ingress-nginx source
// its expected status, Location and upstream request come from (paths in the
// kubernetes/ingress-nginx repository at v1.15.1; T = rootfs/etc/nginx/template/nginx.tmpl,
// E/x = test/e2e/annotations/x.go). Where Portico differs on purpose the case says so.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import net from "node:net";
import tls from "node:tls";
import { compile } from "../../src/compile/compile.ts";
import { Compiler } from "../../src/compile/compile.ts";
import { DEFAULT_COMPILE_CONFIG } from "../compile/config.ts";
import type { Config } from "../../src/config/types.ts";
import { createProxyHandler } from "../../src/proxy/pipeline/handler.ts";
import { serveOptions } from "../../src/proxy/pipeline/listener.ts";
import { buildTable } from "../../src/table/build.ts";
import { lookup } from "../../src/table/lookup.ts";
import { DEFAULT_ROUTE_OPTIONS } from "../../src/table/routes.ts";
import type { RouteTable } from "../../src/table/types.ts";
import { generateDefaultCertificate } from "../../src/tls/default-cert.ts";
import { mkRoute } from "../compile/routes.ts";
import { loadFixture } from "../compile/snapshot.ts";
import { ingress, ingressClass, service, slice, yamlDocs } from "../e2e/objects.ts";
import { quietLog, rawRequest, startProxy, statusLine, testConfig, type TestProxy } from "./helpers.ts";
import { namedBackend, wsUpgrade } from "./raw.ts";

const NGINX = "nginx.ingress.kubernetes.io/";
const cert = generateDefaultCertificate();

// ---- a backend on one port that speaks plain HTTP and TLS (AUTO_HTTP needs both) --------------

interface Hit {
  readonly tls: boolean;
  readonly line: string;
  readonly host: string | null;
}

function dualBackend() {
  const hits: Hit[] = [];
  const handle = (s: net.Socket, isTls: boolean) => {
    let buf = "";
    s.on("error", () => {});
    s.on("data", (d: Buffer) => {
      buf += d.toString("latin1");
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = buf.slice(0, end);
      hits.push({ tls: isTls, line: head.slice(0, head.indexOf("\r\n")), host: /^host:\s*(.*)$/im.exec(head)?.[1]?.trim() ?? null });
      s.end("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
    });
  };
  const tlsServer = tls.createServer({ cert: cert.cert, key: cert.key }, (t) => handle(t, true));
  const server = net.createServer((sock) => {
    sock.on("error", () => {});
    sock.once("data", (first: Buffer) => {
      sock.pause();
      sock.unshift(first);
      // A TLS record starts with 0x16 (handshake, RFC 8446 §5.1): hand the socket to TLS.
      if (first[0] === 0x16) tlsServer.emit("connection", sock);
      else {
        handle(sock, false);
        sock.resume();
      }
    });
  });
  return {
    hits,
    listen: () => new Promise<number>((r) => server.listen(0, "127.0.0.1", () => r((server.address() as net.AddressInfo).port))),
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
}

// ---- the Ingresses ---------------------------------------------------------------------------

type Ann = Record<string, string>;
const ing = (name: string, host: string, path: string, ann: Ann, tlsHosts?: string[]) =>
  ingress("web", name, [{ host, paths: [{ path, service: "app" }] }], {
    annotations: Object.fromEntries(Object.entries(ann).map(([k, v]) => [`${NGINX}${k}`, v])),
    ...(tlsHosts ? { tls: [{ hosts: tlsHosts }] } : {}),
  });

const INGRESSES = [
  ing("perm", "perm.test", "/something", { "permanent-redirect": "http://redirect.example.com" }),
  ing("perm-302", "perm302.test", "/something", { "permanent-redirect": "http://redirect.example.com", "permanent-redirect-code": "302" }),
  ing("perm-308", "perm308.test", "/", { "permanent-redirect": "http://redirect.example.com", "permanent-redirect-code": "308" }),
  ing("perm-309", "perm309.test", "/", { "permanent-redirect": "http://redirect.example.com", "permanent-redirect-code": "309" }),
  ing("perm-299", "perm299.test", "/", { "permanent-redirect": "http://redirect.example.com", "permanent-redirect-code": "299" }),
  ing("perm-300", "perm300.test", "/", { "permanent-redirect": "http://redirect.example.com", "permanent-redirect-code": "300" }),
  ing("perm-rel", "permrel.test", "/", { "permanent-redirect": "/new/place" }),
  ing("perm-rel-port", "permrelport.test", "/", { "permanent-redirect": "/new/place", "use-port-in-redirects": "true" }),
  ing("perm-relative", "permrelative.test", "/", { "permanent-redirect": "/new/place", "relative-redirects": "true" }),
  ing("perm-tls", "permtls.test", "/", { "permanent-redirect": "https://elsewhere.example/" }, ["permtls.test"]),
  ing("perm-bad", "permbad.test", "/", { "permanent-redirect": "http://x.example/$1" }),
  ing("perm-acl", "permacl.test", "/", { "permanent-redirect": "https://elsewhere.example/", "allowlist-source-range": "10.0.0.0/8" }),
  ing("acl", "acl.test", "/", { "allowlist-source-range": "10.0.0.0/8" }),
  ing("perm-off", "permoff.test", "/", { "from-to-www-redirect": "", "permanent-redirect": "http://x.example/" }),
  ing("code-only", "codeonly.test", "/", { "permanent-redirect-code": "abc" }),
  ing("temp", "temp.test", "/", { "temporal-redirect": "https://temp.example.com/x" }),
  ing("temp-wins", "tempwins.test", "/", { "temporal-redirect": "https://temp.example.com/", "permanent-redirect": "https://perm.example.com/" }),
  ing("temp-308", "temp308.test", "/", { "temporal-redirect": "https://temp.example.com/", "temporal-redirect-code": "308" }),
  ing("temp-307", "temp307.test", "/", { "temporal-redirect": "https://temp.example.com/", "temporal-redirect-code": "307" }),
  ing("temp-ftp", "tempftp.test", "/", { "temporal-redirect": "ftp://files.example.com/" }),
  ing("approot", "approot.test", "/", { "app-root": "/foo" }),
  ing("wide-a", "wide.test", "/api", { "app-root": "/app" }),
  ing("wide-b", "wide.test", "/", {}),
  ing("noroot", "noroot.test", "/api", { "app-root": "/app" }),
  ing("approot-tls", "approottls.test", "/", { "app-root": "/foo" }, ["approottls.test"]),
  ing("approot-var", "approotvar.test", "/", { "app-root": "/login$is_args$args" }),
  ing("approot-cookie", "approotcookie.test", "/", { "app-root": "/login/$cookie_x" }),
  ingress("web", "approot-rx", [{ host: "approotrx.test", paths: [{ path: "/api/[0-9]+", type: "ImplementationSpecific", service: "app" }] }], {
    annotations: { [`${NGINX}use-regex`]: "true", [`${NGINX}app-root`]: "/app" },
  }),
  ing("www", "fromtowww.test", "/", { "from-to-www-redirect": "true" }),
  ing("www-rev", "www.rev.test", "/", { "from-to-www-redirect": "true" }),
  ing("www-skip", "skip.test", "/", { "from-to-www-redirect": "true" }),
  ing("www-skip-other", "www.skip.test", "/", {}),
  ing("www-tls", "wwwtls.test", "/", { "from-to-www-redirect": "true" }, ["wwwtls.test", "www.wwwtls.test"]),
  ing("force", "force.test", "/", { "force-ssl-redirect": "true" }),
  ing("pts", "pts.test", "/", { "preserve-trailing-slash": "true" }, ["pts.test"]),
  ing("tls", "tls.test", "/", {}, ["tls.test"]),
  ing("tls-port", "tlsport.test", "/", { "use-port-in-redirects": "true" }, ["tlsport.test"]),
  ing("tls-off", "tlsoff.test", "/", { "ssl-redirect": "false" }, ["tlsoff.test"]),
  ing("vhost", "upstreamvhost.foo.com", "/", { "upstream-vhost": "upstreamvhost.bar.com" }),
  ing("vhost-var", "vhostvar.test", "/", { "upstream-vhost": "$host" }),
  ing("vhost-bad", "vhostbad.test", "/", { "upstream-vhost": "a b" }),
  // A Service without endpoints, with default-backend: the fallback answers, not the 503.
  ingress("web", "vhost-fallback", [{ host: "vhostfb.test", paths: [{ path: "/", service: "empty" }] }], {
    annotations: { [`${NGINX}upstream-vhost`]: "vh.example", [`${NGINX}default-backend`]: "app" },
  }),
  ing("auto", "auto.test", "/", { "backend-protocol": "AUTO_HTTP" }),
  ing("auto-main", "autocanary.test", "/", { "backend-protocol": "AUTO_HTTP" }),
  ing("auto-canary", "autocanary.test", "/", { canary: "true", "canary-weight": "100" }),
  // server-alias
  ing("alias", "foo.test", "/", { "server-alias": "bar.test, Bar.test ,," }),
  ing("app-a", "two.test", "/app-a", {}),
  ing("app-b", "two.test", "/app-b", { "server-alias": "two-alias.test" }),
  ing("alias-col", "col.test", "/", { "server-alias": "perm.test" }),
  ing("dup-a", "dup-a.test", "/a", { "server-alias": "shared.test" }),
  ing("dup-b", "dup-b.test", "/b", { "server-alias": "shared.test" }),
  ing("first-1", "first.test", "/", { "server-alias": "first-alias-1.test" }),
  ing("first-2", "first.test", "/2", { "server-alias": "first-alias-2.test" }),
  ing("wild", "*.wild.test", "/", { "server-alias": "wildalias.test" }),
  ing("over-wild", "overwild.test", "/only", { "server-alias": "x.wild.test" }),
  ing("alias-tls", "tlsalias.test", "/", { "server-alias": "tlsalias2.test" }, ["tlsalias.test"]),
  // service-upstream: Service "su" has the backend behind its ClusterIP (127.0.0.1:<backend
  // port>) and a dead endpoint (port 1), so only the ClusterIP answers.
  suIngress("su-num", "su.test", { number: 0 }, { "service-upstream": "true" }),
  suIngress("su-name", "suname.test", { name: "http" }, { "service-upstream": "true" }),
  suIngress("su-off", "suoff.test", { number: 0 }, {}),
  suIngress("su-headless", "suheadless.test", { number: 80 }, { "service-upstream": "true" }, "headless"),
];

/** An Ingress to Service `su` (port number 0 = the backend's port) or another Service of ns web. */
function suIngress(name: string, host: string, port: { number?: number; name?: string }, ann: Ann, svc = "su") {
  const obj = ing(name, host, "/", ann) as { spec: { rules: { http: { paths: { backend: unknown }[] } }[] } };
  (obj.spec.rules[0] as { http: { paths: { backend: unknown }[] } }).http.paths[0]!.backend = { service: { name: svc, port } };
  return obj;
}

/** The Services and EndpointSlices service-upstream needs, for a backend listening on `port`. */
function suObjects(port: number) {
  const svc = (name: string, clusterIP: string, servicePort: number) => ({
    apiVersion: "v1", kind: "Service", metadata: { name, namespace: "web" },
    spec: { clusterIP, ports: [{ name: "http", port: servicePort }] },
  });
  return [svc("su", "127.0.0.1", port), slice("web", "su", [1]), svc("headless", "None", 80), slice("web", "headless", [port])];
}

// ---- the listeners ---------------------------------------------------------------------------

type ProxyName = "http" | "https" | "http301" | "trusted" | "https443";

interface Running {
  readonly port: number;
  stop(): Promise<void>;
}

function startTls(table: RouteTable, config: Partial<Config>): Running {
  const handler = createProxyHandler({ config: testConfig(config), table: () => table, lookup, log: quietLog, scheme: "https" });
  const server = Bun.serve({ ...serveOptions(handler), hostname: "127.0.0.1", port: 0, tls: { cert: cert.cert, key: cert.key } });
  return { port: server.port as number, stop: () => server.stop(true) };
}

/** One request over TLS (SNI = the Host's name), everything until the server closes. */
function tlsRequest(port: number, servername: string, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const s = tls.connect({ host: "127.0.0.1", port, servername, rejectUnauthorized: false }, () => s.write(bytes));
    s.on("data", (d: Buffer) => chunks.push(d));
    s.on("close", () => resolve(Buffer.concat(chunks).toString("latin1")));
    s.on("error", reject);
  });
}

const backend = dualBackend();
const proxies = new Map<ProxyName, Running>();

beforeAll(async () => {
  const port = await backend.listen();
  // Port number 0 stands for the backend's port (known only now).
  const ingresses = JSON.parse(JSON.stringify(INGRESSES).replaceAll('"number":0', `"number":${port}`));
  const docs = yamlDocs([ingressClass(), service("web", "app"), slice("web", "app", [port]), service("web", "empty"), slice("web", "empty", []), ...suObjects(port), ...ingresses]);
  const table = compile(loadFixture(docs).snapshot, DEFAULT_COMPILE_CONFIG).table;
  const plain = (config: Partial<Config>): Running => {
    const p: TestProxy = startProxy(table, config);
    return { port: p.port, stop: () => p.stop() };
  };
  proxies.set("http", plain({}));
  proxies.set("http301", plain({ httpRedirectCode: 301 }));
  proxies.set("trusted", plain({ trustedProxies: ["127.0.0.1/32"] }));
  proxies.set("https", startTls(table, {}));
  proxies.set("https443", plain({ httpsPort: 443 }));
});
afterAll(async () => {
  for (const p of proxies.values()) await p.stop();
  await backend.stop();
});

// ---- the cases -------------------------------------------------------------------------------

interface Case {
  readonly name: string;
  /** Where the expectation comes from. */
  readonly cite: string;
  readonly host: string;
  readonly target: string;
  /** Default "http". */
  readonly via?: ProxyName;
  readonly headers?: Record<string, string>;
  readonly status: number;
  /** `{port}` stands for the listener's port. */
  readonly location: string | null;
  /** What the backend received, or null when nothing reached it. */
  readonly upstream: { readonly line: string; readonly host: string; readonly tls?: boolean } | null;
  readonly body?: string;
}

const CASES: readonly Case[] = [
  // permanent-redirect, permanent-redirect-code
  { name: "permanent-redirect: 301 to the URL", cite: "E/redirect.go 'should respond with a standard redirect code'", host: "perm.test", target: "/something", status: 301, location: "http://redirect.example.com", upstream: null },
  { name: "permanent-redirect: the query is not added", cite: "T `return {{ $location.Redirect.Code }} {{ $location.Redirect.URL }}`", host: "perm.test", target: "/something/deeper?x=1", status: 301, location: "http://redirect.example.com", upstream: null },
  { name: "permanent-redirect-code 302", cite: "E/redirect.go 'should respond with a custom redirect code'", host: "perm302.test", target: "/something", status: 302, location: "http://redirect.example.com", upstream: null },
  { name: "permanent-redirect-code 308", cite: "docs annotations.md 'Permanent Redirect Code' example '308'", host: "perm308.test", target: "/", status: 308, location: "http://redirect.example.com", upstream: null },
  { name: "permanent-redirect-code 309 is outside 300-308: 301", cite: "internal/ingress/annotations/redirect/redirect.go (prc > StatusPermanentRedirect)", host: "perm309.test", target: "/", status: 301, location: "http://redirect.example.com", upstream: null },
  { name: "permanent-redirect-code 299 is outside 300-308: 301", cite: "internal/ingress/annotations/redirect/redirect.go (prc < StatusMultipleChoices)", host: "perm299.test", target: "/", status: 301, location: "http://redirect.example.com", upstream: null },
  { name: "permanent-redirect-code 300: the URL is the body, no Location", cite: "nginx src/http/ngx_http_core_module.c ngx_http_send_response (Location only for 301, 302, 303, 307, 308)", host: "perm300.test", target: "/", status: 300, location: null, upstream: null, body: "http://redirect.example.com" },
  { name: "a relative URL is made absolute with the scheme and host", cite: "nginx ngx_http_header_filter_module.c (absolute_redirect on; T: port_in_redirect off)", host: "PermRel.test:8080", target: "/x", status: 301, location: "http://permrel.test/new/place", upstream: null },
  { name: "use-port-in-redirects adds the port the request came in on", cite: "T `port_in_redirect {{ if $location.UsePortInRedirects }}on`; ngx_http_header_filter_module.c", host: "permrelport.test", target: "/x", status: 301, location: "http://permrelport.test:{port}/new/place", upstream: null },
  { name: "relative-redirects keeps the URL relative", cite: "T `{{ if $location.Redirect.Relative }} absolute_redirect off;`", host: "permrelative.test", target: "/x", status: 301, location: "/new/place", upstream: null },
  { name: "plain HTTP to a TLS host with permanent-redirect goes straight to the target, not via HTTPS", cite: "T: `return` in the location's rewrite phase runs before rewrite_by_lua (lua_ingress.lua's HTTPS redirect)", host: "permtls.test", target: "/a", status: 301, location: "https://elsewhere.example/", upstream: null },
  { name: "a redirect answers before the source ranges: a client outside the allowlist still gets it", cite: "T: `return` in the location's rewrite phase, `allow`/`deny` in its access phase", host: "permacl.test", target: "/a", status: 301, location: "https://elsewhere.example/", upstream: null },
  { name: "the same allowlist without a redirect: 403", cite: "T `deny all;` after the allow list (internal/ingress/annotations/ipallowlist)", host: "acl.test", target: "/a", status: 403, location: null, upstream: null },
  { name: "a malformed permanent-redirect refuses the Ingress: 503", cite: "parser/validators.go URLIsValidRegex; annotations.go Extract returns the validation error (Ingress dropped)", host: "permbad.test", target: "/", status: 503, location: null, upstream: null },
  { name: "an empty from-to-www-redirect turns the redirect group off: proxied", cite: "parser/main.go parseBool (InvalidContent); annotations.go Extract `continue`", host: "permoff.test", target: "/x", status: 200, location: null, upstream: { line: "GET /x HTTP/1.1", host: "permoff.test" } },
  { name: "permanent-redirect-code is read even alone: a non-integer refuses the Ingress", cite: "internal/ingress/annotations/redirect/redirect.go (GetIntAnnotation before `if pr != \"\"`)", host: "codeonly.test", target: "/", status: 503, location: null, upstream: null },
  // temporal-redirect, temporal-redirect-code
  { name: "temporal-redirect: 302", cite: "docs annotations.md 'Temporal Redirect'; redirect.go defaultTemporalRedirectCode", host: "temp.test", target: "/q?z=1", status: 302, location: "https://temp.example.com/x", upstream: null },
  { name: "temporal-redirect wins over permanent-redirect", cite: "redirect.go Parse: temporal is read first and returns", host: "tempwins.test", target: "/", status: 302, location: "https://temp.example.com/", upstream: null },
  { name: "temporal-redirect-code 308 is outside 300-307: 302", cite: "redirect.go (trc > StatusTemporaryRedirect)", host: "temp308.test", target: "/", status: 302, location: "https://temp.example.com/", upstream: null },
  { name: "temporal-redirect-code 307", cite: "docs annotations.md 'Temporal Redirect Code' example '307'", host: "temp307.test", target: "/", status: 307, location: "https://temp.example.com/", upstream: null },
  { name: "a temporal-redirect that is not http(s) turns the group off: proxied", cite: "redirect.go isValidURL (plain error: annotations.go Extract `continue`)", host: "tempftp.test", target: "/p", status: 200, location: null, upstream: { line: "GET /p HTTP/1.1", host: "tempftp.test" } },
  // app-root
  { name: "app-root: / gets 302 to the app root", cite: "E/approot.go 'should redirect to /foo' (http://approot.bar.com/foo)", host: "approot.test", target: "/", status: 302, location: "http://approot.test/foo", upstream: null },
  { name: "app-root drops the query and keeps the Host header as sent", cite: "T `return 302 $scheme://$http_host{{ $location.Rewrite.AppRoot }}`", host: "AppRoot.test:8080", target: "/?a=1", status: 302, location: "http://AppRoot.test:8080/foo", upstream: null },
  { name: "app-root: only / itself", cite: "T `if ($uri = /)`", host: "approot.test", target: "/bar", status: 200, location: null, upstream: { line: "GET /bar HTTP/1.1", host: "approot.test" } },
  { name: "app-root is host-wide: / of another Ingress redirects", cite: "T: the `if` is written in the server block, before any location", host: "wide.test", target: "/", status: 302, location: "http://wide.test/app", upstream: null },
  { name: "app-root host-wide: the other Ingress's other paths are proxied", cite: "T `if ($uri = /)`", host: "wide.test", target: "/other", status: 200, location: null, upstream: { line: "GET /other HTTP/1.1", host: "wide.test" } },
  { name: "app-root redirects / even when no path of the host matches it", cite: "T: server-level `if`, before location matching", host: "noroot.test", target: "/", status: 302, location: "http://noroot.test/app", upstream: null },
  { name: "app-root answers before the HTTPS redirect, with the connection's scheme", cite: "T: server rewrite phase before the location's rewrite_by_lua (lua_ingress.lua)", host: "approottls.test", target: "/", status: 302, location: "http://approottls.test/foo", upstream: null },
  { name: "app-root over HTTPS", cite: "T `$scheme://$http_host`", host: "approottls.test", target: "/", via: "https", status: 302, location: "https://approottls.test/foo", upstream: null },
  { name: "app-root on a host in regex mode: / redirects before the locations run", cite: "T: the server-level `if ($uri = /)` comes before every location, regex ones included", host: "approotrx.test", target: "/", status: 302, location: "http://approotrx.test/app", upstream: null },
  { name: "app-root on a host in regex mode: its locations still match", cite: "T `location ~* \"^/api/[0-9]+\"` (case-insensitive, anchored at the start)", host: "approotrx.test", target: "/API/12/x", status: 200, location: null, upstream: { line: "GET /API/12/x HTTP/1.1", host: "approotrx.test" } },
  { name: "app-root /login$is_args$args keeps the query", cite: "T `return 302 $scheme://$http_host{{ $location.Rewrite.AppRoot }}` (nginx interpolates $is_args, $args); annotations/rewrite/main.go (RegexPathWithCapture lets `$` through)", host: "approotvar.test", target: "/?a=b&c", status: 302, location: "http://approotvar.test/login?a=b&c", upstream: null },
  { name: "... and without a query adds no `?`", cite: "nginx ngx_http_variable_is_args (\"?\" only when r->args.len > 0)", host: "approotvar.test", target: "/", status: 302, location: "http://approotvar.test/login", upstream: null },
  { name: "... an empty query is no query", cite: "nginx ngx_http_variable_is_args", host: "approotvar.test", target: "/?", status: 302, location: "http://approotvar.test/login", upstream: null },
  { name: "app-root with a variable Portico does not expand is ignored", cite: "README annotation table (Portico: InvalidAnnotation)", host: "approotcookie.test", target: "/", status: 200, location: null, upstream: { line: "GET / HTTP/1.1", host: "approotcookie.test" } },
  // from-to-www-redirect
  { name: "from-to-www: www. to the bare host, port written", cite: "E/fromtowwwredirect.go 'should redirect from www HTTP to HTTP' (http://fromtowwwredirect.bar.com:80/foo)", host: "www.fromtowww.test", target: "/foo", status: 308, location: "http://fromtowww.test:80/foo", upstream: null },
  { name: "from-to-www: one trailing / cut, query kept", cite: "rootfs/etc/nginx/lua/nginx/ngx_srv_redirect.lua", host: "www.fromtowww.test", target: "/foo/?a=1", status: 308, location: "http://fromtowww.test:80/foo/?a=1", upstream: null },
  { name: "from-to-www: / becomes nothing", cite: "ngx_srv_redirect.lua (request_uri minus its trailing /)", host: "www.fromtowww.test", target: "/", status: 308, location: "http://fromtowww.test:80", upstream: null },
  { name: "from-to-www: the host itself is proxied", cite: "E/fromtowwwredirect.go 'sending request to domain should not redirect to www'", host: "fromtowww.test", target: "/foo", status: 200, location: null, upstream: { line: "GET /foo HTTP/1.1", host: "fromtowww.test" } },
  { name: "from-to-www: a www. host redirects the bare name to it", cite: "pkg/util/ingress/ingress.go BuildRedirects (from = www. removed)", host: "rev.test", target: "/p", status: 308, location: "http://www.rev.test:80/p", upstream: null },
  { name: "from-to-www: skipped when the other name is an Ingress host", cite: "ingress.go BuildRedirects 'Already exists an Ingress with %q hostname'", host: "www.skip.test", target: "/p", status: 200, location: null, upstream: { line: "GET /p HTTP/1.1", host: "www.skip.test" } },
  { name: "from-to-www: --http-redirect-code", cite: "T `return {{ $all.Cfg.HTTPRedirectCode }} $redirect_to`", host: "www.fromtowww.test", target: "/foo", via: "http301", status: 301, location: "http://fromtowww.test:80/foo", upstream: null },
  { name: "from-to-www over HTTPS stays on HTTPS, port 443", cite: "E/fromtowwwredirect.go 'should redirect from www HTTPS to HTTPS' (https://<host>:443)", host: "www.wwwtls.test", target: "/", via: "https", status: 308, location: "https://wwwtls.test:443", upstream: null },
  { name: "from-to-www: the port the client addressed (Portico; nginx writes its listen port)", cite: "ngx_srv_redirect.lua `ngx.var.server_port` (README: the port differs on purpose)", host: "www.fromtowww.test:8080", target: "/foo", status: 308, location: "http://fromtowww.test:8080/foo", upstream: null },
  { name: "from-to-www behind a trusted proxy: X-Forwarded-Proto and -Port", cite: "ngx_srv_redirect.lua (use_forwarded_headers)", host: "www.fromtowww.test", target: "/foo", via: "trusted", headers: { "x-forwarded-proto": "https", "x-forwarded-port": "443" }, status: 308, location: "https://fromtowww.test:443/foo", upstream: null },
  // ssl-redirect, force-ssl-redirect, preserve-trailing-slash, use-port-in-redirects
  { name: "force-ssl-redirect: 308, the trailing / of / cut", cite: "E/forcesslredirect.go 'should redirect to https' (https://forcesslredirect.bar.com)", host: "force.test", target: "/", status: 308, location: "https://force.test", upstream: null },
  { name: "HTTPS redirect: one trailing / cut from the path", cite: "lua_ingress.lua (preserve_trailing_slash == false)", host: "force.test", target: "/docs/", status: 308, location: "https://force.test/docs", upstream: null },
  { name: "HTTPS redirect: a / before the query stays", cite: "lua_ingress.lua (only the last character of request_uri)", host: "force.test", target: "/docs/?a=1", status: 308, location: "https://force.test/docs/?a=1", upstream: null },
  { name: "preserve-trailing-slash keeps it", cite: "E/preservetrailingslash.go (https://forcesslredirect.bar.com/)", host: "pts.test", target: "/", status: 308, location: "https://pts.test/", upstream: null },
  { name: "ssl-redirect on a TLS host: no port although --https-port is 8443", cite: "test/e2e/settings/tls.go 'should not use ports during the HTTP to HTTPS redirection'", host: "tls.test:8080", target: "/x?y=1", status: 308, location: "https://tls.test/x?y=1", upstream: null },
  { name: "use-port-in-redirects: :<https port>", cite: "lua_ingress.lua `https://%s:%s%s` with config.listen_ports.https", host: "tlsport.test", target: "/x", status: 308, location: "https://tlsport.test:8443/x", upstream: null },
  { name: "use-port-in-redirects writes :443 too", cite: "lua_ingress.lua (the port is always formatted in)", host: "tlsport.test", target: "/x", via: "https443", status: 308, location: "https://tlsport.test:443/x", upstream: null },
  { name: "--http-redirect-code for the HTTPS redirect", cite: "lua_ingress.lua `ngx_redirect(uri, config.http_redirect_code)`", host: "tls.test", target: "/", via: "http301", status: 301, location: "https://tls.test", upstream: null },
  { name: "ssl-redirect false: proxied", cite: "lua_ingress.lua redirect_to_https (ssl_redirect false)", host: "tlsoff.test", target: "/x", status: 200, location: null, upstream: { line: "GET /x HTTP/1.1", host: "tlsoff.test" } },
  // upstream-vhost
  { name: "upstream-vhost: the Host sent upstream", cite: "E/upstreamvhost.go `proxy_set_header Host \"upstreamvhost.bar.com\"`", host: "upstreamvhost.foo.com", target: "/a?b=1", status: 200, location: null, upstream: { line: "GET /a?b=1 HTTP/1.1", host: "upstreamvhost.bar.com" } },
  { name: "upstream-vhost with an nginx variable is ignored (Portico interpolates none)", cite: "README annotation table (ingress-nginx would send $host)", host: "vhostvar.test:81", target: "/", status: 200, location: null, upstream: { line: "GET / HTTP/1.1", host: "vhostvar.test:81" } },
  { name: "a route with stages and a default-backend: no endpoints sends to the fallback, not a 503", cite: "controller.go createServers (a Service without endpoints gets the custom default backend as its upstream); T `proxy_set_header Host` is the location's", host: "vhostfb.test", target: "/f", status: 200, location: null, upstream: { line: "GET /f HTTP/1.1", host: "vh.example" } },
  { name: "upstream-vhost with characters ingress-nginx refuses: 503", cite: "parser/validators.go ValidateServerName (validation error: Ingress dropped)", host: "vhostbad.test", target: "/", status: 503, location: null, upstream: null },
  // backend-protocol AUTO_HTTP
  { name: "AUTO_HTTP over HTTP: HTTP to the pod", cite: "E/backendprotocol.go `proxy_pass $scheme://upstream_balancer`", host: "auto.test", target: "/p", status: 200, location: null, upstream: { line: "GET /p HTTP/1.1", host: "auto.test", tls: false } },
  { name: "AUTO_HTTP over HTTPS: HTTPS to the pod", cite: "E/backendprotocol.go `proxy_pass $scheme://upstream_balancer`", host: "auto.test", target: "/p", via: "https", status: 200, location: null, upstream: { line: "GET /p HTTP/1.1", host: "auto.test", tls: true } },
  { name: "AUTO_HTTP follows the connection, not a trusted X-Forwarded-Proto", cite: "template.go buildProxyPass (`$scheme` is the connection's)", host: "auto.test", target: "/p", via: "trusted", headers: { "x-forwarded-proto": "https" }, status: 200, location: null, upstream: { line: "GET /p HTTP/1.1", host: "auto.test", tls: false } },
  { name: "AUTO_HTTP applies to the backend the canary policy chose", cite: "T: proxy_pass $scheme:// is the location's, for main's upstream and the canary's (balancer.lua route_to_alternative_balancer)", host: "autocanary.test", target: "/c", via: "https", status: 200, location: null, upstream: { line: "GET /c HTTP/1.1", host: "autocanary.test", tls: true } },
  // server-alias
  { name: "server-alias: the host itself", cite: "E/alias.go 'should return status code 200 for host 'foo' and 'bar''", host: "foo.test", target: "/", status: 200, location: null, upstream: { line: "GET / HTTP/1.1", host: "foo.test" } },
  { name: "server-alias: the alias is served as the host, with its own Host upstream", cite: "E/alias.go (Body contains host=bar)", host: "bar.test", target: "/x", status: 200, location: null, upstream: { line: "GET /x HTTP/1.1", host: "bar.test" } },
  { name: "no alias, no server: 404", cite: "E/alias.go 'should return status code 200 for host 'foo' and 404 for 'bar''", host: "baz.test", target: "/", status: 404, location: null, upstream: null },
  { name: "server-alias covers the host's paths from every Ingress", cite: "E/alias.go 'hosts defined in two ingresses, different path with one alias' (GET /app-a on bar)", host: "two-alias.test", target: "/app-a", status: 200, location: null, upstream: { line: "GET /app-a HTTP/1.1", host: "two-alias.test" } },
  { name: "an alias that is another Ingress's host is ignored: that host answers", cite: "controller.go createServers (`if _, ok := servers[alias]; ok { continue }`)", host: "perm.test", target: "/something", status: 301, location: "http://redirect.example.com", upstream: null },
  { name: "two hosts with one alias: the first host in name order serves it", cite: "controller.go getBackendServers sorts servers by name; nginx keeps the first of a conflicting server name", host: "shared.test", target: "/a", status: 200, location: null, upstream: { line: "GET /a HTTP/1.1", host: "shared.test" } },
  { name: "two hosts with one alias: not the second host's paths", cite: "as above (no fallthrough to dup-b.test)", host: "shared.test", target: "/b", status: 404, location: null, upstream: null },
  { name: "only the first Ingress of a host that sets server-alias counts", cite: "controller.go createServers ('Aliases already configured for server')", host: "first-alias-2.test", target: "/2", status: 404, location: null, upstream: null },
  { name: "the first Ingress's alias serves the later Ingress's paths", cite: "controller.go createServers (aliases are the server's)", host: "first-alias-1.test", target: "/2", status: 200, location: null, upstream: { line: "GET /2 HTTP/1.1", host: "first-alias-1.test" } },
  { name: "an alias of a wildcard host", cite: "T `server_name {{ buildServerName $server.Hostname }} {{ range $server.Aliases }}`", host: "wildalias.test", target: "/w", status: 200, location: null, upstream: { line: "GET /w HTTP/1.1", host: "wildalias.test" } },
  { name: "an alias is an exact name: it wins over a wildcard host", cite: "nginx server_name: exact names before wildcards (overwild.test has /only: no fallthrough)", host: "x.wild.test", target: "/elsewhere", status: 404, location: null, upstream: null },
  { name: "an alias of a TLS host is redirected to HTTPS with its own name (Portico: the host's spec.tls decides)", cite: "lua_ingress.lua redirect_to_https (README: ingress-nginx asks whether a certificate covers the alias)", host: "tlsalias2.test", target: "/x", status: 308, location: "https://tlsalias2.test/x", upstream: null },
  // service-upstream
  { name: "service-upstream: the ClusterIP and the port number the Ingress names", cite: "E/serviceupstream.go 'should use the Service Cluster IP and Port'; controller.go getServiceClusterEndpoint", host: "su.test", target: "/p", status: 200, location: null, upstream: { line: "GET /p HTTP/1.1", host: "su.test" } },
  { name: "service-upstream: a named port's number from the Service", cite: "controller.go getServiceClusterEndpoint (port by name)", host: "suname.test", target: "/p", status: 200, location: null, upstream: { line: "GET /p HTTP/1.1", host: "suname.test" } },
  { name: "without service-upstream the endpoints are used (here a dead one: 502)", cite: "controller.go createUpstreams (serviceEndpoints)", host: "suoff.test", target: "/p", status: 502, location: null, upstream: null },
  { name: "service-upstream on a headless Service falls back to its endpoints", cite: "controller.go getServiceClusterEndpoint ('no ClusterIP found') then serviceEndpoints", host: "suheadless.test", target: "/p", status: 200, location: null, upstream: { line: "GET /p HTTP/1.1", host: "suheadless.test" } },
];

function headerOf(raw: string, name: string): string | null {
  const head = raw.slice(0, raw.indexOf("\r\n\r\n"));
  return new RegExp(`^${name}:\\s*(.*)$`, "im").exec(head)?.[1]?.trim() ?? null;
}

describe("redirect and upstream-identity annotations, as ingress-nginx answers them", () => {
  for (const c of CASES) {
    test(`${c.name} [${c.cite}]`, async () => {
      const via = c.via ?? "http";
      const p = proxies.get(via) as Running;
      const extra = Object.entries(c.headers ?? {}).map(([k, v]) => `${k}: ${v}\r\n`).join("");
      const bytes = `GET ${c.target} HTTP/1.1\r\nHost: ${c.host}\r\n${extra}Connection: close\r\n\r\n`;
      const before = backend.hits.length;
      const raw = via === "https" ? await tlsRequest(p.port, c.host.replace(/:\d+$/, ""), bytes) : await rawRequest(p.port, bytes);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1]);
      const got = {
        status,
        location: headerOf(raw, "location"),
        upstream: backend.hits.slice(before).map((h) => ({ line: h.line, host: h.host, tls: h.tls })),
      };
      expect(got).toEqual({
        status: c.status,
        location: c.location?.replace("{port}", String(p.port)) ?? null,
        upstream: c.upstream === null ? [] : [{ line: c.upstream.line, host: c.upstream.host, tls: c.upstream.tls ?? false }],
      });
      if (c.body !== undefined) expect(raw.slice(raw.indexOf("\r\n\r\n") + 4)).toBe(c.body);
    });
  }
});

describe("HSTS over HTTPS", () => {
  test("not on the answers ingress-nginx gives from the server block (www redirect, app-root), on the others", async () => {
    const https = proxies.get("https") as Running;
    const get = async (host: string, target: string) => {
      const raw = await tlsRequest(https.port, host, `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      return { status: statusLine(raw), hsts: headerOf(raw, "strict-transport-security") };
    };
    // The header filter that adds HSTS is set in nginx.tmpl's locations only.
    expect(await get("www.wwwtls.test", "/")).toEqual({ status: 308, hsts: null });
    expect(await get("approottls.test", "/")).toEqual({ status: 302, hsts: null });
    expect(await get("approottls.test", "/x")).toEqual({ status: 200, hsts: "max-age=31536000" });
    expect(await get("permtls.test", "/")).toEqual({ status: 301, hsts: "max-age=31536000" });
  });
});

describe("host-wide redirects and aliases follow the table as it changes", () => {
  const docs = (ann: Ann) =>
    yamlDocs([ingressClass(), service("web", "app"), slice("web", "app", [1]), ing("site", "site.test", "/", ann), ing("other", "other.test", "/", {})]);

  test("a name that is the other name of two hosts goes to the smaller one, as nginx serves the first server of a name", () => {
    // pkg/util/ingress/ingress.go BuildRedirects runs over the servers sorted by host name.
    const www = (h: string) => ({ ...mkRoute(h, "/", "Prefix"), options: { ...DEFAULT_ROUTE_OPTIONS, fromToWwwRedirect: true } });
    const t = buildTable([www("a.test"), www("www.www.a.test"), www("zzz.test"), www("www.www.zzz.test")], null);
    const to = (h: string) => lookup(t, h, "/")?.route.options.stages?.[0]?.params.to ?? null;
    expect(to("www.a.test")).toBe("a.test");
    expect(to("www.zzz.test")).toBe("www.www.zzz.test");
    expect(to("a.test")).toBeNull(); // a host entry of its own
    expect(to("www.www.www.a.test")).toBeNull(); // the other name of www.www.a.test is www.a.test
  });

  test("server-alias: the host that comes later drops an alias of its name, and gives it back when it goes; diagnostics say why", () => {
    const objs = (extra: Record<string, unknown>[]) =>
      loadFixture(
        yamlDocs([
          ingressClass(), service("web", "app"), slice("web", "app", [1]),
          ing("a", "a.test", "/", { "server-alias": "b.test,c.test" }),
          ing("d", "d.test", "/", { "server-alias": "c.test" }),
          ing("a2", "a.test", "/two", { "server-alias": "e.test" }),
          ...extra,
        ]),
      ).snapshot;
    const c = new Compiler(DEFAULT_COMPILE_CONFIG);
    const aliasDiags = (r: ReturnType<Compiler["compile"]>) => r.diagnostics.filter((d) => d.reason === "AliasConflict").map((d) => `${d.name}: ${d.message}`);
    let r = c.compile(objs([]));
    expect(Object.fromEntries(r.table.aliasKeys)).toEqual({ "b.test": "a.test", "c.test": "a.test" });
    expect(lookup(r.table, "b.test", "/")?.route.ingress.name).toBe("a");
    expect(aliasDiags(r)).toEqual([
      "a2: server-alias is ignored for host a.test: Ingress web/a (no creationTimestamp) sets the aliases of that host, and only the first Ingress of a host that sets them counts",
      "d: server-alias c.test of host d.test is ignored: host a.test has that alias too and comes first (host name order)",
    ]);
    // An Ingress for b.test arrives: the alias goes (an Ingress host wins), and comes back with it gone.
    r = c.compile(objs([ing("b", "b.test", "/own", {})]));
    expect(Object.fromEntries(r.table.aliasKeys)).toEqual({ "c.test": "a.test" });
    expect(lookup(r.table, "b.test", "/")).toBeNull();
    expect(aliasDiags(r)).toContain("a: server-alias b.test of host a.test is ignored: b.test is the host of an Ingress rule, which wins");
    r = c.compile(objs([]));
    expect(Object.fromEntries(r.table.aliasKeys)).toEqual({ "b.test": "a.test", "c.test": "a.test" });
    expect(lookup(r.table, "b.test", "/")?.route.ingress.name).toBe("a");
    // The fresh compile of the same snapshot agrees.
    expect(Object.fromEntries(compile(objs([]), DEFAULT_COMPILE_CONFIG).table.aliasKeys)).toEqual(Object.fromEntries(r.table.aliasKeys));
  });

  test("the incremental compiler's patched tables add and remove them", () => {
    const c = new Compiler(DEFAULT_COMPILE_CONFIG);
    const plain = c.compile(loadFixture(docs({})).snapshot).table;
    expect(lookup(plain, "www.site.test", "/")).toBeNull();
    // The same hosts, now annotated: the table is patched, not rebuilt.
    const annotated = c.compile(loadFixture(docs({ "from-to-www-redirect": "true", "app-root": "/app" })).snapshot).table;
    expect(annotated.wwwRedirects).toBe(1);
    expect(lookup(annotated, "www.site.test", "/x")?.route.options.stages?.map((s) => s.kind)).toEqual(["www-redirect"]);
    expect(lookup(annotated, "site.test", "/")?.route.options.stages?.map((s) => s.kind)).toEqual(["app-root"]);
    const back = c.compile(loadFixture(docs({})).snapshot).table;
    expect(back.wwwRedirects).toBe(0);
    expect(lookup(back, "www.site.test", "/")).toBeNull();
    expect(lookup(back, "site.test", "/")?.route.options.stages).toBeNull();
  });
});

describe("upstream-vhost on a WebSocket upgrade", () => {
  test("the handshake reaches the pod with the vhost as Host, X-Forwarded-Host the client's", async () => {
    const be = await namedBackend("ws");
    const docs = yamlDocs([ingressClass(), service("web", "app"), slice("web", "app", [be.port]), ing("vhost", "ws.test", "/", { "upstream-vhost": "internal.example:8080" })]);
    const p = startProxy(compile(loadFixture(docs).snapshot, DEFAULT_COMPILE_CONFIG).table);
    try {
      const raw = await rawRequest(p.port, wsUpgrade("/chat?room=1", "ws.test"), 500);
      expect(statusLine(raw)).toBe(101);
      expect(be.lines()).toEqual(["GET /chat?room=1 HTTP/1.1"]);
      const head = be.hits[0]!.head;
      expect(/^host: (.*)$/im.exec(head)?.[1]).toBe("internal.example:8080");
      expect(/^x-forwarded-host: (.*)$/im.exec(head)?.[1]).toBe("ws.test");
    } finally {
      await p.stop();
      await be.stop();
    }
  });
});
