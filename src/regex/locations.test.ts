// Regex mode and location order, restating ingress-nginx (read at dbb11b92):
// template.go needsRewrite/enforceRegexModifier, location.go updateServerLocations,
// controller.go's two sort.SliceStable calls, k8s/main.go SetDefaultNGINXPathType.
import { describe, expect, test } from "bun:test";
import { expandLocations, type HostPath, hostUsesRegex, needsRewrite, orderLocations } from "./index.ts";

const p = (path: string, pathType: HostPath<string>["pathType"], ref: string, useRegex = false, rewriteTarget = ""): HostPath<string> => ({
  path,
  pathType,
  useRegex,
  rewriteTarget,
  ref,
});

describe("regex mode (enforceRegexModifier)", () => {
  test("any location with use-regex, or a rewrite-target differing from its path, switches the host", () => {
    expect(hostUsesRegex([p("/a", "Exact", "x"), p("/b", "Prefix", "y", true)])).toBe(true);
    expect(hostUsesRegex([p("/a", "Exact", "x"), p("/b", "Prefix", "y", false, "/c")])).toBe(true);
    expect(hostUsesRegex([p("/a", "Exact", "x"), p("/b", "Prefix", "y", false, "/b")])).toBe(false);
    expect(hostUsesRegex([p("/a", "Exact", "x"), p("/b", "Prefix", "y")])).toBe(false);
    expect(hostUsesRegex([])).toBe(false);
  });
  test("an empty path is / for the comparison (controller.go rootLocation)", () => {
    expect(needsRewrite({ path: "", rewriteTarget: "/" })).toBe(false);
    expect(needsRewrite({ path: "", rewriteTarget: "/x" })).toBe(true);
    expect(needsRewrite({ path: "/x", rewriteTarget: "" })).toBe(false);
  });
});

describe("expandLocations (updateServerLocations)", () => {
  const show = (paths: HostPath<string>[]) => expandLocations(paths).map((l) => `${l.path} ${l.origin} ${l.ref}`);

  test("a plain Prefix path becomes <path>/ plus an exact copy; ImplementationSpecific and a missing type are Prefix", () => {
    expect(show([p("/a", "Prefix", "A"), p("/b", "ImplementationSpecific", "B"), p("/c", undefined, "C")])).toEqual([
      "/a/ slash-added A",
      "/a exact-copy A",
      "/b/ slash-added B",
      "/b exact-copy B",
      "/c/ slash-added C",
      "/c exact-copy C",
    ]);
  });
  test("no exact copy when an Exact location with that path exists; a trailing slash is not doubled", () => {
    expect(show([p("/a", "Exact", "E"), p("/a", "Prefix", "P"), p("/d/", "Prefix", "D")])).toEqual([
      "/a as-written E",
      "/a/ slash-added P",
      "/d/ slash-added D",
      "/d/ exact-copy D",
    ]);
  });
  test("/, Exact paths, and paths with their own use-regex or rewrite stay as written", () => {
    expect(show([p("/", "Prefix", "root"), p("", "Prefix", "empty"), p("/x", "Exact", "X"), p("/r.*", "Prefix", "R", true), p("/w", "Prefix", "W", false, "/z")])).toEqual([
      "/ as-written root",
      "/ as-written empty",
      "/x as-written X",
      "/r.* as-written R",
      "/w as-written W",
    ]);
  });
  test("a Prefix whose rewrite-target equals its path is expanded like a plain one", () => {
    expect(show([p("/w", "Prefix", "W", false, "/w")])).toEqual(["/w/ slash-added W", "/w exact-copy W"]);
  });
});

describe("orderLocations (controller.go: sort by path descending, then by length descending, both stable)", () => {
  const order = (paths: string[]) => orderLocations(paths.map((path, i) => ({ path, i }))).map((l) => `${l.path}#${l.i}`);

  test("longest first", () => {
    expect(order(["/", "/a", "/abc", "/ab"])).toEqual(["/abc#2", "/ab#3", "/a#1", "/#0"]);
  });
  test("equal lengths in reverse byte order", () => {
    expect(order(["/abc", "/abd", "/ab.", "/ABC", "/ab/"])).toEqual(["/abd#1", "/abc#0", "/ab/#4", "/ab.#2", "/ABC#3"]);
  });
  test("equal paths keep their input order", () => {
    expect(order(["/x/", "/y", "/x/", "/x/"])).toEqual(["/x/#0", "/x/#2", "/x/#3", "/y#1"]);
  });
  test("length and order are Go's: UTF-8 bytes, not UTF-16 code units", () => {
    // "/éé" is 5 bytes (3 UTF-16 units); "/abc" is 4. "é" (0xC3…) sorts after "z". Both below
    // are 5 bytes: "𝒳" (U+1D4B3, a surrogate pair in UTF-16) is after U+FFFF in byte order,
    // although its first code unit (0xD835) is before 0xFFFF.
    expect(order(["/abc", "/éé"])).toEqual(["/éé#1", "/abc#0"]);
    expect(order(["/zz", "/é"])).toEqual(["/é#1", "/zz#0"]);
    expect(order(["/\uffffa", "/𝒳"])).toEqual(["/𝒳#1", "/\uffffa#0"]);
  });
  test("does not modify its input", () => {
    const input = [{ path: "/a" }, { path: "/bb" }];
    orderLocations(input);
    expect(input.map((l) => l.path)).toEqual(["/a", "/bb"]);
  });
});
