// proxy-next-upstream* values as ingress-nginx's parser takes them (annotations/proxy/main.go:
// validUpstreamAnnotation, ValidateInt; an invalid value falls back to its default alone).
import { describe, expect, test } from "bun:test";
import { DEFAULT_RETRY } from "../table/routes.ts";
import { parseAnnotations } from "../compile/annotations.ts";

const N = "nginx.ingress.kubernetes.io/";

describe("retries annotations", () => {
  test("absent: the route carries nothing (null = ingress-nginx's `error timeout`, 3, 0)", () => {
    expect(parseAnnotations({ [`${N}proxy-body-size`]: "1m" }).options.retry).toBeNull();
    expect(DEFAULT_RETRY).toEqual({ error: true, timeout: true, invalidHeader: false, statuses: [], nonIdempotent: false, tries: 3, timeoutMs: 0 });
  });

  test("tokens, in any order, separated by white space; http_* become statuses", () => {
    const p = parseAnnotations({ [`${N}proxy-next-upstream`]: "http_504  invalid_header http_429 http_504 non_idempotent" });
    expect(p.problems).toEqual([]);
    expect(p.options.retry).toEqual({ error: false, timeout: false, invalidHeader: true, statuses: [429, 504], nonIdempotent: true, tries: 3, timeoutMs: 0 });
    expect(Object.isFrozen(p.options.retry)).toBe(true);
    expect(Object.isFrozen(p.options.retry?.statuses)).toBe(true);
  });

  test("off clears everything else (nginx merges the bitmask to off)", () => {
    const p = parseAnnotations({ [`${N}proxy-next-upstream`]: "error off http_502" });
    expect(p.options.retry).toMatchObject({ error: false, timeout: false, invalidHeader: false, statuses: [], nonIdempotent: false });
  });

  test("tries and timeout alone keep the default conditions; portico.dev names win", () => {
    const p = parseAnnotations({ [`${N}proxy-next-upstream-tries`]: "5", [`${N}proxy-next-upstream-timeout`]: "10", "portico.dev/next-upstream-tries": "0" });
    expect(p.options.retry).toEqual({ ...DEFAULT_RETRY, tries: 0, timeoutMs: 10_000 });
  });

  for (const [name, value] of [
    ["proxy-next-upstream", "http_501"],
    ["proxy-next-upstream", "error,timeout"],
    ["proxy-next-upstream", ""],
    ["proxy-next-upstream", "error\ntimeout"],
    ["proxy-next-upstream-tries", "-1"],
    ["proxy-next-upstream-tries", "3x"],
    ["proxy-next-upstream-timeout", "1.5"],
    ["proxy-next-upstream-timeout", "5d"],
  ] as const) {
    test(`invalid ${name}=${JSON.stringify(value)}: a problem naming it, the default for it alone`, () => {
      const p = parseAnnotations({ [`${N}${name}`]: value, [`${N}proxy-next-upstream-tries`]: name === "proxy-next-upstream-tries" ? value : "2" });
      expect(p.problems.length).toBe(1);
      expect(p.problems[0]).toContain(`${N}${name}=`);
      const expected = name === "proxy-next-upstream-tries" ? null : { ...DEFAULT_RETRY, tries: 2 };
      expect(p.options.retry).toEqual(expected);
    });
  }
});
