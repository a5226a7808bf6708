import { describe, expect, test } from "bun:test";
import { parseHeaderList } from "./headers.ts";
import { HEADER_LIMITS } from "../policy/headers.ts";
import { parseAnnotations } from "../compile/annotations.ts";
import * as K from "../kinds/index.ts";

const REQ = "portico.dev/request-headers";
const RES = "portico.dev/response-headers";

describe("header lists", () => {
  test("one entry per line; whitespace around a value is not part of it; blank lines skipped", () => {
    expect(parseHeaderList("X-Frame-Options: DENY\n\n  X-Team:\tpayments  \n", "response")).toEqual({
      ok: true,
      entries: [["X-Frame-Options", "DENY"], ["X-Team", "payments"]],
    });
  });

  test("on one line a comma starts an entry only when `Name:` follows, so list values stay whole", () => {
    expect(parseHeaderList("Cache-Control: no-cache, no-store, X-A: 1,X-B:2", "response")).toEqual({
      ok: true,
      entries: [["Cache-Control", "no-cache, no-store"], ["X-A", "1"], ["X-B", "2"]],
    });
    // With line breaks, commas always belong to the value.
    expect(parseHeaderList("Link: <a>, x: y\nX-C: 3", "response")).toEqual({ ok: true, entries: [["Link", "<a>, x: y"], ["X-C", "3"]] });
  });

  test.each([
    ["X Bad: 1", "not a header name"],
    ["X-A : 1", "not a header name"],
    [": 1", 'is not "Name: value"'],
    ["novalue", 'is not "Name: value"'],
    ["X-A:", "has no value"],
    ["X-A: caf\u00e9", "visible ASCII"],
    ["X-A: a\u0001b", "visible ASCII"],
    ["X-A: a\u0000b", "CR or NUL"],
    ["X-A: a\rb", "CR or NUL"],
    ["Connection: close", "hop-by-hop"],
    ["Transfer-Encoding: chunked", "hop-by-hop"],
    ["Content-Length: 5", "framing"],
    ["Host: evil.test", "Host is the client's"],
    ["X-Request-ID: 1", "request id"],
    ["X-Forwarded-For: 1.2.3.4", "set by Portico"],
    ["x-real-ip: 1.2.3.4", "set by Portico"],
    ["", "no `Name: value` entry"],
  ])("request %p is refused (%s)", (text, why) => {
    const r = parseHeaderList(text, "request");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.why).toContain(why);
  });

  test("Set-Cookie may be set once on a response (its values cannot be joined, RFC 9110 §5.3)", () => {
    expect(parseHeaderList("Set-Cookie: a=1\nX-A: 1", "response").ok).toBe(true);
    expect(parseHeaderList("Set-Cookie: a=1\nset-cookie: b=2", "response")).toEqual({ ok: false, why: "Set-Cookie may appear once" });
  });

  test("the X-Forwarded-* fields may be set on a response, hop-by-hop fields never", () => {
    expect(parseHeaderList("X-Forwarded-For: 1", "response").ok).toBe(true);
    expect(parseHeaderList("Upgrade: h2c", "response").ok).toBe(false);
  });

  test("bounds: entries, value length, whole text", () => {
    const many = Array.from({ length: HEADER_LIMITS.entries + 1 }, (_, i) => `X-${i}: v`).join("\n");
    expect(parseHeaderList(many, "response")).toMatchObject({ ok: false, why: `at most ${HEADER_LIMITS.entries} headers` });
    expect(parseHeaderList(`X-A: ${"v".repeat(HEADER_LIMITS.value + 1)}`, "response").ok).toBe(false);
    expect(parseHeaderList(`X-A: v\n${" ".repeat(HEADER_LIMITS.text)}`, "response").ok).toBe(false);
  });
});

describe("portico.dev/request-headers and response-headers", () => {
  test("become one forwarding-stage policy, frozen, JSON-safe", () => {
    const a = parseAnnotations({ [REQ]: "X-Env: prod\nX-Env: canary", [RES]: "X-Frame-Options: DENY" });
    expect(a.problems).toEqual([]);
    expect(a.policies.headers).toMatchObject({ request: [["X-Env", "prod"], ["X-Env", "canary"]], response: [["X-Frame-Options", "DENY"]], deny: [] });
    expect(a.options.stages).toEqual([
      { stage: "forwarding", kind: K.HEADERS.id, params: { request: [["X-Env", "prod"], ["X-Env", "canary"]], response: [["X-Frame-Options", "DENY"]] } },
    ]);
    expect(Object.isFrozen(a.options.stages)).toBe(true);
    expect(JSON.parse(JSON.stringify(a.options.stages))).toEqual(a.options.stages as never);
  });

  test("a line break is allowed in these lists only; ingress-nginx's names still refuse it", () => {
    expect(parseAnnotations({ [RES]: "X-A: 1\nX-B: 2" }).problems).toEqual([]);
    expect(parseAnnotations({ "portico.dev/max-body-size": "1m\n" }).problems[0]).toContain("line break");
    expect(parseAnnotations({ [RES]: "X-A: 1\r\nX-B: 2" }).problems[0]).toContain("line break");
  });

  test("an invalid list is one InvalidAnnotation and no header of it is set; the other list stands", () => {
    const a = parseAnnotations({ [REQ]: "X-Ok: 1\nHost: other.test", [RES]: "X-Frame-Options: DENY" });
    expect(a.problems).toEqual([`annotation ${REQ}="X-Ok: 1\\nHost: other.test": Host may not be set: Host is the client's (RFC 9110 §7.2); no header of this annotation is set`]);
    expect(a.policies.headers).toMatchObject({ request: [], response: [["X-Frame-Options", "DENY"]] });
    const none = parseAnnotations({ [REQ]: "Host: x" });
    expect(none.options.stages).toBeNull();
  });
});

describe("portico.dev/deny-request-headers", () => {
  const DENY = "portico.dev/deny-request-headers";
  test("rules become one denied-stage policy, before every access check", () => {
    const a = parseAnnotations({ [DENY]: "User-Agent ~* (bot|crawler)\n401 X-Api-Key !~ ^s3cret$" });
    expect(a.problems).toEqual([]);
    expect(a.options.stages).toEqual([
      { stage: "denied", kind: "header-deny", params: { rules: [[403, "User-Agent", "~*", "(bot|crawler)"], [401, "X-Api-Key", "!~", "^s3cret$"]] } },
    ]);
  });

  test("a list that cannot be applied refuses every request (503), never serves unchecked", () => {
    for (const bad of ["User-Agent bot", "User-Agent =~ bot", "User Agent ~ bot", "User-Agent ~ (a)\\1", "User-Agent ~ (?=x)", "444 User-Agent ~ bot", "302 User-Agent ~ bot", ""]) {
      const a = parseAnnotations({ [DENY]: bad, "portico.dev/response-headers": "X-A: 1" });
      expect(a.options.stages?.[0], bad).toMatchObject({ stage: "denied", kind: "refuse", params: { status: 503, reason: "deny-request-headers is invalid" } });
    }
  });
});
