// cors-* values as ingress-nginx's cors parser reads them (internal/ingress/annotations/cors/main.go
// at dbb11b92): defaults, fallbacks, the origin list; and the stage policy a route carries.
import { describe, expect, test } from "bun:test";
import { DEFAULT_CORS_HEADERS, DEFAULT_CORS_METHODS } from "./cors.ts";
import { parseAnnotations } from "../compile/annotations.ts";
import { NGINX_PREFIX } from "./spec.ts";
import * as K from "../kinds/index.ts";

const parse = (a: Record<string, string>) =>
  parseAnnotations(Object.fromEntries(Object.entries({ "enable-cors": "true", ...a }).map(([k, val]) => [NGINX_PREFIX + k, val])));

describe("cors annotations", () => {
  test("enable-cors alone: ingress-nginx's defaults, one cors stage policy", () => {
    const a = parse({});
    expect(a.problems).toEqual([]);
    expect(a.unsupported).toEqual([]);
    expect(a.policies.cors).toEqual({
      enabled: true, origins: "*", methods: DEFAULT_CORS_METHODS, headers: DEFAULT_CORS_HEADERS,
      expose: null, credentials: true, maxAge: 1728000,
    });
    expect(a.options.stages).toEqual([{ stage: "cors", kind: K.CORS.id, params: { ...a.policies.cors } }]);
    expect(Object.isFrozen(a.options.stages)).toBe(true);
  });

  test("without enable-cors (or with it false or invalid) there is no stage, and the cors-* keys cost nothing", () => {
    expect(parseAnnotations({ [`${NGINX_PREFIX}cors-allow-origin`]: "https://a.com" }).options.stages).toBeNull();
    expect(parse({ "enable-cors": "false" }).options.stages).toBeNull();
    const bad = parse({ "enable-cors": "yes" });
    expect(bad.options.stages).toBeNull();
    expect(bad.problems).toHaveLength(1);
    expect(bad.problems[0]).toContain("enable-cors");
  });

  test("values as given (trimmed), as the e2e cors suite expects them", () => {
    const a = parse({
      "cors-allow-methods": " POST, GET ", "cors-allow-headers": "DNT, User-Agent",
      "cors-expose-headers": "X-CustomResponseHeader, X-CustomSecondHeader", "cors-allow-credentials": "false",
      "cors-max-age": "200",
    });
    expect(a.problems).toEqual([]);
    expect(a.policies.cors).toMatchObject({
      methods: "POST, GET", headers: "DNT, User-Agent", expose: "X-CustomResponseHeader, X-CustomSecondHeader",
      credentials: false, maxAge: 200,
    });
    expect(parse({ "cors-expose-headers": "*" }).policies.cors.expose).toBe("*");
    expect(parse({ "cors-max-age": "+007" }).policies.cors.maxAge).toBe(7);
  });

  test("an invalid value falls back to ingress-nginx's default, each with a diagnostic", () => {
    const a = parse({
      "cors-allow-methods": "GET;rm", "cors-allow-headers": "X-A: 1", "cors-expose-headers": "$upstream_addr",
      "cors-allow-credentials": "maybe", "cors-max-age": "5s",
    });
    expect(a.policies.cors).toMatchObject({
      methods: DEFAULT_CORS_METHODS, headers: DEFAULT_CORS_HEADERS, expose: null, credentials: true, maxAge: 1728000,
    });
    expect(a.problems).toHaveLength(5);
    // corsMethodsRegex allows one space after a comma, not two.
    expect(parse({ "cors-allow-methods": "GET,  POST" }).policies.cors.methods).toBe(DEFAULT_CORS_METHODS);
    // A line break is refused in every annotation.
    expect(parse({ "cors-allow-headers": "X-A\r\nX-B" }).policies.cors.headers).toBe(DEFAULT_CORS_HEADERS);
  });

  test("a long near-miss methods value is refused in linear time (no backtracking blow-up)", () => {
    const a = parse({ "cors-allow-methods": `${"A".repeat(50_000)}!` });
    expect(a.policies.cors.methods).toBe(DEFAULT_CORS_METHODS);
  });

  test("origins: list, lower-cased; * anywhere, or an empty value, means every origin", () => {
    expect(parse({ "cors-allow-origin": "https://origin.cors.com:8080, https://*.Example.com,null" }).policies.cors.origins)
      .toEqual(["https://origin.cors.com:8080", "https://*.example.com", "null"]);
    expect(parse({ "cors-allow-origin": "https://a.com, *" }).policies.cors.origins).toBe("*");
    const empty = parse({ "cors-allow-origin": "" });
    expect(empty.policies.cors.origins).toBe("*");
    expect(empty.problems).toHaveLength(1);
  });

  test("an entry that is not an origin is dropped with a diagnostic; the list never widens to *", () => {
    const a = parse({ "cors-allow-origin": "https://a.com/, HTTPS://b.com, c.com, https://d.com" });
    expect(a.policies.cors.origins).toEqual(["https://d.com"]);
    expect(a.problems).toHaveLength(3);
    const none = parse({ "cors-allow-origin": "https://a.com/" });
    expect(none.policies.cors.origins).toEqual([]);
    expect(none.problems.at(-1)).toContain("no origin is allowed");
  });
});
