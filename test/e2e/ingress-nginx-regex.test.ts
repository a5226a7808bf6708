// ingress-nginx's regex mode and rewrite-target through the real Portico process (--manifests):
// for each request, the exact request line a raw-socket backend received (or that none did),
// the Host it received, and the Location of an answer Portico gave itself. Each expected value
// names the ingress-nginx source it comes from (kubernetes/ingress-nginx at dbb11b92):
//   BLOG   kubernetes.io blog "Before You Migrate: Five Surprising Ingress-NGINX Behaviors You
//          Need to Know" (2026-02-27), its numbered sections;
//   E2E-RW test/e2e/annotations/rewrite.go, E2E-XFP test/e2e/annotations/xforwardedprefix.go
//          (the It(...) named);
//   RW-DOC docs/examples/rewrite/README.md; PM docs/user-guide/ingress-path-matching.md;
//   TG     internal/ingress/controller/template/template.go (needsRewrite L497,
//          enforceRegexModifier L506, buildLocation L523, buildProxyPass L716-789);
//   CTL    internal/ingress/controller/controller.go (createServers: the implicit "/" location;
//          the two stable sorts L997-1003); LOC internal/ingress/controller/location.go;
//   NGX    nginx 1.27 ngx_http_rewrite_module.c ngx_http_rewrite (an http(s):// replacement is a
//          302; arguments appended unless the replacement ends in "?") and ngx_http_script.c
//          ngx_http_script_regex_end_code ("the rewritten URI has a zero length": 500).
// Where Portico differs on purpose (README "Annotations understood"), the case says so.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rawRequest } from "../proxy/helpers.ts";
import { namedBackend, type RawBackend } from "../proxy/raw.ts";
import { startPortico, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice } from "./objects.ts";

const NGINX = "nginx.ingress.kubernetes.io/";
const SERVICES = [
  "httpbin", "header", "api", "plain", "regex", "http-svc", "acme", "rewritten", "xfp", "redir", "empty",
  "hostile", "dfa", "other", "cafe", "decoded", "norm", "norm-regex", "root-regex", "root-exact",
] as const;
type Svc = (typeof SERVICES)[number];

type Path = [path: string, type: "Exact" | "Prefix" | "ImplementationSpecific", svc: Svc];
const ing = (name: string, host: string, paths: Path[], annotations: Record<string, string> = {}) =>
  ingress("web", name, [{ host, paths: paths.map(([path, type, svc]) => ({ path, type, service: svc })) }], { annotations });
const regex = { [`${NGINX}use-regex`]: "true" };

const INGRESSES = [
  // BLOG 1: a regex path is a case-insensitive prefix match.
  ing("regex-match-ingress", "regex-match.example.com", [["/[A-Z]{3}", "ImplementationSpecific", "httpbin"]], regex),
  // BLOG 2: use-regex on one Ingress makes every path of the host a regex, across Ingresses.
  ing("leak-regex", "regex-leak.example.com", [["/api/v[0-9]+", "ImplementationSpecific", "api"]], regex),
  ing("leak-exact", "regex-leak.example.com", [["/Header", "Exact", "header"]]),
  // BLOG 3: rewrite-target implies regex mode for the host.
  ing("rewrite-ip", "rewrite-regex.example.com", [["/IP", "Exact", "httpbin"]], { [`${NGINX}rewrite-target`]: "/uuid" }),
  ing("rewrite-sibling", "rewrite-regex.example.com", [["/Header", "Exact", "header"]]),
  // BLOG 4: no trailing-slash redirect for a regex-mode location.
  ing("slash-regex", "regex-slash.example.com", [["/x[0-9]", "ImplementationSpecific", "regex"]], regex),
  ing("slash-plain", "regex-slash.example.com", [["/my-path/", "Prefix", "plain"]]),
  // BLOG 5: the normalised path is what is matched, literal and regex hosts alike.
  ing("normalize", "normalize.example.com", [["/uuid", "Exact", "norm"]]),
  ing("normalize-regex", "normalize-regex.example.com", [["/uuid$", "ImplementationSpecific", "norm-regex"]], regex),
  // RW-DOC.
  ing("rewrite", "rewrite.bar.com", [["/something(/|$)(.*)", "ImplementationSpecific", "http-svc"]], { ...regex, [`${NGINX}rewrite-target`]: "/$2" }),
  // E2E-RW "should use ~* location modifier if regex annotation is present".
  ing("modifier-foo", "modifier.bar.com", [["/foo", "Prefix", "plain"]]),
  ing("modifier-regex", "modifier.bar.com", [["/foo.+", "ImplementationSpecific", "regex"]], { ...regex, [`${NGINX}rewrite-target`]: "/new/backend" }),
  // E2E-RW "should fail to use longest match for documented warning" (PM "Warning").
  ing("trap-foo", "trap.bar.com", [["/foo/bar/bar", "Prefix", "plain"]]),
  ing("trap-regex", "trap.bar.com", [["/foo/bar/[a-z]{3}", "ImplementationSpecific", "regex"]], { ...regex, [`${NGINX}rewrite-target`]: "/new/backend" }),
  // E2E-RW "should allow for custom rewrite parameters".
  ing("custom", "custom.bar.com", [["/foo/bar/(.+)", "ImplementationSpecific", "regex"]], { ...regex, [`${NGINX}rewrite-target`]: "/new/backend/$1" }),
  // E2E-RW "should use correct longest path match".
  ing("kube-lego", "longest.bar.com", [["/.well-known/acme/challenge", "Prefix", "acme"]]),
  ing("rewrite-index", "longest.bar.com", [["/", "Prefix", "rewritten"]], { [`${NGINX}rewrite-target`]: "/new/backend" }),
  // E2E-XFP, and TG L783: the header is emitted only inside the rewrite branch.
  ing("xfp", "xfp.baz.com", [["/", "Prefix", "xfp"], ["/foo", "Exact", "xfp"]], { [`${NGINX}x-forwarded-prefix`]: "/test/value", [`${NGINX}rewrite-target`]: "/foo" }),
  ing("noxfp", "noxfp.baz.com", [["/", "Prefix", "xfp"]], { [`${NGINX}x-forwarded-prefix`]: "", [`${NGINX}rewrite-target`]: "/foo" }),
  ing("xfp-alone", "xfp-alone.baz.com", [["/", "Prefix", "xfp"]], { [`${NGINX}x-forwarded-prefix`]: "/alone" }),
  ing("xfp-capture", "xfp-capture.baz.com", [["/api(/|$)(.*)", "ImplementationSpecific", "xfp"]], { [`${NGINX}x-forwarded-prefix`]: "/api$1", [`${NGINX}rewrite-target`]: "/$2" }),
  // NGX: an absolute target is a 302.
  ing("redir", "redirect.bar.com", [["/old/(.*)", "ImplementationSpecific", "redir"]], { [`${NGINX}rewrite-target`]: "https://example.com/new/$1" }),
  // NGX: an empty rewritten URI is a 500; Portico also refuses one that is not an absolute path.
  ing("empty", "empty.bar.com", [["/e(.*)", "ImplementationSpecific", "empty"]], { [`${NGINX}rewrite-target`]: "$1" }),
  // Paths Portico cannot run safely are left out, never served as literals.
  ing("refused", "refused.bar.com", [["/(a+)\\1", "ImplementationSpecific", "regex"], ["/x(?=y)", "ImplementationSpecific", "regex"]], regex),
  ing("refused-rest", "refused.bar.com", [["/", "Prefix", "other"]]),
  // Hostile patterns at the size bound: linear-time matching keeps the process responsive.
  ing("hostile", "hostile.bar.com", [["/(.*a){199}", "ImplementationSpecific", "hostile"]], { [`${NGINX}rewrite-target`]: "/$1" }),
  ing("dfa", "dfa.bar.com", [["/(a|b)*a(a|b){20}x", "ImplementationSpecific", "dfa"]], regex),
  // A literal rule path with escapes meets requests in the same (routed) form.
  ing("cafe", "cafe.test", [["/caf%C3%A9", "Prefix", "cafe"]]),
  // A regex runs on the fully decoded path, as nginx's $uri.
  ing("decoded", "decoded.test", [["/café", "ImplementationSpecific", "decoded"], ["/a b", "ImplementationSpecific", "decoded"]], regex),
  // CTL createServers: the implicit "/" location comes first among equal "/" locations.
  ing("root-regex", "root.test", [["/x", "ImplementationSpecific", "root-regex"]], regex),
  ing("root-exact", "root.test", [["/", "Exact", "root-exact"]]),
];

interface Expect {
  readonly status: number;
  /** The backend that received the request; absent: none did. */
  readonly backend?: Svc;
  /** Its request line. */
  readonly line?: string;
  readonly location?: string;
  /** Request fields the backend received (null: absent). */
  readonly upstream?: Readonly<Record<string, string | null>>;
}

interface Case {
  readonly name: string;
  /** Where the expectation comes from. */
  readonly source: string;
  readonly host: string;
  /** Request target as sent on the wire. */
  readonly target: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly expect: Expect;
}

const ok = (backend: Svc, path: string, upstream?: Expect["upstream"]): Expect => ({
  status: 200,
  backend,
  line: `GET ${path} HTTP/1.1`,
  ...(upstream ? { upstream } : {}),
});

const CASES: Case[] = [
  // BLOG 1.
  { name: "/[A-Z]{3} serves /uuid", source: "BLOG 1; TG buildLocation `~* \"^<path>\"`", host: "regex-match.example.com", target: "/uuid", expect: ok("httpbin", "/uuid") },
  { name: "... and /uuid/some/other/path", source: "BLOG 1 (prefix)", host: "regex-match.example.com", target: "/uuid/some/other/path", expect: ok("httpbin", "/uuid/some/other/path") },
  { name: "... with the query string forwarded", source: "BLOG 1; nginx proxy_pass keeps $args", host: "regex-match.example.com", target: "/ABC?x=1&y", expect: ok("httpbin", "/ABC?x=1&y") },
  { name: "fewer than three letters: the implicit / location, the default backend (404)", source: "CTL createServers (root location to the default backend)", host: "regex-match.example.com", target: "/ab", expect: { status: 404 } },
  // BLOG 2.
  { name: "a sibling's Exact /Header serves /headers", source: "BLOG 2; TG enforceRegexModifier (any location of the server)", host: "regex-leak.example.com", target: "/headers", expect: ok("header", "/headers") },
  { name: "... and /HEADER/x", source: "BLOG 2 (case-insensitive prefix)", host: "regex-leak.example.com", target: "/HEADER/x", expect: ok("header", "/HEADER/x") },
  { name: "the use-regex Ingress's own path", source: "BLOG 2", host: "regex-leak.example.com", target: "/api/v2/users", expect: ok("api", "/api/v2/users") },
  // BLOG 3.
  { name: "Exact /IP with rewrite-target /uuid serves /ip as /uuid", source: "BLOG 3; TG buildProxyPass `rewrite \"(?i)/IP\" /uuid break;`", host: "rewrite-regex.example.com", target: "/ip", expect: ok("httpbin", "/uuid") },
  { name: "... /ip/anything too (prefix), the query kept", source: "BLOG 3; NGX add_args", host: "rewrite-regex.example.com", target: "/ip/anything?q=1", expect: ok("httpbin", "/uuid?q=1") },
  { name: "the sibling's Exact /Header serves /headers, unchanged", source: "BLOG 3", host: "rewrite-regex.example.com", target: "/headers", expect: ok("header", "/headers") },
  // BLOG 4 (regex side; the literal side's 301 is the redirects work).
  { name: "Prefix /my-path/ in regex mode: /my-path/ served", source: "LOC updateServerLocations; BLOG 4", host: "regex-slash.example.com", target: "/my-path/", expect: ok("plain", "/my-path/") },
  { name: "... /my-path gets no 301 (regex locations never redirect): the default backend", source: "BLOG 4 (\"never for regex paths\"); TG buildLocation", host: "regex-slash.example.com", target: "/my-path", expect: { status: 404 } },
  // BLOG 5.
  { name: "////uuid matches Exact /uuid", source: "BLOG 5 (merge_slashes)", host: "normalize.example.com", target: "////uuid", expect: ok("norm", "/uuid") },
  { name: "/ip/abc/../../uuid is /uuid", source: "BLOG 5; forwarded normalised (README \"How Portico reads request paths\")", host: "normalize.example.com", target: "/ip/abc/../../uuid", expect: ok("norm", "/uuid") },
  { name: "a regex host matches the normalised path", source: "BLOG 5; NGINX-COMPAT 1.1 (nginx matches the normalised $uri)", host: "normalize-regex.example.com", target: "/ip/abc/../..//uuid", expect: ok("norm-regex", "/uuid") },
  // RW-DOC.
  { name: "/something → /", source: "RW-DOC", host: "rewrite.bar.com", target: "/something", expect: ok("http-svc", "/", { host: "rewrite.bar.com", "x-forwarded-prefix": null }) },
  { name: "/something/ → /", source: "RW-DOC", host: "rewrite.bar.com", target: "/something/", expect: ok("http-svc", "/") },
  { name: "/something/new → /new", source: "RW-DOC", host: "rewrite.bar.com", target: "/something/new", expect: ok("http-svc", "/new") },
  { name: "the query string is appended as received", source: "NGX add_args (ingress-nginx refuses '?' in targets)", host: "rewrite.bar.com", target: "/something/new?a=b&c=%2F", expect: ok("http-svc", "/new?a=b&c=%2F") },
  { name: "case-insensitive match, the capture keeps its case", source: "TG buildProxyPass `(?i)`", host: "rewrite.bar.com", target: "/SOMETHING/New", expect: ok("http-svc", "/New") },
  { name: "a capture of an escaped character is sent escaped", source: "nginx proxy_pass escapes the rewritten URI (NGX_ESCAPE_URI)", host: "rewrite.bar.com", target: "/something/caf%c3%a9%20x", expect: ok("http-svc", "/caf%C3%A9%20x") },
  { name: "a capture holding %3B is sent as %3B (nginx: raw ';')", source: "Portico difference (README: rewrite-target)", host: "rewrite.bar.com", target: "/something/a%3Bb", expect: ok("http-svc", "/a%3Bb") },
  { name: "a capture holding %25 stays data", source: "nginx NGX_ESCAPE_URI escapes '%'", host: "rewrite.bar.com", target: "/something/100%25", expect: ok("http-svc", "/100%25") },
  // E2E-RW.
  { name: "/foo matches ^/foo (plain Prefix /foo)", source: "E2E-RW \"should use ~* location modifier\"", host: "modifier.bar.com", target: "/foo", expect: ok("plain", "/foo") },
  { name: "/foo/bar matches ^/foo.+ and is rewritten", source: "E2E-RW \"should use ~* location modifier\"", host: "modifier.bar.com", target: "/foo/bar", expect: ok("regex", "/new/backend") },
  { name: "/foo/bar/bar: the longer regex wins over the plain path", source: "E2E-RW \"should fail to use longest match for documented warning\"; PM Warning", host: "trap.bar.com", target: "/foo/bar/bar", expect: ok("regex", "/new/backend") },
  { name: "/foo/bar/bar → /new/backend/bar", source: "E2E-RW \"should allow for custom rewrite parameters\"", host: "custom.bar.com", target: "/foo/bar/bar", expect: ok("regex", "/new/backend/bar") },
  { name: "a rewrite on / leaves the longer plain path alone", source: "E2E-RW \"should use correct longest path match\"", host: "longest.bar.com", target: "/.well-known/acme/challenge", expect: ok("acme", "/.well-known/acme/challenge") },
  { name: "... and rewrites the rest", source: "E2E-RW \"should use correct longest path match\" (location ~* \"^/\")", host: "longest.bar.com", target: "/other", expect: ok("rewritten", "/new/backend") },
  // E2E-XFP, TG L783.
  { name: "X-Forwarded-Prefix on a rewritten request", source: "E2E-XFP \"should set the X-Forwarded-Prefix to the annotation value\"", host: "xfp.baz.com", target: "/", expect: ok("xfp", "/foo", { "x-forwarded-prefix": "/test/value" }) },
  { name: "... replacing the client's", source: "TG L783 proxy_set_header", host: "xfp.baz.com", target: "/", headers: { "X-Forwarded-Prefix": "/evil" }, expect: ok("xfp", "/foo", { "x-forwarded-prefix": "/test/value" }) },
  { name: "no header where the path equals the target (no rewrite)", source: "TG buildProxyPass (path == target: plain proxy_pass)", host: "xfp.baz.com", target: "/foo", expect: ok("xfp", "/foo", { "x-forwarded-prefix": null }) },
  { name: "an empty x-forwarded-prefix sends no header", source: "E2E-XFP \"should not add X-Forwarded-Prefix if the annotation value is empty\"", host: "noxfp.baz.com", target: "/", expect: ok("xfp", "/foo", { "x-forwarded-prefix": null }) },
  { name: "x-forwarded-prefix without rewrite-target sends no header", source: "TG L780-784 (docs present it as standalone: NGINX-COMPAT Appendix A 4)", host: "xfp-alone.baz.com", target: "/x", expect: ok("xfp", "/x", { "x-forwarded-prefix": null }) },
  { name: "x-forwarded-prefix expands captures", source: "xforwardedprefix/main.go (\"captured groups specified as '$1'\")", host: "xfp-capture.baz.com", target: "/api/v1/users", expect: ok("xfp", "/v1/users", { "x-forwarded-prefix": "/api/" }) },
  // NGX: absolute targets.
  { name: "an https:// target answers 302 with the query appended", source: "NGX ngx_http_rewrite (http(s):// → 302), ngx_http_script_regex_end_code (args appended)", host: "redirect.bar.com", target: "/old/a/b?x=1", expect: { status: 302, location: "https://example.com/new/a/b?x=1" } },
  // NGX: empty result.
  { name: "a rewrite to an empty path answers 500", source: "NGX ngx_http_script_regex_end_code (\"the rewritten URI has a zero length\")", host: "empty.bar.com", target: "/e", expect: { status: 500 } },
  { name: "a rewrite to a path without a leading / answers 500 (nginx sends it as is)", source: "Portico difference (README: rewrite-target)", host: "empty.bar.com", target: "/ex", expect: { status: 500 } },
  { name: "the same target with a capture that starts with /", source: "NGX (captures copied as they are)", host: "empty.bar.com", target: "/e/x", expect: ok("empty", "/x") },
  // Refused patterns.
  { name: "a backreference path is not served, not even as a literal", source: "Portico: docs/design.md \"Regular expressions\" (refused, left out)", host: "refused.bar.com", target: "/aa", expect: ok("other", "/aa") },
  { name: "... nor its literal spelling", source: "Portico: refused paths are never literals", host: "refused.bar.com", target: "/(a+)%5C1", expect: { status: 400 } },
  { name: "a lookahead path is not served", source: "Portico: docs/design.md \"Regular expressions\"", host: "refused.bar.com", target: "/xy", expect: ok("other", "/xy") },
  // Literal paths with escapes.
  { name: "a literal Prefix /caf%C3%A9 serves /café", source: "README \"How Portico reads request paths\" (rule and request in one form)", host: "cafe.test", target: "/café/menu", expect: ok("cafe", "/caf%C3%A9/menu") },
  { name: "... and its lower-case escapes", source: "RFC 3986 6.2.2.1", host: "cafe.test", target: "/caf%c3%a9", expect: ok("cafe", "/caf%C3%A9") },
  // Regexes on the decoded path.
  { name: "regex /café matches /caf%C3%A9", source: "NGINX-COMPAT 1.1 (nginx matches the decoded $uri)", host: "decoded.test", target: "/caf%C3%A9", expect: ok("decoded", "/caf%C3%A9") },
  { name: "regex '/a b' matches /a%20b", source: "NGINX-COMPAT 1.1", host: "decoded.test", target: "/a%20b/c", expect: ok("decoded", "/a%20b/c") },
  // The implicit root.
  { name: "Exact / behind the implicit / location in regex mode: the default backend", source: "CTL createServers + getBackendServers (Exact / is added after the root location; stable sort)", host: "root.test", target: "/", expect: { status: 404 } },
  { name: "the regex Ingress's path", source: "BLOG 1", host: "root.test", target: "/x/y", expect: ok("root-regex", "/x/y") },
];

let dir = "";
let portico: Portico;
const backends = new Map<Svc, RawBackend>();

beforeAll(async () => {
  for (const s of SERVICES) backends.set(s, await namedBackend(s));
  dir = mkdtempSync(join(tmpdir(), "portico-regex-"));
  const objects = [
    ingressClass(),
    ...SERVICES.flatMap((s) => [service("web", s), slice("web", s, [(backends.get(s) as RawBackend).port])]),
    ...INGRESSES,
  ];
  writeFileSync(join(dir, "all.yaml"), objects.map((o) => JSON.stringify(o)).join("\n---\n"));
  portico = await startPortico(["--manifests", dir]);
});

afterAll(async () => {
  await portico?.stop();
  for (const b of backends.values()) await b.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Outcome {
  status: number;
  location: string | null;
  /** Backend that received the request, its request line and head. */
  backend: Svc | null;
  line: string | null;
  head: string | null;
}

let sent = 0;

async function send(port: number, host: string, target: string, headers: Readonly<Record<string, string>> = {}): Promise<Outcome> {
  // Portico forwards a sane client X-Request-ID: it names this request's hit among concurrent ones.
  const id = `regex-test-${++sent}`;
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
  const raw = await rawRequest(port, `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nX-Request-ID: ${id}\r\n${extra}Connection: close\r\n\r\n`, 20_000);
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0);
  const location = /\r\nlocation: ([^\r]*)/i.exec(raw.slice(0, raw.indexOf("\r\n\r\n")))?.[1] ?? null;
  const got = [...backends].flatMap(([svc, b]) => b.hits.filter((h) => field(h.head, "x-request-id") === id).map((h) => [svc, h] as const));
  expect(got.length).toBeLessThanOrEqual(1);
  const [svc, hit] = got[0] ?? [null, null];
  return { status, location, backend: svc, line: hit?.line ?? null, head: hit?.head ?? null };
}

/** A request field of a head as received ("" name lookups are case-insensitive), or null. */
function field(head: string, name: string): string | null {
  const lines = head.split("\r\n").slice(1);
  const hits = lines.filter((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  expect(hits.length).toBeLessThanOrEqual(1);
  return hits[0] === undefined ? null : hits[0].slice(name.length + 1).trim();
}

describe("ingress-nginx regex mode and rewrite-target, request by request", () => {
  for (const c of CASES) {
    test(`${c.host} ${c.target}: ${c.name} [${c.source}]`, async () => {
      const out = await send(portico.ports.http, c.host, c.target, c.headers);
      expect(out.status).toBe(c.expect.status);
      expect(out.backend).toBe(c.expect.backend ?? null);
      expect(out.line).toBe(c.expect.line ?? null);
      expect(out.location).toBe(c.expect.location ?? null);
      if (out.head !== null) {
        // The client's Host goes upstream unchanged (nginx.tmpl: proxy_set_header Host $best_http_host).
        expect(field(out.head, "host")).toBe(c.host);
        for (const [k, v] of Object.entries(c.expect.upstream ?? {})) expect(field(out.head, k)).toBe(v);
      }
    });
  }
});

describe("hostile patterns against hostile input", () => {
  test("patterns at the size bound on 8 KiB paths answer, and the process keeps serving", async () => {
    const port = portico.ports.http;
    const a = `/${"a".repeat(8000)}`;
    const ab = `/${Array.from({ length: 8000 }, (_, i) => ((i * 7919) % 3 === 0 ? "b" : "a")).join("")}`;
    // A backtracking engine takes exponential time on these (docs/design.md "Regular
    // expressions"); a linear one answers each, however many arrive together.
    const hostile = [
      send(port, "hostile.bar.com", a),
      send(port, "hostile.bar.com", a),
      send(port, "dfa.bar.com", ab),
      send(port, "dfa.bar.com", `${ab}x`),
    ];
    const plain = send(port, "regex-match.example.com", "/uuid");
    const health = fetch(`${portico.admin}/healthz`).then((r) => r.status);
    const [h1, h2, d1, d2] = await Promise.all(hostile);
    // (.*a){199} with rewrite-target /$1: $1 is the last repetition's "a".
    expect([h1!.status, h1!.backend, h1!.line]).toEqual([200, "hostile", "GET /a HTTP/1.1"]);
    expect([h2!.status, h2!.line]).toEqual([200, "GET /a HTTP/1.1"]);
    expect([d1!.status, d1!.backend]).toEqual([404, null]);
    expect([d2!.status, d2!.backend]).toEqual([200, "dfa"]);
    expect((await plain).line).toBe("GET /uuid HTTP/1.1");
    expect(await health).toBe(200);
    expect(portico.proc.exitCode).toBeNull();
  });
});

describe("explain knows it", () => {
  const explain = async (host: string, path: string) => {
    const res = await fetch(`${portico.admin}/debug/explain?host=${encodeURIComponent(host)}&path=${encodeURIComponent(path)}`);
    expect(res.status).toBe(200);
    return (await res.json()) as Record<string, any>;
  };

  test("the regex that matched, its captures and the rewritten path", async () => {
    const r = await explain("rewrite.bar.com", "/something/new");
    expect(r.regex).toEqual({
      matchedAgainst: "/something/new",
      locations: 2,
      location: { path: "/something(/|$)(.*)", origin: "as-written", pattern: "^/something(/|$)(.*)", index: 0 },
      groups: ["/something/new", "/", "new"],
      named: {},
    });
    expect(r.rewrite).toEqual({ target: "/$2", outcome: "path", path: "/new", xForwardedPrefix: null });
    expect(r.match.ingress).toBe("web/rewrite");
    expect(r.match.answers).toBe("proxied");
  });

  test("a 302 and a 500 are named as the proxy answers them", async () => {
    const r = await explain("redirect.bar.com", "/old/a/b");
    expect(r.rewrite).toEqual({ target: "https://example.com/new/$1", outcome: "redirect", location: "https://example.com/new/a/b", xForwardedPrefix: null });
    expect(r.match.answers).toBe("302");
    const e = await explain("empty.bar.com", "/e");
    expect(e.rewrite.outcome).toBe("refused");
    expect(e.match.answers).toBe("500");
  });

  test("a sibling Ingress's path in regex mode is explained as a regex, with the warning", async () => {
    const r = await explain("regex-leak.example.com", "/headers");
    expect(r.regex.location).toEqual({ path: "/Header", origin: "as-written", pattern: "^/Header", index: 1 });
    const exact = r.candidates.find((c: { ingress: string }) => c.ingress === "web/leak-exact");
    expect(exact.verdict).toBe("matched");
    expect(exact.reason).toContain("regex mode");
    const warning = r.diagnostics.find((d: { name: string; reason: string }) => d.name === "leak-exact" && d.reason === "RegexModeHost");
    expect(warning.message).toContain("because Ingress web/leak-regex sets use-regex");
  });

  test("a refused path is named with its reason", async () => {
    const r = await explain("refused.bar.com", "/aa");
    const refused = r.candidates.filter((c: { ingress: string }) => c.ingress === "web/refused");
    expect(refused.map((c: { verdict: string }) => c.verdict)).toEqual(["invalid", "invalid"]);
    expect(refused[0].reason).toContain("backreference");
    expect(refused[1].reason).toContain("lookahead");
    expect(r.diagnostics.filter((d: { reason: string }) => d.reason === "InvalidPath")).toHaveLength(2);
  });
});

describe("workers: a regex host crosses IPC as pattern sources and is compiled again", () => {
  let workers: Portico;
  beforeAll(async () => {
    workers = await startPortico(["--manifests", dir, "--workers", "2"]);
  });
  afterAll(async () => {
    await workers?.stop();
  });

  const picked = CASES.filter((c) => ["rewrite.bar.com", "regex-leak.example.com", "redirect.bar.com", "trap.bar.com"].includes(c.host));
  for (const c of picked) {
    test(`${c.host} ${c.target}: as the single process answers`, async () => {
      const out = await send(workers.ports.http, c.host, c.target, c.headers);
      expect([out.status, out.backend, out.line, out.location]).toEqual([
        c.expect.status,
        c.expect.backend ?? null,
        c.expect.line ?? null,
        c.expect.location ?? null,
      ]);
    });
  }
});
