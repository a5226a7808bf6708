// What rewrite-target does to one request (src/table/rewrite.ts), shared by the proxy's rewrite
// stage and explain. nginx (ngx_http_rewrite_module.c, ngx_http_script.c) copies captures from
// the decoded URI and proxy_pass escapes the result; Portico escapes what a path cannot carry
// and forwards only a normalised path (README "How Portico reads request paths").
import { describe, expect, test } from "bun:test";
import { compilePathRegex, type PathRegex } from "../regex/index.ts";
import { escapePathText, forwardedPrefix, rewriteRequest } from "./rewrite.ts";

const re = (path: string): PathRegex => {
  const r = compilePathRegex(path);
  if (!r.ok) throw new Error(r.reason);
  return r.re;
};
const run = (path: string, target: string, uri: string, query = "") => {
  const r = re(path);
  const m = r.match(uri);
  if (m === null) throw new Error(`${path} does not match ${uri}`);
  return rewriteRequest(target, r, m, query);
};

describe("rewriteRequest", () => {
  test.each([
    // [path regex, target, decoded uri, query, outcome]
    ["/something(/|$)(.*)", "/$2", "/something/new", "?a=1", { kind: "path", path: "/new" }],
    ["/something(/|$)(.*)", "/$2", "/something", "", { kind: "path", path: "/" }],
    // Characters a path cannot carry as they are: escaped, never read as syntax.
    ["/s/(.*)", "/$1", "/s/a?b#c;d e%f", "", { kind: "path", path: "/a%3Fb%23c%3Bd%20e%25f" }],
    ["/s/(.*)", "/$1", "/s/é\"<>", "", { kind: "path", path: "/%C3%A9%22%3C%3E" }],
    // The result is normalised: dot segments from captures are resolved, "//" merged.
    ["/s/(.*)", "/x/$1", "/s/../../etc", "", { kind: "path", path: "/etc" }],
    ["/s/(.*)", "/x/$1", "/s//y", "", { kind: "path", path: "/x/y" }],
    // Named groups are variables of the same name (ngx_http_regex_exec).
    ["/u/(?<id>[0-9]+)", "/users/$id", "/u/42", "", { kind: "path", path: "/users/42" }],
    // nginx: an http(s):// replacement is a 302, arguments appended.
    ["/old/(.*)", "https://example.com/$1", "/old/a b", "?q=1", { kind: "redirect", location: "https://example.com/a%20b?q=1" }],
    ["/old/(.*)", "http://example.com/", "/old/x", "", { kind: "redirect", location: "http://example.com/" }],
  ] as const)("%s with %s on %s%s", (path, target, uri, query, want) => {
    expect(run(path, target, uri, query)).toEqual(want);
  });

  test("refusals (the proxy answers 500): empty, relative, a variable Portico does not have", () => {
    expect(run("/e(.*)", "$1", "/e")).toEqual({ kind: "refused", reason: "the rewritten path is empty" });
    expect(run("/e(.*)", "$1", "/ex")).toEqual({ kind: "refused", reason: 'the rewritten path "x" does not start with "/"' });
    expect(run("/e(.*)", "/$host", "/ex").kind).toBe("refused");
  });

  test("the query is not part of the rewritten path: the caller appends it", () => {
    expect(run("/a", "/b", "/a/c", "?x")).toEqual({ kind: "path", path: "/b" });
  });
});

describe("escapePathText and forwardedPrefix", () => {
  test("keeps what a routed path keeps, escapes the rest, refuses a lone surrogate", () => {
    expect(escapePathText("/a-b_c.d~e!$&'()*+,=:@|[]")).toBe("/a-b_c.d~e!$&'()*+,=:@|[]");
    expect(escapePathText("\\^`{}")).toBe("%5C%5E%60%7B%7D");
    expect(escapePathText("😀")).toBe("%F0%9F%98%80");
    expect(escapePathText("\ud800")).toBeNull();
  });

  test("X-Forwarded-Prefix expands the same captures; an unknown variable sends none", () => {
    const r = re("/api(/|$)(.*)");
    const m = r.match("/api/v1")!;
    expect(forwardedPrefix("/api$1", r, m)).toBe("/api/");
    expect(forwardedPrefix("/x $2", r, m)).toBe("/x v1");
    expect(forwardedPrefix("/$host", r, m)).toBeNull();
  });
});
