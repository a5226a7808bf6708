// No path can stall the data plane: hostile patterns against hostile inputs complete, with
// the right answer. There is no timed assertion; on a backtracking engine (JavaScript's own
// RegExp, or PCRE) each of these takes longer than the universe has (2^50000 paths for
// `(a+)+$`), so this file would fail by the test timeout instead.
import { describe, expect, test } from "bun:test";
import { compilePathRegex, compileRegexHost, MAX_PATTERN_LENGTH, MAX_PROGRAM_SIZE, type PathRegex, RegexLocationSet } from "./index.ts";

function compiled(p: string): PathRegex {
  const r = compilePathRegex(p);
  if (!r.ok) throw new Error(r.reason);
  return r.re;
}

const HOSTILE_INPUT = `/${"a".repeat(50_000)}!`;

describe("hostile patterns against hostile input", () => {
  test("(a+)+$: nested quantifiers, no match", () => {
    const re = compiled("/(a+)+$");
    expect(re.test(HOSTILE_INPUT)).toBe(false);
    expect(re.match(HOSTILE_INPUT)).toBeNull();
  });

  test("(a|a)*b: ambiguous alternation, no match", () => {
    const re = compiled("/(a|a)*b");
    expect(re.test(HOSTILE_INPUT)).toBe(false);
    expect(re.match(HOSTILE_INPUT)).toBeNull();
  });

  test("(.*a){20}: polynomial for a backtracker, matches with Perl's leftmost-first captures", () => {
    const re = compiled("/(.*a){20}");
    expect(re.match(HOSTILE_INPUT)?.groups).toEqual([`/${"a".repeat(50_000)}`, "a"]);
  });

  test("the same three as the locations of one host, through the per-host set", () => {
    const host = compileRegexHost(
      ["/(a+)+$", "/(a|a)*b", "/(.*a){20}", "/"].map((path) => ({ path, pathType: "ImplementationSpecific" as const, useRegex: true, rewriteTarget: "", ref: path })),
    );
    expect(host.locations.map((l) => l.location.path)).toEqual(["/(.*a){20}", "/(a|a)*b", "/(a+)+$", "/"]);
    expect(host.first(HOSTILE_INPUT)?.location.ref).toBe("/(.*a){20}");
    expect(host.first(`/${"a".repeat(50_000)}`)?.location.ref).toBe("/(.*a){20}");
    expect(host.first(`/${"a".repeat(10)}`)?.location.ref).toBe("/(a+)+$");
    expect(host.first(`/${"a".repeat(50_000)}b`)?.location.ref).toBe("/(.*a){20}");
    expect(host.first(`/${"ab".repeat(25_000)}`)?.location.ref).toBe("/(.*a){20}");
    expect(host.first(`/${"b".repeat(50_000)}`)?.location.ref).toBe("/(a|a)*b");
  });

  test("a match-all prefix over a long path with many slashes (quadratic for a backtracker on failure)", () => {
    const re = compiled("/(.*)/(.*)/(.*)/end$");
    const uri = `/${"/".repeat(20_000)}x`;
    expect(re.match(uri)).toBeNull();
    expect(re.match(`/a/b/c/end`)?.groups).toEqual(["/a/b/c/end", "a", "b", "c"]);
  });
});

describe("size bounds", () => {
  test(`a path longer than ${MAX_PATTERN_LENGTH} characters is refused before it is parsed`, () => {
    expect(compilePathRegex(`/${"a".repeat(MAX_PATTERN_LENGTH)}`)).toEqual({
      ok: false,
      reason: `is ${MAX_PATTERN_LENGTH + 1} characters long; regular expressions are limited to ${MAX_PATTERN_LENGTH}`,
    });
    expect(compilePathRegex(`/${"a".repeat(MAX_PATTERN_LENGTH - 40)}`).ok).toBe(true);
  });

  test(`a short path that compiles to more than ${MAX_PROGRAM_SIZE} instructions is refused`, () => {
    const r = compilePathRegex("/(.*a){300}");
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(new RegExp(`^compiles to \\d+ instructions; regular expressions are limited to ${MAX_PROGRAM_SIZE}$`));
    expect(compilePathRegex("/((((a{100}){100}){100}){100})").ok).toBe(false);
    expect(compilePathRegex("/(.*a){20}").ok).toBe(true);
  });
});

describe("the per-host set gives the same first match as testing the locations in order", () => {
  // A small generator of path regexes and request paths over one alphabet, deterministic.
  // mulberry32: 32-bit integer arithmetic throughout, so the sequence is exact and repeatable.
  let seed = 42;
  const rand = (n: number) => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) % n;
  };
  const pick = <T>(xs: readonly T[]) => xs[rand(xs.length)]!;
  const atoms = ["a", "b", "/", ".", "[ab]", "[^/]", "(a|b)", "A", "B", "ab"];
  const quants = ["", "", "", "", "*", "+", "?", "{2}", "{1,2}"];
  const tails = ["", "", "$", "(/|$)", "(/|$)(.*)", "|/b"];
  const genPattern = () => {
    let s = "/";
    for (let i = 0, n = 1 + rand(3); i < n; i++) s += pick(atoms) + pick(quants);
    return s + pick(tails);
  };
  const genUri = () => {
    let s = "/";
    for (let i = 0, n = rand(6); i < n; i++) s += pick(["a", "b", "A", "/", "B"]);
    return s;
  };

  test("200 random hosts of 2-20 locations, 50 paths each", () => {
    let compared = 0;
    let none = 0;
    let notFirst = 0;
    for (let h = 0; h < 200; h++) {
      const res = Array.from({ length: 2 + rand(19) }, () => compilePathRegex(genPattern()))
        .filter((r) => r.ok)
        .map((r) => (r as { re: PathRegex }).re);
      const set = new RegexLocationSet(res);
      for (let u = 0; u < 50; u++) {
        const uri = genUri();
        const want = res.findIndex((re) => re.test(uri));
        expect({ uri, patterns: res.map((r) => r.path), first: set.firstMatch(uri) }).toEqual({ uri, patterns: res.map((r) => r.path), first: want });
        compared++;
        if (want < 0) none++;
        if (want > 0) notFirst++;
      }
    }
    expect(compared).toBe(10_000);
    // No match, a first-location match and a later winner are all well represented.
    expect({ none: none > 1_000, notFirst: notFirst > 1_000, first: compared - none - notFirst > 1_000 }).toEqual({ none: true, notFirst: true, first: true });
  });
});
