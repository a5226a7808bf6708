// custom-http-errors, default-backend and disable-proxy-intercept-errors as ingress-nginx's
// parsers read them (annotations/customhttperrors/main.go: spaces removed, the regex
// `^(?:[4,5]\d{2},?)*$`, split on commas, trimmed, Atoi; defaultbackend/main.go:
// ValidateServiceName; disableproxyintercepterrors/main.go: a bad value is false).
import { describe, expect, test } from "bun:test";
import { parseAnnotations } from "../compile/annotations.ts";

const N = "nginx.ingress.kubernetes.io/";
const pages = (ann: Record<string, string>) => parseAnnotations(ann).policies.errorPages;

describe("error-pages annotations", () => {
  test("absent: none", () => {
    expect(pages({ [`${N}proxy-body-size`]: "1m" })).toEqual({ codes: null, defaultBackend: null, disableIntercept: false });
  });

  test("codes: spaces anywhere, a trailing comma, repeats; sorted", () => {
    const p = parseAnnotations({ [`${N}custom-http-errors`]: " 503, 404 ,4 04,500," });
    expect(p.problems).toEqual([]);
    expect(p.policies.errorPages.codes).toEqual([404, 500, 503]);
    expect(Object.isFrozen(p.policies.errorPages.codes)).toBe(true);
  });

  test("bad codes are a diagnostic and no error pages", () => {
    for (const bad of ["", "200", "404;503", "4040", "abc", ",00", "600", "404,,503"]) {
      const p = parseAnnotations({ [`${N}custom-http-errors`]: bad });
      expect(p.policies.errorPages.codes).toBeNull();
      expect(p.problems.length).toBe(1);
    }
    expect(parseAnnotations({ [`${N}custom-http-errors`]: "404\n503" }).problems[0]).toContain("line break");
  });

  test("default-backend: an RFC 1035 label, trimmed", () => {
    expect(pages({ [`${N}default-backend`]: " errors " }).defaultBackend).toBe("errors");
    for (const bad of ["Errors", "1errors", "ns/errors", "errors-", "a".repeat(64)]) {
      const p = parseAnnotations({ [`${N}default-backend`]: bad });
      expect(p.policies.errorPages.defaultBackend).toBeNull();
      expect(p.problems.length).toBe(1);
    }
  });

  test("disable-proxy-intercept-errors: Go's ParseBool; a bad value is false with a diagnostic", () => {
    expect(pages({ [`${N}custom-http-errors`]: "404", [`${N}disable-proxy-intercept-errors`]: "True" }).disableIntercept).toBe(true);
    const p = parseAnnotations({ [`${N}custom-http-errors`]: "404", [`${N}disable-proxy-intercept-errors`]: "yes" });
    expect(p.policies.errorPages.disableIntercept).toBe(false);
    expect(p.problems.length).toBe(1);
  });

  test("no longer unsupported", () => {
    const p = parseAnnotations({ [`${N}custom-http-errors`]: "404", [`${N}default-backend`]: "x", [`${N}disable-proxy-intercept-errors`]: "false" });
    expect(p.unsupported).toEqual([]);
  });
});
