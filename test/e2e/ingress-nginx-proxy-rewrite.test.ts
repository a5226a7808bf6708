// ingress-nginx's test/e2e/annotations/proxy.go cases for proxy_redirect and proxy_cookie_*
// (at dbb11b92), run against the real Portico process (--manifests). The Go tests only read
// nginx.conf (`proxy_redirect off;`, `proxy_redirect default;`, `proxy_redirect hello.com
// goodbye.com;`, `proxy_cookie_domain localhost example.org;` with `proxy_cookie_path /one/ /;`);
// each case here asserts what that configuration does to the pod's answer, as nginx's
// ngx_http_proxy_module.c (ngx_http_proxy_rewrite_redirect, ngx_http_proxy_rewrite_cookie) and
// ngx_http_upstream.c (ngx_http_upstream_rewrite_location, _refresh) do it, with the exact
// fields the client receives. The pod answers with the Location, Refresh and Set-Cookie fields
// the request asks for (X-Location, X-Refresh, X-Cookie-1/-2), so one pod serves every case.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rawRequest } from "../proxy/helpers.ts";
import { rawBackend, type RawBackend } from "../proxy/raw.ts";
import { allStarted, startPortico, type Portico } from "./harness.ts";
import { ingress, ingressClass, service, slice } from "./objects.ts";

const NGINX = "nginx.ingress.kubernetes.io/";
type Ann = Record<string, string>;
const ann = (a: Ann): Ann => Object.fromEntries(Object.entries(a).map(([k, v]) => [`${NGINX}${k}`, v]));
const ing = (name: string, host: string, a: Ann) => ingress("web", name, [{ host, paths: [{ path: "/", service: "pod" }] }], { annotations: ann(a) });

// proxy.go: const proxyRedirectToHost = "goodbye.com".
const INGRESSES = [
  ing("redirect-off", "redirect-off.foo.com", { "proxy-redirect-from": "off", "proxy-redirect-to": "goodbye.com" }),
  ing("redirect-default", "redirect-default.foo.com", { "proxy-redirect-from": "default", "proxy-redirect-to": "goodbye.com" }),
  ing("redirect-hello", "redirect-hello.foo.com", { "proxy-redirect-from": "hello.com", "proxy-redirect-to": "goodbye.com" }),
  ing("cookies", "cookies.foo.com", { "proxy-cookie-domain": "localhost example.org", "proxy-cookie-path": "/one/ /" }),
];

let dir = "";
let portico: Portico;
/** The same objects under --relative-redirects (ingress-nginx's relative-redirects key: `absolute_redirect off`). */
let relative: Portico;
let pod: RawBackend;

/** The request's X-<name> field, as the pod received it, or null. */
const asked = (head: string, name: string): string | null => new RegExp(`^x-${name}:[ \\t]*(.*)$`, "im").exec(head)?.[1] ?? null;

beforeAll(async () => {
  pod = await rawBackend((req) => {
    const h = req.head;
    const lines = [
      ["Location", asked(h, "location")],
      ["Refresh", asked(h, "refresh")],
      ["Set-Cookie", asked(h, "cookie-1")],
      ["Set-Cookie", asked(h, "cookie-2")],
    ].filter(([, v]) => v !== null).map(([n, v]) => `${n}: ${v}\r\n`).join("");
    return `HTTP/1.1 302 Found\r\n${lines}Content-Length: 0\r\nConnection: close\r\n\r\n`;
  });
  dir = mkdtempSync(join(tmpdir(), "portico-e2e-proxy-rewrite-"));
  const objects = [ingressClass(), service("web", "pod"), slice("web", "pod", [pod.port]), ...INGRESSES];
  writeFileSync(join(dir, "all.yaml"), objects.map((o) => JSON.stringify(o)).join("\n---\n"));
  [portico, relative] = await allStarted([startPortico(["--manifests", dir]), startPortico(["--manifests", dir, "--relative-redirects"])]);
});

afterAll(async () => {
  await Promise.all([portico?.stop(), relative?.stop()]);
  await pod?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The client's answer head for a request to `host` asking the pod for `fields`. */
async function answer(host: string, fields: Record<string, string>, to: Portico = portico): Promise<{ status: number; head: string }> {
  const extra = Object.entries(fields).map(([k, v]) => `X-${k}: ${v}\r\n`).join("");
  const raw = await rawRequest(to.ports.http, `GET /app HTTP/1.1\r\nHost: ${host}\r\n${extra}Connection: close\r\n\r\n`, 20_000);
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0), head: raw.slice(0, raw.indexOf("\r\n\r\n")) };
}

/** Every value of field `name` in a head, in order. */
const values = (head: string, name: string): string[] =>
  head.split("\r\n").slice(1).filter((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`)).map((l) => l.slice(name.length + 1).trim());

describe("annotations/proxy.go", () => {
  test("should set proxy_redirect to off", async () => {
    // The annotations are read (no UnsupportedAnnotation diagnostic for the Ingress)...
    expect(portico.lines.filter((l) => l.includes("UnsupportedAnnotation") && l.includes("redirect-off"))).toEqual([]);
    // ...and `proxy_redirect off;` is no rewrite at all, not even nginx's default one.
    for (const loc of ["http://upstream_balancer/x", "hello.com/x", "/relative"]) {
      const out = await answer("redirect-off.foo.com", { Location: loc, Refresh: `5; url=${loc}` });
      expect(out.status).toBe(302);
      expect(values(out.head, "location")).toEqual([loc]);
      expect(values(out.head, "refresh")).toEqual([`5; url=${loc}`]);
    }
  });

  test("should set proxy_redirect to default", async () => {
    // `proxy_redirect default;` after `proxy_pass http://upstream_balancer;` (no URI): the
    // pattern is "http://upstream_balancer/" and the replacement "/" (ngx_http_proxy_redirect);
    // the rewritten Location starts with "/", so nginx's header filter makes it absolute with
    // the connection's scheme and the request's host (port_in_redirect off).
    let out = await answer("redirect-default.foo.com", { Location: "http://upstream_balancer/x?y=1" });
    expect(out.status).toBe(302);
    expect(values(out.head, "location")).toEqual(["http://redirect-default.foo.com/x?y=1"]);
    // A Location that does not start with the pattern is left alone, a relative one too.
    out = await answer("redirect-default.foo.com", { Location: "hello.com/x" });
    expect(values(out.head, "location")).toEqual(["hello.com/x"]);
    out = await answer("redirect-default.foo.com", { Location: "/relative" });
    expect(values(out.head, "location")).toEqual(["/relative"]);
    // Under `absolute_redirect off` the rewritten Location stays relative.
    out = await answer("redirect-default.foo.com", { Location: "http://upstream_balancer/x?y=1" }, relative);
    expect(values(out.head, "location")).toEqual(["/x?y=1"]);
    // Refresh: from after "url=", not made absolute (ngx_http_upstream_rewrite_refresh).
    out = await answer("redirect-default.foo.com", { Refresh: "3; URL=http://upstream_balancer/z" });
    expect(values(out.head, "refresh")).toEqual(["3; URL=/z"]);
  });

  test("should set proxy_redirect to hello.com goodbye.com", async () => {
    // `proxy_redirect hello.com goodbye.com;`: a case-sensitive prefix of the field's value
    // (ngx_http_proxy_rewrite_complex_handler).
    let out = await answer("redirect-hello.foo.com", { Location: "hello.com/path?q=1", Refresh: "0;url=hello.com/r" });
    expect(out.status).toBe(302);
    expect(values(out.head, "location")).toEqual(["goodbye.com/path?q=1"]);
    expect(values(out.head, "refresh")).toEqual(["0;url=goodbye.com/r"]);
    for (const loc of ["http://hello.com/path", "HELLO.COM/path", "/hello.com"]) {
      out = await answer("redirect-hello.foo.com", { Location: loc });
      expect(values(out.head, "location")).toEqual([loc]);
    }
  });

  test("should setup proxy cookies", async () => {
    // `proxy_cookie_domain localhost example.org;`: the Domain equal in any case, a leading "."
    // kept; `proxy_cookie_path /one/ /;`: a case-sensitive prefix of the Path. A rewritten
    // cookie is written back from its parts joined by "; " (ngx_http_proxy_rewrite_cookie).
    let out = await answer("cookies.foo.com", {
      "Cookie-1": "a=1; Domain=localhost; Path=/one/two; HttpOnly",
      "Cookie-2": "b=2;domain=.LOCALHOST;  path=/other",
    });
    expect(out.status).toBe(302);
    expect(values(out.head, "set-cookie")).toEqual(["a=1; Domain=example.org; Path=/two; HttpOnly", "b=2; domain=.example.org; path=/other"]);
    // Nothing to rewrite: the field is sent as the pod wrote it.
    out = await answer("cookies.foo.com", { "Cookie-1": "c=3;Domain=sub.localhost;Path=/One/", "Cookie-2": "d=4" });
    expect(values(out.head, "set-cookie")).toEqual(["c=3;Domain=sub.localhost;Path=/One/", "d=4"]);
  });
});
