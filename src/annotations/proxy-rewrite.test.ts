// The proxy-rewrite family's values (good, bad, empty, line break) as ingress-nginx's proxy
// parser reads them (internal/ingress/annotations/proxy/main.go: URLIsValidRegex with spaces
// removed, cookieDomainRegex; any error keeps the default `off`) and what nginx.tmpl then
// writes (`proxy_redirect off|default;`, or FROM TO unless TO is `off`).
import { describe, expect, test } from "bun:test";
import { parseAnnotations } from "../compile/annotations.ts";
import { NGINX_PREFIX } from "./spec.ts";

const n = (a: Record<string, string>) => Object.fromEntries(Object.entries(a).map(([k, v]) => [`${NGINX_PREFIX}${k}`, v]));
const policy = (a: Record<string, string>) => {
  const p = parseAnnotations(n(a));
  const s = p.options.stages?.find((x) => x.kind === "proxy-rewrite" || x.kind === "refuse") ?? null;
  return { problems: p.problems, stage: s === null ? null : { kind: s.kind, params: s.kind === "refuse" ? null : s.params } };
};

describe("proxy-rewrite values", () => {
  test.each([
    // [annotations, the policy's rules (null: no policy)]
    [{ "proxy-redirect-from": "off", "proxy-redirect-to": "goodbye.com" }, null],
    [{ "proxy-redirect-from": "default", "proxy-redirect-to": "goodbye.com" }, { redirect: ["default", "", ""], cookieDomain: null, cookiePath: null, relative: false }],
    [{ "proxy-redirect-from": "hello.com" }, { redirect: ["default", "", ""], cookieDomain: null, cookiePath: null, relative: false }],
    [{ "proxy-redirect-from": " hello.com ", "proxy-redirect-to": "goodbye.com" }, { redirect: ["prefix", "hello.com", "goodbye.com"], cookieDomain: null, cookiePath: null, relative: false }],
    [{ "proxy-redirect-from": "~hello.com", "proxy-redirect-to": "goodbye.com" }, { redirect: ["~", "hello.com", "goodbye.com"], cookieDomain: null, cookiePath: null, relative: false }],
    [{ "proxy-redirect-to": "goodbye.com" }, null],
    [{ "proxy-cookie-domain": "localhost example.org", "proxy-cookie-path": "/one/ /" }, { redirect: null, cookieDomain: ["domain", "localhost", "example.org"], cookiePath: ["prefix", "/one/", "/"], relative: false }],
    [{ "proxy-cookie-domain": "~local .example.org" }, { redirect: null, cookieDomain: ["~*", "local", ".example.org"], cookiePath: null, relative: false }],
    [{ "proxy-cookie-domain": "off", "proxy-cookie-path": "off" }, null],
  ] as const)("%j", (a, rules) => {
    const got = policy(a);
    expect(got.problems).toEqual([]);
    expect(got.stage).toEqual(rules === null ? null : { kind: "proxy-rewrite", params: rules });
  });

  test.each([
    // Refused by ingress-nginx's validators, or empty: a diagnostic, and `off`.
    [{ "proxy-redirect-from": "a$host", "proxy-redirect-to": "b" }],
    [{ "proxy-redirect-from": "", "proxy-redirect-to": "b" }],
    [{ "proxy-redirect-from": "a\nb", "proxy-redirect-to": "b" }],
    [{ "proxy-cookie-domain": "localhost" }],
    [{ "proxy-cookie-domain": " localhost example.org" }],
    [{ "proxy-cookie-path": "/a'b /" }],
    [{ "proxy-cookie-path": "~*/a /" }],
  ] as const)("%j keeps off with a diagnostic", (a) => {
    const got = policy(a);
    expect(got.problems.length).toBe(1);
    expect(got.problems[0]).toStartWith(`annotation ${NGINX_PREFIX}`);
    expect(got.stage).toBeNull();
  });

  test.each([
    // Accepted by the validators, refused by nginx when it loads the location: 503.
    [{ "proxy-redirect-from": "a b", "proxy-redirect-to": "c" }, "proxy-redirect-from"],
    [{ "proxy-redirect-from": "a", "proxy-redirect-to": "b c" }, "proxy-redirect-to"],
    [{ "proxy-redirect-from": "~?", "proxy-redirect-to": "c" }, "proxy-redirect-from"],
    [{ "proxy-cookie-path": "/one/" }, "proxy-cookie-path"],
    [{ "proxy-cookie-path": "/a /b /c" }, "proxy-cookie-path"],
  ] as const)("%j refuses the Ingress's paths, naming %s", (a, name) => {
    const got = policy(a);
    expect(got.problems.length).toBe(1);
    expect(got.problems[0]).toStartWith(`annotation ${NGINX_PREFIX}${name}=`);
    expect(got.stage).toEqual({ kind: "refuse", params: null });
  });
});
