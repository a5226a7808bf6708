import { describe, expect, test } from "bun:test";
import { NOT_IMPLEMENTED } from "./not-implemented.ts";
import { parseAnnotations } from "../compile/annotations.ts";
import { ANNOTATIONS, FAMILIES, IMPLEMENTED } from "./registry.ts";
import { NGINX_PREFIX, PORTICO_PREFIX, namesOf } from "./spec.ts";

describe("annotation registry", () => {
  test("every name is listed once, under its prefix", () => {
    const names = ANNOTATIONS.flatMap(namesOf);
    expect(new Set(names).size).toBe(names.length);
    for (const a of ANNOTATIONS) {
      if (a.portico !== null) expect(a.portico).toStartWith(PORTICO_PREFIX);
      for (const n of a.nginx) expect(n).toStartWith(NGINX_PREFIX);
      expect(namesOf(a).length).toBeGreaterThan(0);
      expect(a.description.length).toBeGreaterThan(0);
    }
  });

  test("implemented annotations belong to their family and say how they compare with ingress-nginx", () => {
    for (const family of Object.values(FAMILIES)) {
      expect(family.annotations.length).toBeGreaterThan(0);
      for (const a of family.annotations) {
        expect(a.family).toBe(family.name);
        expect(a.default).not.toBeNull();
        expect(a.compat.kind).not.toBe("not-implemented");
        // An ingress-nginx twin makes a "Portico only" claim false, and vice versa.
        expect(a.compat.kind === "portico-only").toBe(a.nginx.length === 0);
      }
    }
  });

  test("only Portico's own annotations may span lines (ingress-nginx refuses a line break in its own)", () => {
    for (const a of ANNOTATIONS) if (a.multiline === true) expect(a.compat.kind).toBe("portico-only");
  });

  test("each not-implemented annotation is an UnsupportedAnnotation, each implemented one is read", () => {
    for (const a of NOT_IMPLEMENTED) {
      expect(a.compat.kind).toBe("not-implemented");
      for (const n of a.nginx) expect(parseAnnotations({ [n]: "x" }).unsupported).toEqual([n]);
    }
    for (const a of IMPLEMENTED) for (const n of namesOf(a)) expect(parseAnnotations({ [n]: "x" }).unsupported).toEqual([]);
  });
});

