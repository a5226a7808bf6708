// auth-* values as ingress-nginx's authreq parser reads them (internal/ingress/annotations/
// authreq/main.go and parser/validators.go at dbb11b92), with Portico's fail-closed outcomes;
// and the stage policy a route carries, through JSON as the workers receive it.
import { describe, expect, test } from "bun:test";
import { createPolicyRunner } from "../proxy/policies/run.ts";
import { POLICY_KINDS } from "../kinds/registry.ts";
import { DEFAULT_CACHE_DURATION, parseCacheDuration } from "./external-auth.ts";
import { parseTemplate } from "../policy/template.ts";
import { parseAnnotations } from "../compile/annotations.ts";
import { NGINX_PREFIX } from "./spec.ts";
import * as K from "../kinds/index.ts";

const parse = (a: Record<string, string>) => parseAnnotations(Object.fromEntries(Object.entries(a).map(([k, val]) => [NGINX_PREFIX + k, val])));

describe("external-auth annotations", () => {
  test("auth-url alone: one authentication stage with ingress-nginx's defaults", () => {
    const a = parse({ "auth-url": "http://auth.ns.svc.cluster.local:8080/check?x=1" });
    expect(a.problems).toEqual([]);
    expect(a.unsupported).toEqual([]);
    expect(a.options.stages).toEqual([
      {
        stage: "authentication",
        kind: K.EXTERNAL_AUTH.id,
        params: {
          url: ["http://auth.ns.svc.cluster.local:8080/check?x=1"], method: null, signin: null, redirectParam: "rd",
          responseHeaders: [], requestRedirect: null, alwaysSetCookie: false, cacheKey: null,
          cacheRules: [{ statuses: [200, 202, 401], ms: 300_000 }], proxySetHeaders: [],
        },
      },
    ]);
    // The table crosses IPC as JSON: the params survive it unchanged.
    expect(JSON.parse(JSON.stringify(a.options.stages))).toEqual(a.options.stages as never);
  });

  test("enable-global-auth: false opts out of --global-auth-url; anything unreadable counts as true (authreqglobal/main.go), never a stage of its own", () => {
    const global = (value: string) => {
      const a = parse({ "enable-global-auth": value });
      expect(a.options.stages).toBeNull();
      return [a.policies.externalAuth.global, a.problems.length];
    };
    expect(global("false")).toEqual([false, 0]);
    expect(global("False")).toEqual([false, 0]);
    expect(global("true")).toEqual([true, 0]);
    expect(global("nope")).toEqual([true, 1]);
    expect(global("")).toEqual([true, 1]);
    expect(global("false\n")).toEqual([true, 1]);
    expect(parse({}).policies.externalAuth.global).toBe(true);
    // With auth-url the Ingress's own auth service decides; the opt-out is kept but changes nothing.
    const own = parse({ "auth-url": "http://auth.example/check", "enable-global-auth": "false" });
    expect(own.policies.externalAuth).toMatchObject({ enabled: true, global: false });
    expect(own.options.stages?.map((p) => p.kind)).toEqual([K.EXTERNAL_AUTH.id]);
  });

  test("without auth-url nothing is read and no stage exists", () => {
    const a = parse({ "auth-method": "get", "auth-cache-duration": "soon" });
    expect(a.options.stages).toBeNull();
    expect(a.problems).toEqual([]);
  });

  test("oauth2-proxy's documented values parse, with $host and $escaped_request_uri as variables", () => {
    const a = parse({ "auth-url": "https://$host/oauth2/auth", "auth-signin": "https://$host/oauth2/start?rd=$escaped_request_uri" });
    expect(a.problems).toEqual([]);
    expect(a.policies.externalAuth.url).toEqual(["https://", { v: "host" }, "/oauth2/auth"]);
    expect(a.policies.externalAuth.signin).toEqual(["https://", { v: "host" }, "/oauth2/start?rd=", { v: "escaped_request_uri" }]);
  });

  test("values that deny the route: each is a diagnostic and a denied policy, never a route without authentication", () => {
    for (const [k, val] of [
      ["auth-url", ""], ["auth-url", "a\nb"], ["auth-url", "auth.svc/check"], ["auth-url", "http://a..b/"], ["auth-url", "gopher://a/"],
      ["auth-url", "http://a/#x"], ["auth-url", "http://$http_x_target/"], ["auth-url", "http://a/$"],
      ["auth-method", "FETCH"], ["auth-response-headers", "X-A;"], ["auth-request-redirect", "http://a/%0d"],
      ["auth-always-set-cookie", "on"], ["auth-cache-duration", "5x"], ["auth-cache-duration", "200"], ["auth-cache-duration", "999 5m"],
      ["auth-cache-duration", "200 5m, 401"], ["auth-proxy-set-headers", "ns/cm@1"], ["auth-proxy-set-headers", "ns/a,b"],
    ] as const) {
      const a = parse({ "auth-url": "http://auth.svc/", [k]: val });
      expect(a.problems.length).toBeGreaterThan(0);
      expect(a.policies.externalAuth.enabled).toBe(true);
      expect(a.policies.externalAuth.denied).toContain(`${NGINX_PREFIX}${k}`);
      // The shared `denied` stage (ingress-nginx's "location denied"), never the auth kind.
      expect(a.options.stages).toEqual([{ stage: "denied", kind: "refuse", params: { status: 503, reason: `external authentication: ${a.policies.externalAuth.denied!}` } }]);
    }
  });

  test("auth-proxy-set-headers: the ConfigMap is the compiler's to read; until then the stage has no headers, which the runner refuses", async () => {
    // authreq.Parse reads the ConfigMap itself; here compile/auth-headers.ts does, with the
    // Ingress's namespace and the snapshot's ConfigMaps. The family keeps the name as written.
    const a = parse({ "auth-url": "http://auth.svc/", "auth-proxy-set-headers": " team/auth-headers " });
    expect(a.problems).toEqual([]);
    expect(a.policies.externalAuth.headersConfigMap).toBe("team/auth-headers");
    expect(a.policies.externalAuth.proxySetHeaders).toBeNull();
    expect(a.options.stages?.map((p) => p.kind)).toEqual([K.EXTERNAL_AUTH.id]);
    const run = createPolicyRunner(POLICY_KINDS);
    const flow = { route: { authExempt: false } } as never;
    // Built without its headers, the policy refuses (500), never asks without them.
    const err = await run(a.options.stages!, flow).then(() => null, (e: unknown) => e as { code: string; detail: string });
    expect(err?.code).toBe("Internal");
    expect(err?.detail).toContain("auth-proxy-set-headers is not resolved");
  });

  test("values ingress-nginx ignores are ignored here too (with a diagnostic), which stays closed", () => {
    const a = parse({ "auth-url": "http://auth.svc/", "auth-signin": "http://a/<x>", "auth-signin-redirect-param": "r d!", "auth-cache-key": "$request_body" });
    expect(a.policies.externalAuth.denied).toBeNull();
    expect(a.policies.externalAuth.signin).toBeNull();
    expect(a.policies.externalAuth.redirectParam).toBe("rd");
    expect(a.policies.externalAuth.cacheKey).toBeNull();
    expect(a.problems).toHaveLength(3);
  });

  test("auth-cache-duration: nginx's proxy_cache_valid forms", () => {
    expect(parseCacheDuration(DEFAULT_CACHE_DURATION)).toEqual([{ statuses: [200, 202, 401], ms: 300_000 }]);
    expect(parseCacheDuration("200 202 10m, 401 5m")).toEqual([{ statuses: [200, 202], ms: 600_000 }, { statuses: [401], ms: 300_000 }]);
    expect(parseCacheDuration("1h")).toEqual([{ statuses: [200, 301, 302], ms: 3_600_000 }]);
    expect(parseCacheDuration("any 30s")).toEqual([{ statuses: null, ms: 30_000 }]);
    for (const bad of ["", "200", "200 1h 30m", "200 5", "099 5m", "600 5m", "abc 5m", "5m 200"]) expect(parseCacheDuration(bad)).toBeNull();
  });

  test("templates: $name and ${name}; a bare $ and unlisted names are refused", () => {
    const all = () => true;
    expect(parseTemplate("a$http_x-${cookie_s}b", all)).toEqual({ ok: true, parts: ["a", { v: "http_x" }, "-", { v: "cookie_s" }, "b"] });
    expect(parseTemplate("a$", all).ok).toBe(false);
    expect(parseTemplate("a${x", all).ok).toBe(false);
    expect(parseTemplate("$x", (n) => n === "y").ok).toBe(false);
  });

  test("a denied policy is a 503 for the runner, not a pass", async () => {
    const a = parse({ "auth-url": "http://auth.svc/", "auth-cache-duration": "soon" });
    const run = createPolicyRunner(POLICY_KINDS);
    const answer = await run(a.options.stages!, { responseHeaders: {}, config: { ingressNginxCompat: false }, req: new Request("http://a.test/") } as never);
    expect(answer?.status).toBe(503);
  });
});
