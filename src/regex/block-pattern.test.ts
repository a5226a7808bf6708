// block-user-agents / block-referers entries as nginx's map reads them (ngx_http_map_module):
// `~` case-sensitive regex, `~*` caseless, anything else an exact value in any case.
import { describe, expect, test } from "bun:test";
import { blockPatternProblem, compileBlockList } from "./block-pattern.ts";

describe("compileBlockList", () => {
  test("an empty list blocks nothing and costs no matcher", () => {
    expect(compileBlockList([])).toBeNull();
  });

  test("exact values match whole, in any case; regexes are unanchored", () => {
    const t = compileBlockList(["AlphaBot", "~*chrome\\/68\\.0", "~^curl/"])!;
    expect(t("AlphaBot")).toBe(true);
    expect(t("alphabot")).toBe(true);
    expect(t("AlphaBot/2")).toBe(false);
    expect(t("Mozilla/5.0 Chrome/68.0.3440.106")).toBe(true);
    expect(t("curl/8.0")).toBe(true);
    // `~` is case-sensitive.
    expect(t("Curl/8.0")).toBe(false);
    // An absent header is the empty value, which no entry here matches.
    expect(t("")).toBe(false);
  });

  test("a regex the linear-time engine refuses is reported, and a list holding one blocks every value", () => {
    expect(blockPatternProblem("~(a")).not.toBeNull();
    expect(blockPatternProblem("(a")).toBeNull();
    expect(compileBlockList(["~(a"])!("anything")).toBe(true);
  });
});
