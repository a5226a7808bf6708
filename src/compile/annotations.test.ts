import { describe, expect, test } from "bun:test";
import { ANNOTATIONS, parseAnnotations } from "./annotations.ts";

const one = (name: string, value: string) => parseAnnotations({ [`portico.dev/${name}`]: value });

describe("annotations", () => {
  test("no annotations: shared defaults, no problems", () => {
    const a = parseAnnotations(undefined);
    expect(a.options).toEqual({
      sslRedirect: true,
      forceSslRedirect: false,
      hsts: true,
      maxBodySize: null,
      connectTimeoutMs: null,
      responseTimeoutMs: null,
      streamIdleTimeoutMs: null,
    });
    expect(a.scheme).toBe("http");
    expect(parseAnnotations({ "other.io/x": "1" })).toBe(a);
  });

  test.each([
    ["1048576", 1048576],
    ["512k", 512 * 1024],
    ["10m", 10 * 1024 * 1024],
    ["10M", 10 * 1024 * 1024],
    ["1g", 1024 ** 3],
    ["0", Number.POSITIVE_INFINITY],
  ])("max-body-size %s", (v, n) => {
    const a = one("max-body-size", v);
    expect(a.problems).toEqual([]);
    expect(a.options.maxBodySize).toBe(n);
  });

  test.each([
    ["500ms", 500],
    ["5s", 5000],
    ["2m", 120_000],
    ["1h", 3_600_000],
    ["30", 30_000],
  ])("connect-timeout %s", (v, n) => {
    expect(one("connect-timeout", v).options.connectTimeoutMs).toBe(n);
  });

  test.each([
    ["max-body-size", "10mb"],
    ["max-body-size", "-1"],
    ["max-body-size", "1e3"],
    ["connect-timeout", "0"],
    ["connect-timeout", "1.5s"],
    ["connect-timeout", "5 s"],
    ["response-timeout", "abc"],
    ["ssl-redirect", "1"],
    ["backend-protocol", "GRPC"],
  ])("bad %s=%s → problem and default", (name, value) => {
    const a = one(name, value);
    expect(a.problems).toHaveLength(1);
    expect(a.problems[0]).toContain(`portico.dev/${name}`);
    expect(a.options).toEqual(parseAnnotations(undefined).options);
    expect(a.scheme).toBe("http");
  });

  test("ingress-nginx aliases apply only when the portico.dev name is absent", () => {
    const a = parseAnnotations({
      "nginx.ingress.kubernetes.io/proxy-body-size": "8m",
      "nginx.ingress.kubernetes.io/proxy-read-timeout": "60",
      "nginx.ingress.kubernetes.io/backend-protocol": "HTTPS",
      "nginx.ingress.kubernetes.io/ssl-redirect": "false",
      "portico.dev/ssl-redirect": "true",
    });
    expect(a.options.maxBodySize).toBe(8 * 1024 * 1024);
    expect(a.options.responseTimeoutMs).toBe(60_000);
    expect(a.options.sslRedirect).toBe(true);
    expect(a.scheme).toBe("https");
  });

  test("the exported list names every annotation once", () => {
    const names = ANNOTATIONS.flatMap((a) => [a.name, ...a.aliases]);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toContain("portico.dev/backend-protocol");
  });
});
