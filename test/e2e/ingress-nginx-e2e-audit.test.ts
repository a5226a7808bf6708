// ingress-nginx's own e2e cases, run against the real Portico process (--manifests): the
// cases of kubernetes/ingress-nginx test/e2e/annotations/*.go and test/e2e/settings/*.go (at
// dbb11b92) that no other Portico suite ports, for annotations and ConfigMap settings Portico
// supports. Each case names its Go file and the It(...) text; the expected status, and the
// request fields a raw-socket backend received, are the ones that test asserts. Where the Go
// test only reads nginx.conf, the case asserts what that configuration does to a request
// (nginx.tmpl at the same commit). docs/ingress-nginx-e2e-audit.md lists every case and where
// it is ported.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { rawRequest } from "../proxy/helpers.ts";
import { namedBackend, rawBackend, type RawBackend } from "../proxy/raw.ts";
import { allStarted, startPortico, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice } from "./objects.ts";

const NGINX = "nginx.ingress.kubernetes.io/";
type Ann = Record<string, string>;
const ann = (a: Ann): Ann => Object.fromEntries(Object.entries(a).map(([k, v]) => [`${NGINX}${k}`, v]));
const ing = (name: string, host: string, a: Ann = {}, path = "/") =>
  ingress("web", name, [{ host, paths: [{ path, service: "echo" }] }], { annotations: ann(a) });

const secret = (name: string, data: Record<string, string>) => ({
  apiVersion: "v1", kind: "Secret", type: "Opaque", metadata: { name, namespace: "web" },
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "latin1").toString("base64")])),
});

// auth.go buildSecret: "foo:<bcrypt of bar>" under key `auth`; buildMapSecret: key foo, value
// the hash. Cost 4 instead of the Go test's 14: the format is the same, the test is quicker.
const HASH = await Bun.password.hash("bar", { algorithm: "bcrypt", cost: 4 });
const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;
const AUTH = { "auth-type": "basic", "auth-realm": "test auth" };

const INGRESSES: Record<string, unknown>[] = [
  // settings/forwarded_headers.go
  ing("forwarded-headers", "forwarded-headers"),
  // annotations/auth.go (basic)
  ing("auth-none", "auth-none"),
  ing("auth-missing-secret", "auth-missing", { ...AUTH, "auth-secret": "something" }),
  ing("auth", "auth", { ...AUTH, "auth-secret": "test" }),
  ing("auth-map", "auth-map", { ...AUTH, "auth-secret": "test-map", "auth-secret-type": "auth-map" }),
  ing("auth-bad", "auth-bad", { ...AUTH, "auth-secret": "test-bad" }),
  ing("auth-cors", "auth-cors", { ...AUTH, "auth-secret": "test", "enable-cors": "true" }),
  ing("auth-url-bad", "auth-url-bad", { "auth-url": "https://invalid..auth.url" }),
  // annotations/ipallowlist.go, ipdenylist.go
  ing("allow", "ipallowlist.foo.com", { "allowlist-source-range": "18.0.0.0/8, 56.0.0.0/8" }),
  ing("deny", "ipdenylist.foo.com", { "denylist-source-range": "18.0.0.0/8, 56.0.0.1" }),
  ing("deny-allow", "ipdenyallow.foo.com", { "denylist-source-range": "18.1.0.0/16, 56.0.0.0/8", "whitelist-source-range": "18.0.0.0/8, 55.0.0.0/8" }),
  // annotations/proxy.go
  ing("body-8m", "body8m.foo.com", { "proxy-body-size": "8m" }),
  ing("timeouts", "timeouts.foo.com", { "proxy-connect-timeout": "50", "proxy-send-timeout": "20", "proxy-read-timeout": "20" }),
  ing("body-bad", "bodybad.foo.com", { "proxy-body-size": "15r" }),
  ing("timeouts-bad", "timeoutsbad.foo.com", { "proxy-connect-timeout": "50k", "proxy-send-timeout": "20k", "proxy-read-timeout": "20k" }),
  // annotations/clientbodybuffersize.go
  ing("cbbs", "cbbs.foo.com", { "client-body-buffer-size": "1000" }),
  ing("cbbs-bad", "cbbsbad.foo.com", { "client-body-buffer-size": "1b" }),
  ...["1K", "1k", "1m", "1M"].map((v) => ing(`cbbs-${v}`, `cbbs-${v}.foo.com`.toLowerCase(), { "client-body-buffer-size": v })),
];

// annotations/cors.go: each It's annotations (enable-cors true added), the Origins it sends by
// GET, and the Access-Control-* fields it expects (null: the field must be absent).
interface CorsCase {
  readonly it: string;
  readonly ann: Ann;
  readonly checks: ReadonlyArray<readonly [origin: string | null, expect: Readonly<Record<string, string | null>>]>;
}
const ACAO = "access-control-allow-origin";
const AFF = { affinity: "cookie", "session-cookie-name": "SERVERID" };
const CORS_CASES: CorsCase[] = [
  { it: "should enable cors", ann: {}, checks: [[null, {
    [ACAO]: "*", "access-control-allow-methods": "GET, PUT, POST, DELETE, PATCH, OPTIONS",
    "access-control-allow-headers": "DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization",
    "access-control-max-age": "1728000", "access-control-allow-credentials": "true",
  }]] },
  { it: "should set cors methods to only allow POST, GET", ann: { "cors-allow-methods": "POST, GET" }, checks: [[null, { "access-control-allow-methods": "POST, GET" }]] },
  { it: "should set cors max-age", ann: { "cors-max-age": "200" }, checks: [[null, { "access-control-max-age": "200" }]] },
  { it: "should disable cors allow credentials", ann: { "cors-allow-credentials": "false" }, checks: [[null, { "access-control-allow-credentials": null }]] },
  { it: "should allow origin for cors", ann: { "cors-allow-origin": "https://origin.cors.com:8080" }, checks: [["https://origin.cors.com:8080", { [ACAO]: "https://origin.cors.com:8080" }]] },
  { it: "should allow headers for cors", ann: { "cors-allow-headers": "DNT, User-Agent" }, checks: [[null, { "access-control-allow-headers": "DNT, User-Agent" }]] },
  { it: "should expose headers for cors", ann: { "cors-expose-headers": "X-CustomResponseHeader, X-CustomSecondHeader" }, checks: [[null, { "access-control-expose-headers": "X-CustomResponseHeader, X-CustomSecondHeader" }]] },
  { it: "should allow - single origin for multiple cors values", ann: { "cors-allow-origin": "https://origin.cors.com:8080, https://origin2.cors.com" }, checks: [["https://origin.cors.com:8080", { [ACAO]: "https://origin.cors.com:8080" }]] },
  { it: "should not allow - single origin for multiple cors values", ann: { "cors-allow-origin": "http://origin2.cors.com, https://origin.com" }, checks: [["http://no.origin.com", { [ACAO]: null }]] },
  { it: "should allow correct origins - single origin for multiple cors values", ann: { "cors-allow-origin": "origin.cors.com:8080, https://origin2.cors.com, https://origin.com" }, checks: [
    ["origin.cors.com:8080", { [ACAO]: null }], ["https://origin2.cors.com", { [ACAO]: "https://origin2.cors.com" }], ["https://origin.com", { [ACAO]: "https://origin.com" }],
  ] },
  { it: "should not break functionality", ann: { "cors-allow-origin": "*" }, checks: [[null, { [ACAO]: "*" }]] },
  { it: "should not break functionality - without `*`", ann: {}, checks: [[null, { [ACAO]: "*" }]] },
  { it: "should not break functionality with extra domain", ann: { "cors-allow-origin": "*, foo.bar.com" }, checks: [[null, { [ACAO]: "*" }]] },
  { it: "should not match", ann: { "cors-allow-origin": "https://foo.bar.com" }, checks: [["https://fooxbar.com", { [ACAO]: null }]] },
  { it: "should allow - single origin with required port", ann: { "cors-allow-origin": "http://origin.cors.com:8080, http://origin.com:8080" }, checks: [["http://origin.com:8080", { [ACAO]: "http://origin.com:8080" }]] },
  { it: "should not allow - single origin with port and origin without port", ann: { "cors-allow-origin": "https://origin2.cors.com, http://origin.com" }, checks: [["http://origin.com:8080", { [ACAO]: null }]] },
  { it: "should not allow - single origin without port and origin with required port", ann: { "cors-allow-origin": "http://origin.cors.com:8080, http://origin.com:8080" }, checks: [["http://origin.com", { [ACAO]: null }]] },
  { it: "should allow - matching origin with wildcard origin (2 subdomains)", ann: { "cors-allow-origin": "http://*.origin.cors.com, http://*.origin.com:8080" }, checks: [
    ["http://foo.origin.cors.com", { [ACAO]: "http://foo.origin.cors.com" }], ["http://bar-foo.origin.cors.com", { [ACAO]: "http://bar-foo.origin.cors.com" }],
  ] },
  { it: "should not allow - unmatching origin with wildcard origin (2 subdomains)", ann: { "cors-allow-origin": "http://*.origin.cors.com, http://*.origin.com:8080" }, checks: [["http://bar.foo.origin.cors.com", { [ACAO]: null }]] },
  { it: "should allow - matching origin+port with wildcard origin", ann: { "cors-allow-origin": "http://origin.cors.com:8080, http://*.origin.com:8080" }, checks: [["http://abc.origin.com:8080", { [ACAO]: "http://abc.origin.com:8080" }]] },
  { it: "should not allow - portless origin with wildcard origin", ann: { "cors-allow-origin": "http://origin.cors.com:8080, http://*.origin.com:8080" }, checks: [["http://abc.origin.com", { [ACAO]: null }]] },
  { it: "should allow correct origins - missing subdomain + origin with wildcard origin and correct origin", ann: { "cors-allow-origin": "http://origin.cors.com:8080, http://*.origin.com:8080" }, checks: [
    ["http://origin.com:8080", { [ACAO]: null }], ["http://bar.origin.com:8080", { [ACAO]: "http://bar.origin.com:8080" }],
  ] },
  { it: "should allow - missing origins (should allow all origins)", ann: { "cors-allow-origin": "      " }, checks: [
    ["http://origin.com", { [ACAO]: "*" }], ["http://book.origin.com", { [ACAO]: "*" }], ["test.origin.com", { [ACAO]: "*" }],
  ] },
  { it: "should allow correct origin but not others - cors allow origin annotations contain trailing comma", ann: { "cors-allow-origin": "https://origin-123.cors.com:8080,   ,https://origin-321.cors.com:8080," }, checks: [
    ["https://origin-123.cors.com:8080", { [ACAO]: "https://origin-123.cors.com:8080" }], ["https://origin-321.cors.com:8080", { [ACAO]: "https://origin-321.cors.com:8080" }],
    ["https://unknown.cors.com:8080", { [ACAO]: null }],
  ] },
  { it: "should allow - origins with non-http[s] protocols", ann: { "cors-allow-origin": "test://localhost, tauri://localhost:3000" }, checks: [
    ["test://localhost", { [ACAO]: "test://localhost" }], ["tauri://localhost:3000", { [ACAO]: "tauri://localhost:3000" }],
  ] },
];
const corsHost = (i: number) => `cors-${i}.foo.com`;
INGRESSES.push(...CORS_CASES.map((c, i) => ing(`cors-${i}`, corsHost(i), { "enable-cors": "true", ...c.ann })));

// annotations/canary.go: a main Ingress (Service echo) and a canary Ingress (Service canary)
// on /info of one host per It, and the requests it sends with the backend it expects
// (null: no backend, the status given). "created after": the canary comes first in the file.
type Req = { readonly headers?: Ann; readonly cookie?: string };
interface CanaryCase {
  readonly it: string;
  readonly canary: Ann | null;
  readonly main?: boolean;
  readonly canaryFirst?: boolean;
  readonly checks: ReadonlyArray<readonly [Req, "echo" | "canary" | 404]>;
}
const H = (v: string): Req => ({ headers: { CanaryByHeader: v } });
const CANARY_CASES: CanaryCase[] = [
  { it: "should response with a 200 status from the mainline upstream when requests are made to the mainline ingress", canary: { "canary-by-header": "CanaryByHeader" }, checks: [[{}, "echo"]] },
  { it: "should return 404 status for requests to the canary if no matching ingress is found", canary: { "canary-by-header": "CanaryByHeader" }, main: false, checks: [[H("always"), 404]] },
  { it: "should route requests to the correct upstream if mainline ingress is created before the canary ingress", canary: { "canary-by-header": "CanaryByHeader" }, checks: [[H("never"), "echo"], [H("always"), "canary"]] },
  { it: "should route requests to the correct upstream if mainline ingress is created after the canary ingress", canary: { "canary-by-header": "CanaryByHeader" }, canaryFirst: true, checks: [[H("never"), "echo"], [H("always"), "canary"]] },
  { it: "when canaried by header with no value: should route requests to the correct upstream", canary: { "canary-by-header": "CanaryByHeader" }, checks: [[H("always"), "canary"], [H("never"), "echo"], [H("badheadervalue"), "echo"]] },
  { it: "when canaried by header with value: should route requests to the correct upstream", canary: { "canary-by-header": "CanaryByHeader", "canary-by-header-value": "DoCanary" }, checks: [
    [H("DoCanary"), "canary"], [H("always"), "echo"], [H("never"), "echo"], [H("otherheadervalue"), "echo"],
  ] },
  { it: "when canaried by header with value and pattern: should route requests to the correct upstream (pattern)", canary: { "canary-by-header": "CanaryByHeader", "canary-by-header-pattern": "^Do[A-Z][a-z]+y$" }, checks: [[H("DoCanary"), "canary"], [H("Docanary"), "echo"]] },
  { it: "when canaried by header with value and pattern: should route requests to the correct upstream (value wins)", canary: { "canary-by-header": "CanaryByHeader", "canary-by-header-value": "DoCanary", "canary-by-header-pattern": "^Do[A-Z][a-z]+y$" }, checks: [[H("DoCananry"), "echo"]] },
  { it: "should routes to mainline upstream when the given Regex causes error", canary: { "canary-by-header": "CanaryByHeader", "canary-by-header-pattern": "[][**da?$&*", "canary-by-cookie": "CanaryByCookie" }, checks: [[{ headers: { CanaryByHeader: "DoCanary" }, cookie: "CanaryByCookie=always" }, "echo"]] },
  { it: "when canaried by header with value and cookie: should route requests to the correct upstream", canary: { "canary-by-header": "CanaryByHeader", "canary-by-header-value": "DoCanary", "canary-by-cookie": "CanaryByCookie" }, checks: [[{ headers: { CanaryByHeader: "otherheadervalue" }, cookie: "CanaryByCookie=always" }, "canary"]] },
  { it: "respects always and never values", canary: { "canary-by-cookie": "Canary-By-Cookie" }, checks: [
    [{ cookie: "Canary-By-Cookie=always" }, "canary"], [{ cookie: "Canary-By-Cookie=never" }, "echo"], [{ cookie: "Canary-By-Cookie=badcookievalue" }, "echo"],
  ] },
  { it: "should route requests only to mainline if canary weight is 0", canary: { "canary-weight": "0" }, checks: [[{}, "echo"], [{}, "echo"], [{}, "echo"]] },
  { it: "should route requests only to canary if canary weight is 100", canary: { "canary-weight": "100" }, checks: [[{}, "canary"], [{}, "canary"], [{}, "canary"]] },
  { it: "should route requests only to canary if canary weight is equal to canary weight total", canary: { "canary-weight": "1000", "canary-weight-total": "1000" }, checks: [[{}, "canary"], [{}, "canary"], [{}, "canary"]] },
  { it: "should not use canary with domain as a server", canary: { "canary-by-header": "CanaryByHeader" }, main: false, checks: [[{}, 404]] },
];
// canary.go "split" Its: over 60 requests each side is seen (all on one side: p = 2^-59 at 50%).
const SPLIT_CASES: { it: string; canary: Ann }[] = [
  { it: "should route requests split between mainline and canary if canary weight is 50", canary: { "canary-weight": "50" } },
  { it: "should route requests split between mainline and canary if canary weight is 100 and weight total is 200", canary: { "canary-weight": "100", "canary-weight-total": "200" } },
];
const canaryHost = (i: number) => `canary-${i}.foo.com`;
const splitHost = (i: number) => `split-${i}.foo.com`;
const canaryPair = (name: string, host: string, c: Ann, main = true, canaryFirst = false) => {
  const m = main ? [ingress("web", `${name}-main`, [{ host, paths: [{ path: "/info", service: "echo" }] }])] : [];
  const k = ingress("web", `${name}-canary`, [{ host, paths: [{ path: "/info", service: "canary" }] }], { annotations: ann({ canary: "true", ...c }) });
  return canaryFirst ? [k, ...m] : [...m, k];
};
INGRESSES.push(...CANARY_CASES.flatMap((c, i) => canaryPair(`canary-${i}`, canaryHost(i), c.canary ?? {}, c.main ?? true, c.canaryFirst ?? false)));
INGRESSES.push(...SPLIT_CASES.flatMap((c, i) => canaryPair(`split-${i}`, splitHost(i), c.canary)));
// canary.go "does not crash when canary ingress has multiple paths to the same non-matching backend".
INGRESSES.push(
  ingress("web", "multi-canary", [{ host: "multi.foo.com", paths: [{ path: "/foo", service: "canary" }, { path: "/bar", service: "canary" }] }], { annotations: ann({ canary: "true", "canary-by-header": "CanaryByHeader" }) }),
  ingress("web", "multi-main", [{ host: "multi.foo.com", paths: [{ path: "/info", service: "echo" }] }]),
);
// annotations/affinity.go: one host per It; each check is a request (host, path) and what its
// Set-Cookie must contain (strings) or must not (after "!"), or `null`: no Set-Cookie at all.
INGRESSES.push(
  ing("aff-sticky", "sticky.foo.com", AFF),
  ing("aff-path", "path.foo.com", AFF, "/something"),
  ingress("web", "aff-rules", [{ host: "morethanonerule.foo.com", paths: [{ path: "/something", service: "echo" }, { path: "/somewhereelse", service: "echo" }] }], { annotations: ann(AFF) }),
  ing("aff-expires", "cookieexpires.foo.com", { affinity: "cookie", "session-cookie-name": "ExpiresCookie", "session-cookie-expires": "172800", "session-cookie-max-age": "259200" }),
  ing("aff-domain", "cookiedomain.foo.com", { affinity: "cookie", "session-cookie-name": "DomainCookie", "session-cookie-domain": "foo.bar" }),
  ing("aff-nodomain", "cookienodomain.foo.com", { affinity: "cookie", "session-cookie-name": "NoDomainCookie" }),
  ingress("web", "aff-regex", [{ host: "useregex.foo.com", paths: [{ path: "/foo/.*", type: "ImplementationSpecific", service: "echo" }] }], { annotations: ann({ ...AFF, "use-regex": "true", "session-cookie-path": "/foo/bar" }) }),
  ingress("web", "aff-regex-warn", [{ host: "useregexwarn.foo.com", paths: [{ path: "/foo/.*", type: "ImplementationSpecific", service: "echo" }] }], { annotations: ann({ ...AFF, "use-regex": "true" }) }),
  ingress("web", "aff-sep-1", [{ host: "separate.foo.com", paths: [{ path: "/foo/bar", service: "echo" }] }], { annotations: ann({ affinity: "cookie" }) }),
  ingress("web", "aff-sep-2", [{ host: "separate.foo.com", paths: [{ path: "/foo", service: "echo" }] }]),
  ing("aff-alias", "alias.foo.com", { ...AFF, "server-alias": "a1.foo.com,a2.foo.com" }, "/bar"),
  ing("aff-secure", "secure.foo.com", { ...AFF, "session-cookie-secure": "true" }, "/bar"),
  ing("aff-insecure", "insecure.foo.com", { ...AFF, "session-cookie-secure": "false" }, "/bar"),
);
type CookieCheck = readonly [host: string, path: string, want: readonly string[] | null];
const AFFINITY_CASES: ReadonlyArray<{ it: string; checks: readonly CookieCheck[] }> = [
  { it: "should set sticky cookie SERVERID", checks: [["sticky.foo.com", "/", ["SERVERID="]]] },
  { it: "should set the path to /something on the generated cookie", checks: [["path.foo.com", "/something", ["Path=/something"]]] },
  { it: "does not set the path to / on the generated cookie if there's more than one rule referring to the same backend", checks: [
    ["morethanonerule.foo.com", "/something", ["Path=/something"]], ["morethanonerule.foo.com", "/somewhereelse", ["Path=/somewhereelse"]],
  ] },
  // The Go test compares Expires with now+172800 s to the minute; the format is checked here.
  { it: "should set cookie with expires", checks: [["cookieexpires.foo.com", "/", ["Max-Age=259200", "Expires="]]] },
  { it: "should set cookie with domain", checks: [["cookiedomain.foo.com", "/", ["Domain=foo.bar"]]] },
  { it: "should not set cookie without domain annotation", checks: [["cookienodomain.foo.com", "/", ["NoDomainCookie=", "!; Domain"]]] },
  { it: "should work with use-regex annotation and session-cookie-path", checks: [["useregex.foo.com", "/foo/bar", ["Path=/foo/bar", "SERVERID="]]] },
  { it: "should not set affinity across all server locations when using separate ingresses", checks: [["separate.foo.com", "/foo", null], ["separate.foo.com", "/foo/bar", ["Path=/foo/bar"]]] },
  { it: "should work with server-alias annotation", checks: [["alias.foo.com", "/bar", ["SERVERID="]], ["a1.foo.com", "/bar", ["SERVERID="]], ["a2.foo.com", "/bar", ["SERVERID="]]] },
  { it: "should set secure in cookie with provided true annotation on http", checks: [["secure.foo.com", "/bar", ["; Secure"]]] },
  { it: "should not set secure in cookie with provided false annotation on http", checks: [["insecure.foo.com", "/bar", ["SERVERID=", "!; Secure"]]] },
];

// canary.go "should not use canary as a catch-all server": two Ingresses with only a
// defaultBackend, the canary one by header; only `trusting` reads them (its own folder), so
// the 404s the other cases expect from `plain` stay 404s.
const CATCH_ALL = [
  // affinity.go "should set sticky cookie without host" (its path is "/"; here a longer one so
  // the catch-all case above still reaches the defaultBackend).
  ingress("web", "aff-nohost", [{ paths: [{ path: "/sticky-nohost", service: "echo" }] }], { annotations: ann(AFF) }),
  ingress("web", "catch-all", [], { defaultBackend: "echo" }),
  ingress("web", "catch-all-canary", [], { defaultBackend: "canary", annotations: ann({ canary: "true", "canary-by-header": "CanaryByHeader" }) }),
];

interface Outcome {
  readonly status: number;
  /** Response header block (after the status line), lower-case names. */
  readonly response: string;
  /** The head the backend received, or null when none did. */
  readonly upstream: string | null;
  /** Which backend received it ("echo" is every main Ingress's Service, "canary" the canaries'). */
  readonly backend: string | null;
}

let dir = "";
let plain: Portico;
let trusting: Portico;
let echo: RawBackend;
let canary: RawBackend;
let sts: RawBackend;
let sent = 0;

beforeAll(async () => {
  echo = await namedBackend("echo");
  canary = await namedBackend("canary");
  // settings/tls.go "overriding what's set from the upstream": the pod sends its own field.
  sts = await rawBackend(() => "HTTP/1.1 200 OK\r\nStrict-Transport-Security: max-age=100\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
  dir = mkdtempSync(join(tmpdir(), "portico-e2e-audit-"));
  const objects = [
    ingressClass(), service("web", "echo"), slice("web", "echo", [echo.port]), service("web", "canary"), slice("web", "canary", [canary.port]),
    service("web", "sts"), slice("web", "sts", [sts.port]),
    ingress("web", "hsts", [{ host: "hsts.foo.com", paths: [{ path: "/", service: "sts" }] }], { tls: [{ hosts: ["hsts.foo.com"] }] }),
    // ingress-nginx's ConfigMap for `trusting` (settings/forwarded_headers.go, tls.go).
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "ingress-nginx-controller", namespace: "ingress-nginx" }, data: {
      "use-forwarded-headers": "true", "hsts-max-age": "86400", "hsts-preload": "true", "hsts-include-subdomains": "false",
    } },
    secret("test", { auth: `foo:${HASH}\n` }),
    secret("test-map", { foo: HASH }),
    // auth.go "invalid content": a user without a hash.
    secret("test-bad", { auth: "foo:" }),
    ...INGRESSES,
  ];
  mkdirSync(join(dir, "plain"));
  mkdirSync(join(dir, "trusting"));
  writeFileSync(join(dir, "plain", "all.yaml"), objects.map((o) => JSON.stringify(o)).join("\n---\n"));
  writeFileSync(join(dir, "trusting", "all.yaml"), [...objects, ...CATCH_ALL].map((o) => JSON.stringify(o)).join("\n---\n"));
  // `plain`: ingress-nginx's defaults; `trusting`: ingress-nginx's ConfigMap above
  // (use-forwarded-headers true trusts every peer, as proxy-real-ip-cidr's default 0.0.0.0/0).
  [plain, trusting] = await allStarted([
    startPortico(["--manifests", join(dir, "plain")]),
    startPortico(["--manifests", join(dir, "trusting"), "--nginx-configmap", "ingress-nginx/ingress-nginx-controller"]),
  ]);
});

afterAll(async () => {
  await Promise.all([plain?.stop(), trusting?.stop()]);
  await echo?.stop();
  await canary?.stop();
  await sts?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function send(p: Portico, host: string, headers: Ann = {}, method = "GET", target = "/"): Promise<Outcome> {
  const id = `e2e-audit-${++sent}`;
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
  const raw = await rawRequest(p.ports.http, `${method} ${target} HTTP/1.1\r\nHost: ${host}\r\nX-Request-ID: ${id}\r\n${extra}Connection: close\r\n\r\n`, 20_000);
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0);
  const hits = [["echo", echo], ["canary", canary]].flatMap(([name, b]) =>
    (b as RawBackend).hits.filter((h) => field(h.head, "x-request-id") === id).map((h) => [name as string, h.head] as const));
  expect(hits.length).toBeLessThanOrEqual(1);
  return { status, response: raw.slice(0, raw.indexOf("\r\n\r\n")), upstream: hits[0]?.[1] ?? null, backend: hits[0]?.[0] ?? null };
}

/** A field of a head as received (case-insensitive name), or null; at most one may be present. */
function field(head: string, name: string): string | null {
  const hits = head.split("\r\n").slice(1).filter((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  expect(hits.length).toBeLessThanOrEqual(1);
  return hits[0] === undefined ? null : hits[0].slice(name.length + 1).trim();
}

const CLIENT_FORWARDED = {
  "X-Forwarded-Port": "1234", "X-Forwarded-Proto": "myproto", "X-Forwarded-Scheme": "myproto",
  "X-Forwarded-For": "1.2.3.4", "X-Forwarded-Host": "myhost",
};

describe("settings/forwarded_headers.go", () => {
  test("should not trust X-Forwarded headers when setting is false", async () => {
    const out = await send(plain, "forwarded-headers", CLIENT_FORWARDED);
    expect(out.status).toBe(200);
    const up = out.upstream as string;
    expect(field(up, "host")).toBe("forwarded-headers");
    expect(field(up, "x-forwarded-port")).toBe("80");
    expect(field(up, "x-forwarded-proto")).toBe("http");
    expect(field(up, "x-forwarded-scheme")).toBe("http");
    expect(field(up, "x-original-forwarded-for")).toBe("1.2.3.4");
    expect(field(up, "x-original-forwarded-host")).toBe("myhost");
    expect(field(up, "x-forwarded-host")).toBe("forwarded-headers");
    expect(field(up, "x-forwarded-for")).toBe("127.0.0.1");
  });

  test("should trust X-Forwarded headers when setting is true", async () => {
    const out = await send(trusting, "forwarded-headers", CLIENT_FORWARDED);
    expect(out.status).toBe(200);
    const up = out.upstream as string;
    // host=myhost: nginx.tmpl sends Host $best_http_host, the X-Forwarded-Host (lua_ingress.lua).
    expect(field(up, "host")).toBe("myhost");
    expect(field(up, "x-forwarded-host")).toBe("myhost");
    expect(field(up, "x-forwarded-proto")).toBe("myproto");
    expect(field(up, "x-forwarded-scheme")).toBe("myproto");
    expect(field(up, "x-forwarded-port")).toBe("1234");
    // x-forwarded-for=1.2.3.4: $remote_addr, compute-full-forwarded-for being false (config.go).
    expect(field(up, "x-forwarded-for")).toBe("1.2.3.4");
    const listed = await send(trusting, "forwarded-headers", { ...CLIENT_FORWARDED, "X-Forwarded-Host": "myhost.com, another.host,example.net" });
    expect(listed.status).toBe(200);
    // "ensuring that first entry in X-Forwarded-Host is used as the best host".
    expect(field(listed.upstream as string, "host")).toBe("myhost.com");
    expect(field(listed.upstream as string, "x-forwarded-host")).toBe("myhost.com");
  });

  test("a client's X-Scheme and Proxy never reach the backend (nginx.tmpl: X-Scheme $pass_access_scheme; Proxy \"\")", async () => {
    const out = await send(plain, "forwarded-headers", { "X-Scheme": "https", Proxy: "http://evil.example:3128", "X-Original-Forwarded-For": "6.6.6.6" });
    expect(out.status).toBe(200);
    const up = out.upstream as string;
    expect(field(up, "x-scheme")).toBe("http");
    expect(field(up, "proxy")).toBeNull();
    // $http_x_forwarded_for is empty: nginx sends no X-Original-Forwarded-For.
    expect(field(up, "x-original-forwarded-for")).toBeNull();
  });
});

describe("annotations/cors.go", () => {
  CORS_CASES.forEach((c, i) => {
    test(c.it, async () => {
      for (const [origin, want] of c.checks) {
        const out = await send(plain, corsHost(i), origin === null ? {} : { Origin: origin });
        expect(out.status).toBe(200);
        for (const [name, value] of Object.entries(want)) expect([origin, name, responseField(out.response, name)]).toEqual([origin, name, value]);
      }
    });
  });
});

/** A response field (case-insensitive name), or null; at most one may be present. */
function responseField(head: string, name: string): string | null {
  return field(head, name);
}

describe("annotations/canary.go", () => {
  CANARY_CASES.forEach((c, i) => {
    test(c.it, async () => {
      for (const [req, want] of c.checks) {
        const headers = { ...req.headers, ...(req.cookie ? { Cookie: req.cookie } : {}) };
        const out = await send(plain, canaryHost(i), headers, "GET", "/info");
        expect([headers, out.status, out.backend]).toEqual([headers, want === 404 ? 404 : 200, want === 404 ? null : want]);
      }
    });
  });
  test("does not crash when canary ingress has multiple paths to the same non-matching backend", async () => {
    const main = await send(plain, "multi.foo.com", {}, "GET", "/info");
    expect([main.status, main.backend]).toEqual([200, "echo"]);
    // A canary path without a main path is not served (the "no matching ingress" case above).
    const lone = await send(plain, "multi.foo.com", { CanaryByHeader: "always" }, "GET", "/foo");
    expect([lone.status, lone.backend]).toEqual([404, null]);
  });
  test("should not use canary as a catch-all server", async () => {
    const out = await send(trusting, "unknown.foo.com", {}, "GET", "/info");
    expect([out.status, out.backend]).toEqual([200, "echo"]);
  });
  SPLIT_CASES.forEach((c, i) => {
    test(c.it, async () => {
      const seen = new Set<string | null>();
      for (let n = 0; n < 60 && seen.size < 2; n++) {
        const out = await send(plain, splitHost(i), {}, "GET", "/info");
        expect(out.status).toBe(200);
        seen.add(out.backend);
      }
      expect([...seen].sort()).toEqual(["canary", "echo"]);
    });
  });
});

describe("annotations/affinity.go", () => {
  for (const c of AFFINITY_CASES) {
    test(c.it, async () => {
      for (const [host, path, want] of c.checks) {
        const out = await send(plain, host, {}, "GET", path);
        expect([host, path, out.status, out.backend]).toEqual([host, path, 200, "echo"]);
        const cookie = responseField(out.response, "set-cookie");
        if (want === null) {
          expect([host, path, cookie]).toEqual([host, path, null]);
          continue;
        }
        for (const w of want) {
          if (w.startsWith("!")) expect(cookie ?? "").not.toContain(w.slice(1));
          else expect(cookie ?? "").toContain(w);
        }
        if (want.includes("Expires=")) expect(cookie).toMatch(/; Expires=[A-Z][a-z]{2}, \d{2}-[A-Z][a-z]{2}-\d{2} \d{2}:\d{2}/);
      }
    });
  }
  test("should set sticky cookie without host", async () => {
    const out = await send(trusting, "any.example", {}, "GET", "/sticky-nohost");
    expect([out.status, out.backend]).toEqual([200, "echo"]);
    expect(responseField(out.response, "set-cookie")).toContain("SERVERID=");
  });
  test("should warn user when use-regex is true and session-cookie-path is not set (the cookie is still set)", async () => {
    const out = await send(plain, "useregexwarn.foo.com", {}, "GET", "/foo/bar");
    expect(out.status).toBe(200);
    expect(responseField(out.response, "set-cookie")).toContain("SERVERID=");
    // The Go test reads the controller's log for controller.go's warning; here it is a
    // SessionCookiePath diagnostic (log line, metric, Event) on that Ingress alone.
    const warned = plain.lines.filter((l) => l.includes("session-cookie-path should be set when use-regex is true"));
    expect(warned.length).toBeGreaterThan(0);
    expect(warned.every((l) => l.includes("aff-regex-warn") && l.includes("SessionCookiePath"))).toBe(true);
  });
});

describe("annotations/auth.go (auth-type basic)", () => {
  test("should return status code 200 when no authentication is configured", async () => {
    expect((await send(plain, "auth-none")).status).toBe(200);
  });
  test("should return status code 503 when authentication is configured with an invalid secret", async () => {
    const out = await send(plain, "auth-missing");
    expect([out.status, out.upstream]).toEqual([503, null]);
  });
  test("should return status code 401 when authentication is configured but Authorization header is not configured", async () => {
    const out = await send(plain, "auth");
    expect([out.status, out.upstream]).toEqual([401, null]);
    expect(out.response).toMatch(/\r\nwww-authenticate: Basic realm="test auth"/i);
  });
  test("should return status code 401 when authentication is configured and Authorization header is sent with invalid credentials", async () => {
    const out = await send(plain, "auth", { Authorization: basic("user", "pass") });
    expect([out.status, out.upstream]).toEqual([401, null]);
  });
  test("should return status code 401 and cors headers when authentication and cors is configured but Authorization header is not configured", async () => {
    const out = await send(plain, "auth-cors");
    expect([out.status, out.upstream]).toEqual([401, null]);
    expect(out.response).toMatch(/\r\naccess-control-allow-origin: \*\r?(\n|$)/i);
  });
  test("keeps processing new ingresses even if one of the existing ingresses is misconfigured", async () => {
    // auth-missing names a Secret that does not exist; the Ingress beside it is served.
    expect((await send(plain, "auth-missing")).status).toBe(503);
    expect((await send(plain, "auth-none")).status).toBe(200);
  });
  test("with invalid auth-url should deny whole location: should return 503 (location was denied)", async () => {
    const out = await send(plain, "auth-url-bad");
    expect([out.status, out.upstream]).toEqual([503, null]);
  });
  test("should return status code 200 when authentication is configured and Authorization header is sent", async () => {
    const out = await send(plain, "auth", { Authorization: basic("foo", "bar") });
    expect(out.status).toBe(200);
    expect(out.upstream).not.toBeNull();
  });
  test("should return status code 200 when authentication is configured with a map and Authorization header is sent", async () => {
    expect((await send(plain, "auth-map", { Authorization: basic("foo", "bar") })).status).toBe(200);
  });
  test("should return status code 401 when authentication is configured with invalid content and Authorization header is sent", async () => {
    const out = await send(plain, "auth-bad", { Authorization: basic("foo", "bar") });
    expect([out.status, out.upstream]).toEqual([401, null]);
  });
});

describe("annotations/ipallowlist.go, ipdenylist.go (use-forwarded-headers true)", () => {
  test("ipallowlist.go should set valid ip allowlist range: allow 18/8, 56/8, deny all", async () => {
    expect((await send(plain, "ipallowlist.foo.com")).status).toBe(403);
    expect((await send(trusting, "ipallowlist.foo.com", { "X-Forwarded-For": "18.1.2.3" })).status).toBe(200);
    expect((await send(trusting, "ipallowlist.foo.com", { "X-Forwarded-For": "56.0.0.9" })).status).toBe(200);
    expect((await send(trusting, "ipallowlist.foo.com", { "X-Forwarded-For": "57.0.0.1" })).status).toBe(403);
  });
  test("ipdenylist.go only deny explicitly denied IPs, allow all others", async () => {
    const h = "ipdenylist.foo.com";
    expect((await send(trusting, h, { "X-Forwarded-For": "18.0.0.1" })).status).toBe(403);
    expect((await send(trusting, h, { "X-Forwarded-For": "56.0.0.1" })).status).toBe(403);
    expect((await send(trusting, h, { "X-Forwarded-For": "56.0.0.2" })).status).toBe(200);
  });
  test("ipdenylist.go only allow explicitly allowed IPs, deny all others", async () => {
    const h = "ipdenyallow.foo.com";
    expect((await send(trusting, h, { "X-Forwarded-For": "18.1.0.1" })).status).toBe(403);
    expect((await send(trusting, h, { "X-Forwarded-For": "10.10.10.10" })).status).toBe(403);
    expect((await send(trusting, h, { "X-Forwarded-For": "18.4.0.1" })).status).toBe(200);
    expect((await send(trusting, h, { "X-Forwarded-For": "55.55.55.55" })).status).toBe(200);
  });
});

describe("annotations/proxy.go", () => {
  // client_max_body_size 8m: nginx refuses a declared length above it with 413 before the body.
  test("should set proxy client-max-body-size to 8m", async () => {
    const over = await send(plain, "body8m.foo.com", { "Content-Length": String(8 * 1024 * 1024 + 1) }, "POST");
    expect([over.status, over.upstream]).toEqual([413, null]);
    const at = await send(plain, "body8m.foo.com", { "Content-Length": "0" }, "POST");
    expect(at.status).toBe(200);
  });
  // A value nginx's size syntax does not take is left out of nginx.conf (the Ingress is served
  // with the default limit): Portico ignores it too and serves the Ingress.
  test("should not set proxy client-max-body-size to incorrect value", async () => {
    expect((await send(plain, "bodybad.foo.com")).status).toBe(200);
  });
  test("should not set invalid proxy timeouts (the Ingress is still served)", async () => {
    expect((await send(plain, "timeoutsbad.foo.com")).status).toBe(200);
  });
});

describe("annotations/clientbodybuffersize.go", () => {
  test("should set client_body_buffer_size to 1000 (served; a small body is forwarded)", async () => {
    expect((await send(plain, "cbbs.foo.com")).status).toBe(200);
  });
  for (const v of ["1K", "1k", "1m", "1M"]) {
    test(`should set client_body_buffer_size to ${v} (served; a body is forwarded whole)`, async () => {
      const body = "x".repeat(3000);
      const id = `e2e-audit-cbbs-${v}`;
      const raw = await rawRequest(plain.ports.http, `POST / HTTP/1.1\r\nHost: cbbs-${v.toLowerCase()}.foo.com\r\nX-Request-ID: ${id}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`, 20_000);
      expect(raw.startsWith("HTTP/1.1 200")).toBe(true);
      const hit = echo.hits.find((h) => field(h.head, "x-request-id") === id);
      expect(hit?.body).toBe(body);
    });
  }
  test("should not set client_body_buffer_size to invalid 1b (the Ingress is still served)", async () => {
    expect((await send(plain, "cbbsbad.foo.com")).status).toBe(200);
  });
});

describe("settings/server_tokens.go", () => {
  // Portico adds no Server field of its own by default. ingress-nginx (server-tokens false, its
  // default) also clears the pod's: --ingress-nginx-compat or the key does that here, checked in
  // test/e2e/nginx-configmap-auth-server.test.ts. This pod sends none, so both answers carry none.
  test("should not exists Server header in the response (Portico's own fields)", async () => {
    const proxied = await send(plain, "auth-none");
    const own = await send(plain, "nohost.example");
    expect([proxied.status, own.status]).toEqual([200, 404]);
    expect([responseField(proxied.response, "server"), responseField(own.response, "server")]).toEqual([null, null]);
  });
});

describe("annotations/proxy.go (continued)", () => {
  test("should set valid proxy timeouts (requests are served)", async () => {
    expect((await send(plain, "timeouts.foo.com")).status).toBe(200);
  });
});

/** One GET over TLS to `p`'s HTTPS port (SNI = host), the response head. */
function httpsHead(p: Portico, host: string, id = "-"): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const s = tls.connect({ host: "127.0.0.1", port: p.ports.https, servername: host, rejectUnauthorized: false }, () =>
      s.write(`GET / HTTP/1.1\r\nHost: ${host}\r\nX-Request-ID: ${id}\r\nConnection: close\r\n\r\n`));
    s.on("data", (d: Buffer) => chunks.push(d));
    s.on("close", () => { const raw = Buffer.concat(chunks).toString("latin1"); resolve(raw.slice(0, raw.indexOf("\r\n\r\n"))); });
    s.on("error", reject);
  });
}

describe("settings/tls.go (hsts-max-age 86400, hsts-preload true, hsts-include-subdomains false)", () => {
  // The Go test expects `https://example.com`: behind a believed proxy the redirect names the
  // first X-Forwarded-Host, its port cut (lua_ingress.lua redirect_host / parse_x_forwarded_host).
  test("should not use ports or X-Forwarded-Host during the HTTP to HTTPS redirection", async () => {
    const out = await send(trusting, "hsts.foo.com", { "X-Forwarded-Host": "example.com:80" });
    expect([out.status, responseField(out.response, "location"), out.upstream]).toEqual([308, "https://example.com", null]);
  });
  test("the redirect names the first of several X-Forwarded-Host entries; an invalid one is refused", async () => {
    const out = await send(trusting, "hsts.foo.com", { "X-Forwarded-Host": "first.example:8080, second.example" });
    expect([out.status, responseField(out.response, "location"), out.upstream]).toEqual([308, "https://first.example", null]);
    const bad = await send(trusting, "hsts.foo.com", { "X-Forwarded-Host": "evil.example/x" });
    expect([bad.status, bad.upstream]).toEqual([400, null]);
  });
  test("setting preload parameter", async () => {
    const head = await httpsHead(trusting, "hsts.foo.com");
    expect(head.startsWith("HTTP/1.1 200")).toBe(true);
    expect(responseField(head, "strict-transport-security")).toBe("max-age=86400; preload");
  });
  test("overriding what's set from the upstream (one field, Portico's)", async () => {
    // responseField fails on a second field; the pod's max-age=100 must be gone.
    const head = await httpsHead(trusting, "hsts.foo.com");
    expect(responseField(head, "strict-transport-security")).toBe("max-age=86400; preload");
    expect(sts.hits.length).toBeGreaterThan(0);
  });
});

describe("settings/listen_nondefault_ports.go", () => {
  // A difference kept on purpose (docs/ingress-nginx-e2e-audit.md, this row): ingress-nginx
  // sends its listening port ($server_port, 1080 in the Go test, which addresses Service port
  // 80); Portico listens on a non-default port here too and sends the port the client
  // addressed: 80 without a port in Host, else the Host header's.
  test("should set X-Forwarded-Port headers accordingly when listening on a non-default HTTP port (the port addressed)", async () => {
    const bare = await send(plain, "forwarded-headers");
    const nodePort = await send(plain, "forwarded-headers:30080");
    expect([bare.status, nodePort.status]).toEqual([200, 200]);
    expect([field(bare.upstream as string, "x-forwarded-port"), field(nodePort.upstream as string, "x-forwarded-port")]).toEqual(["80", "30080"]);
    expect(plain.ports.http).not.toBe(80);
  });
  // Portico's HTTPS port here is not 443; the client addressed the default port (no port in
  // Host), which is what X-Forwarded-Port carries, as ingress-nginx's $pass_port does behind 443.
  test("should set X-Forwarded-Port header to 443", async () => {
    const head = await httpsHead(plain, "forwarded-headers", "e2e-audit-xfp-443");
    expect(head.startsWith("HTTP/1.1 200")).toBe(true);
    const hit = echo.hits.find((h) => field(h.head, "x-request-id") === "e2e-audit-xfp-443");
    expect(field(hit?.head ?? "", "x-forwarded-port")).toBe("443");
    expect(field(hit?.head ?? "", "x-forwarded-proto")).toBe("https");
  });
});
