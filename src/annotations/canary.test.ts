// The canary family's values (ingress-nginx annotations/canary/main.go): valid rules, and any
// invalid value turning the whole canary off rather than into a half-applied split.
import { describe, expect, test } from "bun:test";
import { parseAnnotations } from "../compile/annotations.ts";

const A = "nginx.ingress.kubernetes.io/";
const parse = (ann: Record<string, string>) => parseAnnotations(ann);

describe("canary annotations", () => {
  test("rules: header lowercased, total below 100 is 100, value wins over pattern", () => {
    const p = parse({ [`${A}canary`]: "true", [`${A}canary-by-header`]: "X-Canary", [`${A}canary-by-header-value`]: "v2", [`${A}canary-by-header-pattern`]: "^v", [`${A}canary-weight`]: "5", [`${A}canary-weight-total`]: "50" });
    expect(p.problems).toEqual([]);
    expect(p.policies.canary).toEqual({ kind: "canary", rules: { header: "x-canary", headerValue: "v2", headerPattern: null, cookie: null, weight: 5, weightTotal: 100 } });
  });
  test("a total above 100 is kept; value and pattern without a header do nothing", () => {
    const p = parse({ [`${A}canary`]: "1", [`${A}canary-by-header-value`]: "v2", [`${A}canary-weight`]: "3", [`${A}canary-weight-total`]: "1000" });
    expect(p.policies.canary).toEqual({ kind: "canary", rules: { header: null, headerValue: null, headerPattern: null, cookie: null, weight: 3, weightTotal: 1000 } });
  });
  for (const [key, value] of [
    ["canary-weight", "ten"],
    ["canary-weight", ""],
    ["canary-weight-total", "1e3"],
    ["canary-by-header", "X Canary"],
    ["canary-by-header", "X-Canary\r\nEvil: 1"],
    ["canary-by-cookie", "a;b"],
    ["canary-by-header-value", "v 2"],
    ["canary-by-header-pattern", "(a)\\1"],
    ["canary-by-header-pattern", "x(?=y)"],
    ["canary-by-header-pattern", "a{2000}"],
  ] as const) {
    test(`invalid ${key}=${JSON.stringify(value)} → the canary is not used, a problem names it`, () => {
      const p = parse({ [`${A}canary`]: "true", [`${A}canary-weight`]: "50", [`${A}${key}`]: value });
      expect(p.policies.canary).toEqual({ kind: "invalid" });
      expect(p.problems.length).toBe(1);
      expect(p.problems[0]).toContain(`${A}${key}=`);
      expect(p.problems[0]).toContain("the canary is not used");
    });
  }
  test("canary-* keys without canary true: an ordinary Ingress, and a problem", () => {
    for (const c of [undefined, "false", "yes"]) {
      const ann: Record<string, string> = { [`${A}canary-weight`]: "50" };
      if (c !== undefined) ann[`${A}canary`] = c;
      const p = parse(ann);
      expect(p.policies.canary).toEqual({ kind: "none" });
      expect(p.problems.some((m) => m.includes("served as an ordinary one"))).toBe(true);
    }
  });
  test("no canary annotation: none, no problem", () => {
    expect(parse({ [`${A}canary`]: "false" }).policies.canary).toEqual({ kind: "none" });
    expect(parse({ [`${A}canary`]: "false" }).problems).toEqual([]);
  });
});
