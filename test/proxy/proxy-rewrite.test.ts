// proxy-redirect-from/-to, proxy-cookie-domain and proxy-cookie-path through a real proxy: a
// raw-socket pod answers with the Location, Refresh and Set-Cookie fields under test and the
// raw-socket client's bytes are checked. Route options come from the real annotation parser.
// Expectations follow nginx's ngx_http_proxy_module.c (ngx_http_proxy_rewrite_redirect,
// ngx_http_proxy_rewrite_cookie and their handlers), ngx_http_upstream.c
// (ngx_http_upstream_rewrite_location) and ngx_http_header_filter_module.c (a rewritten
// Location starting with "/" made absolute), with ingress-nginx's validators
// (internal/ingress/annotations/proxy/main.go) and nginx.tmpl's directives.
import { afterEach, describe, expect, test } from "bun:test";
import { parseAnnotations } from "../../src/compile/annotations.ts";
import type { RouteOptions } from "../../src/table/types.ts";
import { makeBackend, makeTable, optionsOf, rawRequest, startProxy, statusLine } from "./helpers.ts";
import { rawBackend, type RawBackend } from "./raw.ts";

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

const n = (a: Record<string, string>) => Object.fromEntries(Object.entries(a).map(([k, v]) => [`nginx.ingress.kubernetes.io/${k}`, v]));

/** A pod answering 302 with `fields` (name, value lines in order). */
async function pod(fields: readonly (readonly [string, string])[]): Promise<RawBackend> {
  const lines = fields.map(([k, v]) => `${k}: ${v}\r\n`).join("");
  const b = await rawBackend(() => `HTTP/1.1 302 Found\r\n${lines}Content-Length: 0\r\nConnection: close\r\n\r\n`);
  cleanup.push(() => b.stop());
  return b;
}

async function through(options: Partial<RouteOptions>, fields: readonly (readonly [string, string])[], host = "a.test", config = {}): Promise<{ status: number; head: string; pod: RawBackend }> {
  const b = await pod(fields);
  const p = startProxy(makeTable([{ host: "a.test", backend: makeBackend([b.port]), options }]), config);
  cleanup.push(() => p.stop());
  const raw = await rawRequest(p.port, `GET /x HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  return { status: statusLine(raw), head: raw.slice(0, raw.indexOf("\r\n\r\n")), pod: b };
}

const values = (head: string, name: string): string[] =>
  head.split("\r\n").slice(1).filter((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`)).map((l) => l.slice(name.length + 1).trim());

describe("proxy_redirect", () => {
  test("a rewritten Location starting with / is made absolute with the request's host, without its port", async () => {
    const o = optionsOf(n({ "proxy-redirect-from": "http://internal:8080/", "proxy-redirect-to": "/" }));
    const out = await through(o, [["Location", "http://internal:8080/login?next=/a"]], "a.test:8080");
    expect(out.status).toBe(302);
    expect(values(out.head, "location")).toEqual(["http://a.test/login?next=/a"]);
  });

  test("--relative-redirects (absolute_redirect off) keeps it relative", async () => {
    const o = optionsOf(n({ "proxy-redirect-from": "http://internal:8080/", "proxy-redirect-to": "/" }));
    // compile/plan.ts globalRedirect marks the policy so under the flag.
    const stages = o.stages!.map((s) => (s.kind === "proxy-rewrite" ? { ...s, params: { ...s.params, relative: true } } : s));
    const out = await through({ ...o, stages }, [["Location", "http://internal:8080/login"]]);
    expect(values(out.head, "location")).toEqual(["/login"]);
  });

  test("use-port-in-redirects puts the listener's port in the absolute Location", async () => {
    const o = optionsOf(n({ "proxy-redirect-from": "http://internal/", "proxy-redirect-to": "/", "use-port-in-redirects": "true" }));
    const b = await pod([["Location", "http://internal/p"]]);
    const p = startProxy(makeTable([{ host: "a.test", backend: makeBackend([b.port]), options: o }]));
    cleanup.push(() => p.stop());
    const raw = await rawRequest(p.port, "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    expect(values(raw.slice(0, raw.indexOf("\r\n\r\n")), "location")).toEqual([`http://a.test:${p.port}/p`]);
  });

  test("proxy-redirect-to off leaves nginx's own `proxy_redirect default` (no directive is written)", async () => {
    const o = optionsOf(n({ "proxy-redirect-from": "hello.com" }));
    let out = await through(o, [["Location", "hello.com/x"]]);
    expect(values(out.head, "location")).toEqual(["hello.com/x"]);
    out = await through(o, [["Location", "http://upstream_balancer/y"]]);
    expect(values(out.head, "location")).toEqual(["http://a.test/y"]);
  });

  test("a `~` pattern matching anywhere replaces the whole Location; a non-match is left alone", async () => {
    const o = optionsOf(n({ "proxy-redirect-from": "~internal.svc", "proxy-redirect-to": "https://shop.example/" }));
    let out = await through(o, [["Location", "http://api.internal.svc:9000/deep/path"]]);
    expect(values(out.head, "location")).toEqual(["https://shop.example/"]);
    out = await through(o, [["Location", "http://INTERNAL.SVC/"]]);
    expect(values(out.head, "location")).toEqual(["http://INTERNAL.SVC/"]);
  });

  test("without the annotations the pod's fields pass as they are", async () => {
    const out = await through({}, [["Location", "http://upstream_balancer/y"], ["Set-Cookie", "a=1;Path=/one/"]]);
    expect(values(out.head, "location")).toEqual(["http://upstream_balancer/y"]);
    expect(values(out.head, "set-cookie")).toEqual(["a=1;Path=/one/"]);
  });
});

describe("proxy_cookie_domain and proxy_cookie_path", () => {
  test("a `~` domain pattern is caseless and replaces the whole Domain; a `~` path one is case-sensitive", async () => {
    const o = optionsOf(n({ "proxy-cookie-domain": "~internal example.org", "proxy-cookie-path": "~/api/ /" }));
    const out = await through(o, [["Set-Cookie", "s=1; Domain=a.INTERNAL.svc; Path=/v1/api/x"], ["Set-Cookie", "t=2; Path=/v1/API/x"]]);
    expect(values(out.head, "set-cookie")).toEqual(["s=1; Domain=example.org; Path=/", "t=2; Path=/v1/API/x"]);
  });

  test("a leading . of either word is dropped; the cookie's own dot stays", async () => {
    const o = optionsOf(n({ "proxy-cookie-domain": ".pod.local .example.org" }));
    const out = await through(o, [["Set-Cookie", "s=1; Domain=.pod.local"], ["Set-Cookie", "t=2; Domain=pod.local"]]);
    expect(values(out.head, "set-cookie")).toEqual(["s=1; Domain=.example.org", "t=2; Domain=example.org"]);
  });

  test("a value nginx would not load answers 503 on the Ingress's paths, and the pod is not asked", async () => {
    for (const a of [{ "proxy-cookie-path": "/one/" } as Record<string, string>, { "proxy-cookie-path": "/a /b /c" }, { "proxy-redirect-from": "a b", "proxy-redirect-to": "c" }, { "proxy-redirect-from": "~?", "proxy-redirect-to": "c" }]) {
      const parsed = parseAnnotations(n(a));
      expect(parsed.problems.length).toBe(1);
      const out = await through(parsed.options, [["Location", "/x"]]);
      expect(out.status).toBe(503);
      expect(out.pod.hits.length).toBe(0);
    }
  });

  test("a value ingress-nginx's validators refuse keeps `off`, as its proxy parser falls back to the default", async () => {
    for (const a of [{ "proxy-cookie-domain": "a b c" } as Record<string, string>, { "proxy-cookie-path": "/$host /" }, { "proxy-redirect-from": "a\"b", "proxy-redirect-to": "c" }]) {
      const parsed = parseAnnotations(n(a));
      expect(parsed.problems.length).toBe(1);
      expect(parsed.options.stages).toBeNull();
    }
  });
});
