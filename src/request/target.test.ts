import { expect, test } from "bun:test";
import { normaliseRequestHost } from "./host.ts";
import { normalisePath, normaliseTarget, targetOf } from "./target.ts";

test("decodes unreserved escapes, upper-cases the others, keeps the query", () => {
  expect(normaliseTarget("/%7Efoo/%41b%2d?x=%2F")).toEqual({ path: "/~foo/Ab-", query: "?x=%2F" });
  expect(normaliseTarget("/a%20b%3f%3b")).toEqual({ path: "/a%20b%3F%3B", query: "" });
});

test("resolves dot segments, including escaped ones, then merges slashes", () => {
  expect(normalisePath("/a/b/../c")).toBe("/a/c");
  expect(normalisePath("/a/./b/.")).toBe("/a/b/");
  expect(normalisePath("/a/%2e%2E/admin")).toBe("/admin");
  expect(normalisePath("/../../etc")).toBe("/etc");
  expect(normalisePath("/a/..")).toBe("/");
  expect(normalisePath("//admin/users")).toBe("/admin/users");
  expect(normalisePath("/.//admin")).toBe("/admin");
  expect(normalisePath("/..//admin")).toBe("/admin");
  expect(normalisePath("/%2e//admin")).toBe("/admin");
  expect(normalisePath("/a///b//")).toBe("/a/b/");
  // Dots first, as Bun's req.url has them: "/a//.." drops the empty segment, not "a".
  expect(normalisePath("/a//../b")).toBe("/a/b");
});

test("a backslash is a slash, as the WHATWG parser (and so Bun) reads it", () => {
  expect(normalisePath("/\\admin")).toBe("/admin");
  expect(normalisePath("/a\\..\\admin")).toBe("/admin");
});

test("characters the URL parser would encode are encoded here, once", () => {
  expect(normalisePath('/a{b}"<>^`')).toBe("/a%7Bb%7D%22%3C%3E%5E%60");
  expect(normalisePath("/a|b[c]@:!$&'()*+,=")).toBe("/a|b[c]@:!$&'()*+,=");
  expect(normalisePath("/café")).toBe("/caf%C3%A9");
  expect(normalisePath("/caf%c3%a9")).toBe("/caf%C3%A9");
  expect(normaliseTarget("/a?q='\"<>é|`")).toEqual({ path: "/a", query: "?q=%27%22%3C%3E%C3%A9|`" });
});

test("double encoding is decoded once only", () => {
  expect(normalisePath("/a/%252e%252e/admin")).toBe("/a/%252e%252e/admin");
  expect(normalisePath("/%25%32%65")).toBe("/%252e");
});

test("400: encoded separators, controls, parameters, fragments, bad escapes", () => {
  for (const p of [
    "/a%2Fb", "/a%2fb", "/a%5Cb", "/a%5cb", "/a%00", "/a%0a", "/a%7F", "/a%zz", "/a%4", "x", "", "/a#b", "/a b",
    "/a\x7f", "/a\tb", "/admin;x=1/secret", "/..;/admin", "/a;",
  ]) {
    expect(normaliseTarget(p), p).toBeNull();
  }
  expect(normaliseTarget("/a?b#c")).toBeNull();
  expect(normaliseTarget("/a?b c")).toBeNull();
});

test("400: escapes that are not well-formed UTF-8, and U+FFFD (Bun's mark for raw bytes that were not)", () => {
  for (const p of [
    "/%c0%ae", "/%C0%AE%C0%AE/admin", "/%e0%80%ae", "/%f0%80%80%ae", "/%ed%a0%80", "/%f4%90%80%80", "/%f5%80%80%80",
    "/%c3", "/%c3a", "/%80", "/%bf", "/%ff", "/%ef%bf%bd", "/%EF%BF%BD", "/\ufffd", "/\ud800",
  ]) {
    expect(normalisePath(p), p).toBeNull();
  }
  for (const [p, want] of [["/%c2%80", "/%C2%80"], ["/%e0%a0%80", "/%E0%A0%80"], ["/%f0%90%80%80", "/%F0%90%80%80"], ["/%f4%8f%bf%bf", "/%F4%8F%BF%BF"], ["/%ef%bf%bc", "/%EF%BF%BC"]]) {
    expect(normalisePath(p as string), p).toBe(want as string);
  }
});

test("the result is its own normal form", () => {
  const alphabet = ["", ".", "..", "%2e", "%2E%2e", "a", "%41", "~", "%7e", "%25", "%252e", "\\", "é", "%c3%a9", "{", "|", "%3b", "%20"];
  let seed = 7;
  const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
  for (let k = 0; k < 2000; k++) {
    let p = "";
    for (let s = 1 + rnd(5); s > 0; s--) p += "/" + alphabet[rnd(alphabet.length)] + alphabet[rnd(alphabet.length)];
    const once = normalisePath(p);
    if (once === null) continue;
    expect(normalisePath(once), p).toBe(once);
    expect(once).not.toContain("//");
    expect(once).not.toMatch(/\/\.\.?(\/|$)/);
    expect(once).toMatch(/^[\x21-\x7e]+$/);
  }
});

test("Host: grammar, case, port and trailing dot", () => {
  expect(normaliseRequestHost("Shop.TEST.:8443")).toEqual({ hostname: "shop.test", port: "8443" });
  expect(normaliseRequestHost("[::1]:80")).toEqual({ hostname: "[::1]", port: "80" });
  expect(normaliseRequestHost("a.test")).toEqual({ hostname: "a.test", port: null });
  // RFC 3986 §3.2.3 port = *DIGIT: an empty port is the default one (nginx takes it too).
  expect(normaliseRequestHost("a.test:")).toEqual({ hostname: "a.test", port: null });
  expect(normaliseRequestHost("[::1]:")).toEqual({ hostname: "[::1]", port: null });
  for (const h of ["", "a test", "user@a.test", "a.test, b.test", "a.test:99999", "a.test::", ":", "[::1%eth0]", ".", "a.test/x"]) {
    expect(normaliseRequestHost(h), h).toBeNull();
  }
});

test("targetOf splits Bun's url", () => {
  expect(targetOf("http://a:1/x?y")).toEqual({ authority: "a:1", target: "/x?y" });
  expect(targetOf("/raw")).toEqual({ authority: null, target: "/raw" });
  expect(targetOf("http://a")).toEqual({ authority: "a", target: "/" });
  // A bare target keeps every "//": only an absolute url's "://" starts an authority.
  expect(targetOf("/a//b?c//d")).toEqual({ authority: null, target: "/a//b?c//d" });
  expect(targetOf("http://a/x//y")).toEqual({ authority: "a", target: "/x//y" });
});
