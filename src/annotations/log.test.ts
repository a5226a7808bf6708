// enable-access-log's values as ingress-nginx's log parser reads them
// (internal/ingress/annotations/log/main.go: parser.GetBoolAnnotation, Go's strconv.ParseBool;
// any error leaves the access log on).
import { describe, expect, test } from "bun:test";
import { parseAnnotations } from "../compile/annotations.ts";
import { DEFAULT_ROUTE_OPTIONS } from "../table/routes.ts";
import { NGINX_PREFIX } from "./spec.ts";

const read = (value: string) => parseAnnotations({ [`${NGINX_PREFIX}enable-access-log`]: value });

describe("enable-access-log", () => {
  test("false spellings turn the route's line off; true ones keep the default options", () => {
    for (const v of ["false", "0", "f", "F", "FALSE", "False"]) {
      const a = read(v);
      expect(a.problems).toEqual([]);
      expect(a.options.accessLog).toBe(false);
    }
    for (const v of ["true", "1", "T"]) {
      const a = read(v);
      expect(a.problems).toEqual([]);
      expect(a.options).toBe(DEFAULT_ROUTE_OPTIONS);
    }
  });

  test("bad, empty and line-broken values are reported and keep the line on", () => {
    for (const v of ["no", "", "false\n", "false\r"]) {
      const a = read(v);
      expect(a.problems).toHaveLength(1);
      expect(a.problems[0]).toContain(`${NGINX_PREFIX}enable-access-log=${JSON.stringify(v)}`);
      expect(a.options.accessLog).toBe(true);
    }
  });

  test("the portico.dev name wins over ingress-nginx's", () => {
    const a = parseAnnotations({ "portico.dev/enable-access-log": "false", [`${NGINX_PREFIX}enable-access-log`]: "true" });
    expect(a.options.accessLog).toBe(false);
  });
});
