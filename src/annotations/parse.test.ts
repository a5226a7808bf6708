import { describe, expect, test } from "bun:test";
import { DEFAULT_ROUTE_OPTIONS } from "../table/routes.ts";
import { createReader } from "./parse.ts";
import { parseAnnotations } from "../compile/annotations.ts";
import { FAMILIES } from "./registry.ts";
import { NGINX_PREFIX, type AnnotationSpec } from "./spec.ts";
import { Bool } from "./values.ts";

const one = (name: string, value: string) => parseAnnotations({ [`portico.dev/${name}`]: value });
const nginx = (name: string, value: string) => parseAnnotations({ [`${NGINX_PREFIX}${name}`]: value });

describe("parseAnnotations", () => {
  test("no annotation of ours: one shared, frozen result with every family's default", () => {
    const a = parseAnnotations(undefined);
    expect(a.options).toBe(DEFAULT_ROUTE_OPTIONS);
    expect(a.options).toEqual({
      sslRedirect: true, forceSslRedirect: false, hsts: true, maxBodySize: null,
      connectTimeoutMs: null, responseTimeoutMs: null, streamIdleTimeoutMs: null, retry: null, requestBufferSize: null,
      proxyBuffering: null, proxyBufferSize: null, preserveTrailingSlash: false, usePortInRedirects: false, fromToWwwRedirect: false, limitRate: null, limitRateAfter: null, accessLog: true, stages: null,
    });
    expect(a.scheme).toBe("http");
    for (const [key, family] of Object.entries(FAMILIES)) expect(a.policies[key as keyof typeof FAMILIES]).toBe(family.none as never);
    expect(parseAnnotations({ "other.io/x": "1" })).toBe(a);
    expect(parseAnnotations({})).toBe(a);
    expect(Object.isFrozen(a)).toBe(true);
  });

  test("an Ingress with only unsupported annotations shares the default options", () => {
    const a = nginx("configuration-snippet", "proxy_buffering off;");
    expect(a.options).toBe(DEFAULT_ROUTE_OPTIONS);
    expect(a.unsupported).toEqual([`${NGINX_PREFIX}configuration-snippet`]);
  });

  test("results are frozen all the way to each family's policy", () => {
    const a = parseAnnotations({ "portico.dev/max-body-size": "1m", "portico.dev/connect-timeout": "1s", "portico.dev/hsts": "false" });
    for (const o of [a, a.options, a.policies, a.problems, a.unsupported, ...Object.values(a.policies)]) expect(Object.isFrozen(o)).toBe(true);
    expect(a.policies.body.maxBodySize).toBe(1024 * 1024);
    expect(a.options.maxBodySize).toBe(1024 * 1024);
    expect(a.policies.tlsRedirect.hsts).toBe(false);
  });

  test.each([
    ["1048576", 1048576],
    ["512k", 512 * 1024],
    ["10m", 10 * 1024 * 1024],
    ["10M", 10 * 1024 * 1024],
    ["1g", 1024 ** 3],
    [" 1g ", 1024 ** 3],
    ["0", Number.POSITIVE_INFINITY],
  ])("max-body-size %p", (v, n) => {
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
    ["596h", 596 * 3_600_000],
    ["2147483s", 2_147_483_000],
    ["35791m", 35791 * 60_000],
  ])("connect-timeout %p", (v, n) => {
    const a = one("connect-timeout", v);
    expect(a.problems).toEqual([]);
    expect(a.options.connectTimeoutMs).toBe(n);
  });

  // A timer longer than 2^31-1 ms fires after 1 ms in Bun: such a timeout would time out at once.
  test.each(["2147484s", "2147484", "35792m", "600h", "999999999h"])("a timeout above 2^31-1 ms is refused: %p", (v) => {
    for (const name of ["connect-timeout", "response-timeout", "stream-idle-timeout"]) {
      const a = one(name, v);
      expect(a.problems).toEqual([`annotation portico.dev/${name}=${JSON.stringify(v)}: a timeout must be at most 2147483647 ms (about 24.8 days); using the default`]);
      expect(a.options).toBe(DEFAULT_ROUTE_OPTIONS);
    }
    expect(nginx("proxy-read-timeout", v).problems[0]).toContain(`${NGINX_PREFIX}proxy-read-timeout`);
  });

  test.each([
    ["max-body-size", "10mb"],
    ["max-body-size", "-1"],
    ["max-body-size", "1e3"],
    ["max-body-size", ""],
    ["connect-timeout", "0"],
    ["connect-timeout", "1.5s"],
    ["connect-timeout", "5 s"],
    ["connect-timeout", ""],
    ["response-timeout", "abc"],
    ["ssl-redirect", "yes"],
    ["ssl-redirect", ""],
    ["backend-protocol", "FCGI"],
    ["backend-protocol", ""],
  ])("bad %s=%p → a problem naming it, and the default", (name, value) => {
    const a = one(name, value);
    expect(a.problems).toHaveLength(1);
    expect(a.problems[0]).toStartWith(`annotation portico.dev/${name}=${JSON.stringify(value)}: `);
    expect(a.problems[0]).toEndWith("; using the default");
    expect(a.options).toBe(DEFAULT_ROUTE_OPTIONS);
    expect(a.scheme).toBe("http");
  });

  // Go's strconv.ParseBool, which ingress-nginx's parser uses for every boolean.
  test.each(["1", "t", "T", "TRUE", "true", "True"])("boolean %p is true", (s) => {
    const a = nginx("force-ssl-redirect", s);
    expect(a.problems).toEqual([]);
    expect(a.options.forceSslRedirect).toBe(true);
  });
  test.each(["0", "f", "F", "FALSE", "false", "False"])("boolean %p is false", (s) => {
    const a = nginx("ssl-redirect", s);
    expect(a.problems).toEqual([]);
    expect(a.options.sslRedirect).toBe(false);
  });
  test.each(["tRuE", " true", "true ", "yes", "on", "2", ""])("boolean %p is invalid, as ParseBool holds", (s) => {
    const a = nginx("ssl-redirect", s);
    expect(a.problems).toEqual([`annotation ${NGINX_PREFIX}ssl-redirect=${JSON.stringify(s)}: expected true or false; using the default`]);
    expect(a.options.sslRedirect).toBe(true);
  });

  test.each([
    ["ssl-redirect", "false\n"],
    ["max-body-size", "1m\r\n"],
    ["connect-timeout", "5\nproxy_pass http://evil"],
    ["backend-protocol", "HTTPS\r"],
  ])("a line break is refused whatever the type: %s=%p", (name, value) => {
    const a = one(name, value);
    expect(a.problems).toEqual([`annotation portico.dev/${name}=${JSON.stringify(value)}: a value may not contain a line break; using the default`]);
    expect(a.options).toBe(DEFAULT_ROUTE_OPTIONS);
    expect(a.scheme).toBe("http");
  });

  test("backend-protocol is case-insensitive and trimmed, as ingress-nginx's option check", () => {
    expect(one("backend-protocol", " https ").scheme).toBe("https");
    expect(nginx("backend-protocol", "Https").scheme).toBe("https");
    expect(nginx("backend-protocol", "http").scheme).toBe("http");
    expect(nginx("backend-protocol", "GRPC").scheme).toBe("grpc");
    expect(one("backend-protocol", "grpcs").scheme).toBe("grpcs");
  });

  test("the portico.dev name wins over the ingress-nginx one when both have a value", () => {
    const a = parseAnnotations({
      "nginx.ingress.kubernetes.io/proxy-body-size": "8m",
      "nginx.ingress.kubernetes.io/proxy-read-timeout": "60",
      "nginx.ingress.kubernetes.io/backend-protocol": "HTTPS",
      "nginx.ingress.kubernetes.io/ssl-redirect": "false",
      "portico.dev/ssl-redirect": "true",
      "portico.dev/max-body-size": "yes", // invalid: reported, and the ingress-nginx value is not used instead
    });
    expect(a.options.maxBodySize).toBe(null);
    expect(a.problems).toEqual(['annotation portico.dev/max-body-size="yes": expected a byte size such as 1048576, 512k, 10m or 1g; using the default']);
    expect(a.options.responseTimeoutMs).toBe(60_000);
    expect(a.options.sslRedirect).toBe(true);
    expect(a.scheme).toBe("https");
  });

  test("an empty value gives way to the next name; empty everywhere is invalid under the first name", () => {
    const a = parseAnnotations({ "portico.dev/connect-timeout": "", "nginx.ingress.kubernetes.io/proxy-connect-timeout": "7" });
    expect(a.problems).toEqual([]);
    expect(a.options.connectTimeoutMs).toBe(7000);
    const b = parseAnnotations({ "portico.dev/connect-timeout": "", "nginx.ingress.kubernetes.io/proxy-connect-timeout": "" });
    expect(b.problems).toEqual(['annotation portico.dev/connect-timeout="": expected a duration such as 500ms, 5s, 2m or a number of seconds; using the default']);
  });

  test("unknown and not implemented names of both prefixes are unsupported, sorted; implemented ones are not", () => {
    const a = parseAnnotations({
      "portico.dev/unknown-thing": "x",
      "nginx.ingress.kubernetes.io/server-snippet": "gzip on;",
      "nginx.ingress.kubernetes.io/made-up": "1",
      "nginx.ingress.kubernetes.io/proxy-body-size": "1m",
      "portico.dev/hsts": "true",
      "kubernetes.io/ingress.class": "portico",
    });
    expect(a.unsupported).toEqual(["nginx.ingress.kubernetes.io/made-up", "nginx.ingress.kubernetes.io/server-snippet", "portico.dev/unknown-thing"]);
    expect(a.problems).toEqual([]);
  });
});

describe("the Reader families parse through", () => {
  // An ingress-nginx annotation with an alias of its own, as the access family will have.
  const ALLOW: AnnotationSpec = {
    portico: "portico.dev/allow", nginx: [`${NGINX_PREFIX}allowlist-source-range`, `${NGINX_PREFIX}whitelist-source-range`],
    family: "access", default: null, description: "", compat: { kind: "same" },
  };

  test("ingress-nginx's alias is read only when the names before it are empty or absent", () => {
    const problems: string[] = [];
    const r = createReader({ [`${NGINX_PREFIX}whitelist-source-range`]: "true", [`${NGINX_PREFIX}allowlist-source-range`]: "" }, problems);
    expect(r.read(ALLOW, Bool, "x")).toEqual({ state: "ok", value: true, name: `${NGINX_PREFIX}whitelist-source-range`, raw: "true" });
    const r2 = createReader({ [`${NGINX_PREFIX}whitelist-source-range`]: "true", [`${NGINX_PREFIX}allowlist-source-range`]: "false" }, problems);
    expect(r2.value(ALLOW, Bool)).toBe(false);
    expect(problems).toEqual([]);
  });

  test("read() tells an invalid value from an absent one, with the family's own consequence", () => {
    const problems: string[] = [];
    const r = createReader({ "portico.dev/allow": "nope" }, problems);
    expect(r.read(ALLOW, Bool, "the route refuses every request")).toEqual({ state: "invalid", empty: false });
    expect(problems).toEqual(['annotation portico.dev/allow="nope": expected true or false; the route refuses every request']);
    // An empty value can have its own consequence (ingress-nginx validates non-empty values only).
    const both = { empty: "ignored", invalid: "refused" };
    expect(createReader({ "portico.dev/allow": "" }, problems).read(ALLOW, Bool, both)).toEqual({ state: "invalid", empty: true });
    expect(createReader({ "portico.dev/allow": "nope" }, problems).read(ALLOW, Bool, both)).toEqual({ state: "invalid", empty: false });
    expect(problems.slice(1)).toEqual(['annotation portico.dev/allow="": expected true or false; ignored', 'annotation portico.dev/allow="nope": expected true or false; refused']);
    problems.length = 1;
    expect(createReader({}, problems).read(ALLOW, Bool, "x")).toEqual({ state: "unset" });
    r.problem("two annotations disagree");
    expect(problems).toHaveLength(2);
  });
});

describe("regex-rewrite (use-regex, rewrite-target, x-forwarded-prefix)", () => {
  const rr = (ann: Record<string, string>) => parseAnnotations(ann);

  test("good values: the policy, and a rewrite stage policy carrying the target and the prefix", () => {
    const a = rr({ [`${NGINX_PREFIX}use-regex`]: "True", [`${NGINX_PREFIX}rewrite-target`]: "/$2", [`${NGINX_PREFIX}x-forwarded-prefix`]: " /api $1 " });
    expect(a.problems).toEqual([]);
    expect(a.unsupported).toEqual([]);
    expect(a.policies.regexRewrite).toEqual({ useRegex: true, rewriteTarget: "/$2", xForwardedPrefix: "/api $1" });
    expect(a.options.stages).toEqual([{ stage: "rewrite", kind: "rewrite-target", params: { target: "/$2", xForwardedPrefix: "/api $1" } }]);
    // An absolute target is kept as it is (the proxy answers 302 with it).
    expect(rr({ "portico.dev/rewrite-target": "https://example.com/$1" }).policies.regexRewrite.rewriteTarget).toBe("https://example.com/$1");
  });

  test("use-regex alone sets no stage: the compiler reads it", () => {
    const a = rr({ "portico.dev/use-regex": "1" });
    expect(a.policies.regexRewrite).toEqual({ useRegex: true, rewriteTarget: "", xForwardedPrefix: null });
    expect(a.options).toBe(DEFAULT_ROUTE_OPTIONS);
  });

  test.each([
    [`${NGINX_PREFIX}use-regex`, "yes", "expected true or false; using the default"],
    [`${NGINX_PREFIX}use-regex`, "", "expected true or false; using the default"],
    [`${NGINX_PREFIX}rewrite-target`, "/a?b=1", "may contain only letters, digits and - . _ ~ / : $ (ingress-nginx ignores it, so no rewrite and no regex mode); no rewrite, and the host's regex mode does not count it"],
    [`${NGINX_PREFIX}rewrite-target`, "/{x}", "may contain only letters, digits and - . _ ~ / : $ (ingress-nginx ignores it, so no rewrite and no regex mode); no rewrite, and the host's regex mode does not count it"],
    [`${NGINX_PREFIX}rewrite-target`, "", "empty (ingress-nginx ignores it, so no rewrite and no regex mode); no rewrite, and the host's regex mode does not count it"],
    [`${NGINX_PREFIX}rewrite-target`, "/a\n/b", "a value may not contain a line break; no rewrite, and the host's regex mode does not count it"],
    [`${NGINX_PREFIX}x-forwarded-prefix`, "", "empty; the header is not sent"],
    [`${NGINX_PREFIX}x-forwarded-prefix`, "/a;b", "may contain only letters, digits, spaces and - . _ ~ / : $; the header is not sent"],
    [`${NGINX_PREFIX}x-forwarded-prefix`, "/a\r\nX-Evil: 1", "a value may not contain a line break; the header is not sent"],
  ])("%s=%j is refused: no rewrite, no regex mode, no header", (name, value, why) => {
    const a = rr({ [name]: value });
    expect(a.problems).toEqual([`annotation ${name}=${JSON.stringify(value)}: ${why}`]);
    expect(a.policies.regexRewrite).toEqual({ useRegex: false, rewriteTarget: "", xForwardedPrefix: null });
    expect(a.options.stages).toBeNull();
  });
});
