// rewrite-target expansion as nginx's script engine does it (src/http/ngx_http_script.c
// ngx_http_script_compile and ngx_http_script_copy_capture_code) for the values ingress-nginx
// lets through (RegexPathWithCapture in internal/ingress/annotations/parser/validators.go).
import { describe, expect, test } from "bun:test";
import { compilePathRegex, compileRewriteTarget, expandRewrite, isValidRewriteTarget, type PathRegex } from "./index.ts";

function compiled(p: string): PathRegex {
  const r = compilePathRegex(p);
  if (!r.ok) throw new Error(r.reason);
  return r.re;
}

function rewrite(path: string, target: string, uri: string): string | null {
  const re = compiled(path);
  const m = re.match(uri);
  if (m === null) throw new Error(`${path} does not match ${uri}`);
  return expandRewrite(target, re, m);
}

describe("isValidRewriteTarget is ingress-nginx's RegexPathWithCapture", () => {
  test("letters, digits, - . _ ~ / : $ pass; an empty value passes (it then means no rewrite)", () => {
    for (const v of ["/", "/$1", "/new/backend/$2", "https://example.com/$1", "$1", "/a-b.c_d~e:f", ""]) expect(isValidRewriteTarget(v)).toBe(true);
  });
  test("query strings, braces, spaces, CR/LF and other characters are refused", () => {
    for (const v of ["/a?b=1", "/a&b", "/${1}", "/a b", "/a\n", "/a\r", "/%20", "/a#b", "/a\"b", "//x;y"]) expect(isValidRewriteTarget(v)).toBe(false);
  });
});

describe("expansion", () => {
  test("$1…$9 are single digits: $12 is capture 1 then '2' (ngx_http_script_compile)", () => {
    expect(rewrite("/(a)(b)", "/$12", "/ab")).toBe("/a2");
  });
  test("a capture that took no part, or past the last group, is empty", () => {
    expect(rewrite("/x(/|$)(.*)", "/$2", "/x")).toBe("/");
    expect(rewrite("/x(y)?", "/a$1b/c$9d", "/x")).toBe("/ab/cd");
  });
  test("captures keep the request's case; the literal part is written as given", () => {
    expect(rewrite("/API/(.*)", "/Internal/$1", "/api/Users/42")).toBe("/Internal/Users/42");
  });
  test("a named capture is an nginx variable of that name, case-insensitive", () => {
    expect(rewrite("/(?<ver>v\\d+)/(?P<id>\\d+)", "/$id/$VER/$1", "/v3/42")).toBe("/42/v3/v3");
    expect(rewrite("/(?<id>\\d+)_x", "/$id_x", "/7_x")).toBeNull(); // the variable is $id_x, not $id + "_x"
  });
  test("named groups that differ only in case are one variable; the later name in sorted order wins", () => {
    // PCRE's name table is sorted ("A" < "a"); ngx_http_regex_exec sets each in that order.
    expect(rewrite("/(?<a>x)(?<A>y)", "/$a", "/xy")).toBe("/x");
  });
  test("with no capture the target replaces the whole URI", () => {
    expect(rewrite("/IP", "/uuid", "/ip/extra")).toBe("/uuid");
  });
});

describe("compileRewriteTarget", () => {
  const re = compiled("/(?<name>[a-z]+)/(\\d+)");

  test("refuses nginx variables other than the path's named captures", () => {
    expect(compileRewriteTarget("/$host/$1", re)).toEqual({
      ok: false,
      reason: "uses $host, which is not a named capture of the path; Portico expands only $1…$9 and the path's named captures, not nginx variables",
    });
    expect(compileRewriteTarget("/$0", re).ok).toBe(false);
  });
  test("refuses a $ that starts nothing, as nginx's 'invalid variable name'", () => {
    expect(compileRewriteTarget("/a/$", re)).toEqual({
      ok: false,
      reason: 'has a "$" at offset 3 that starts no capture or variable (nginx refuses the configuration)',
    });
    expect(compileRewriteTarget("/$-x", re).ok).toBe(false);
  });
  test("refuses what ingress-nginx drops", () => {
    expect(compileRewriteTarget("/a?b", re)).toEqual({
      ok: false,
      reason: "may contain only letters, digits and - . _ ~ / : $ (ingress-nginx ignores other values)",
    });
  });
  test("http:// and https:// targets are redirects; the check is case-sensitive (ngx_http_rewrite)", () => {
    const r = (t: string) => {
      const c = compileRewriteTarget(t, re);
      if (!c.ok) throw new Error(c.reason);
      return c.rewrite;
    };
    expect(r("https://example.com/$2").redirect).toBe(true);
    expect(r("http://example.com/").redirect).toBe(true);
    expect(r("HTTP://example.com/").redirect).toBe(false);
    expect(r("/https://x").redirect).toBe(false);
    expect(r("https://example.com/$name/$2").expand(re.match("/abc/12")!)).toBe("https://example.com/abc/12");
  });
});
