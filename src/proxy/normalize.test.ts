import { expect, test } from "bun:test";
import { normalizeTarget } from "./normalize.ts";

test("decodes unreserved, keeps reserved escapes, keeps query", () => {
  expect(normalizeTarget("/%7Efoo/%41b%2d?x=%2F")).toEqual({ path: "/~foo/Ab-", query: "?x=%2F" });
  expect(normalizeTarget("/a%20b%3F")).toEqual({ path: "/a%20b%3F", query: "" });
});

test("resolves dot segments, including encoded ones", () => {
  expect(normalizeTarget("/a/b/../c")?.path).toBe("/a/c");
  expect(normalizeTarget("/a/./b/.")?.path).toBe("/a/b/");
  expect(normalizeTarget("/a/%2e%2E/admin")?.path).toBe("/admin");
  expect(normalizeTarget("/../../etc")?.path).toBe("/etc");
  expect(normalizeTarget("/a/..")?.path).toBe("/");
  expect(normalizeTarget("/a/b/")?.path).toBe("/a/b/");
});

test("rejects encoded slash, backslash, NUL (any case) and raw backslash", () => {
  for (const p of ["/a%2Fb", "/a%2fb", "/a%5Cb", "/a%5cb", "/a%00", "/a\\b", "/a%zz", "/a%4", "x", "/a#b", "/a b"]) {
    expect(normalizeTarget(p)).toBeNull();
  }
});
