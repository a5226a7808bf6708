// The affinity, balancing and limits families: values as ingress-nginx's parsers read them
// (internal/ingress/annotations/{sessionaffinity,loadbalancing,upstreamhashby,ratelimit}),
// the precedence among them (rootfs/etc/nginx/lua/balancer.lua get_implementation), and the
// stage policies they put on the route.
import { describe, expect, test } from "bun:test";
import { DEFAULT_ROUTE_OPTIONS } from "../table/routes.ts";
import { parseHashBy } from "./balancing.ts";
import { parseAnnotations } from "../compile/annotations.ts";
import { NGINX_PREFIX } from "./spec.ts";

const nginx = (a: Record<string, string>) => parseAnnotations(Object.fromEntries(Object.entries(a).map(([k, v]) => [`${NGINX_PREFIX}${k}`, v])));

describe("affinity", () => {
  test("affinity: cookie alone: a backend stage with ingress-nginx's defaults", () => {
    const a = nginx({ affinity: "cookie" });
    expect(a.problems).toEqual([]);
    expect(a.options.stages).toEqual([
      {
        stage: "backend", kind: "affinity",
        params: {
          mode: "balanced", name: "INGRESSCOOKIE", path: null, domain: null, maxAge: null, expires: null,
          sameSite: null, conditionalSameSiteNone: false, secure: false, changeOnFailure: false,
        },
      },
    ]);
  });

  test("every cookie setting", () => {
    const a = nginx({
      affinity: " cookie ", "affinity-mode": "persistent", "session-cookie-name": "SERVERID", "session-cookie-path": "/foo/bar",
      "session-cookie-domain": "foo.bar", "session-cookie-max-age": "259200", "session-cookie-expires": "172800",
      "session-cookie-samesite": "none", "session-cookie-conditional-samesite-none": "true", "session-cookie-secure": "1",
      "session-cookie-change-on-failure": "t",
    });
    expect(a.problems).toEqual([]);
    expect(a.options.stages![0]!.params).toEqual({
      mode: "persistent", name: "SERVERID", path: "/foo/bar", domain: "foo.bar", maxAge: 259200, expires: 172800,
      sameSite: "None", conditionalSameSiteNone: true, secure: true, changeOnFailure: true,
    });
  });

  test("anything but `cookie` is no affinity (ingress-nginx's option check is case-sensitive), with a diagnostic", () => {
    for (const v of ["Cookie", "COOKIE", "ip", ""]) {
      const a = nginx({ affinity: v, "session-cookie-name": "X" });
      expect(a.options.stages).toBeNull();
      expect(a.problems).toEqual([`annotation ${NGINX_PREFIX}affinity=${JSON.stringify(v)}: expected cookie; no affinity`]);
    }
    // Cookie settings without affinity do nothing, as in ingress-nginx.
    expect(nginx({ "session-cookie-name": "X" }).options).toBe(DEFAULT_ROUTE_OPTIONS);
  });

  test.each([
    ["session-cookie-name", "a/b", "name", "INGRESSCOOKIE"],
    ["session-cookie-name", "a;b", "name", "INGRESSCOOKIE"],
    ["session-cookie-path", "/a;b", "path", null],
    ["session-cookie-path", "/a b", "path", null],
    ["session-cookie-domain", "x.test; Secure", "domain", null],
    ["session-cookie-max-age", "0abc", "maxAge", null],
    ["session-cookie-max-age", "1.5", "maxAge", null],
    ["session-cookie-expires", "abc5", "expires", null],
    ["session-cookie-samesite", "Sometimes", "sameSite", null],
    ["affinity-mode", "Persistent", "mode", "balanced"],
    ["session-cookie-secure", "yes", "secure", false],
  ])("bad %s=%p → a diagnostic and the default", (name, value, key, fallback) => {
    const a = nginx({ affinity: "cookie", [name]: value });
    expect(a.problems).toHaveLength(1);
    expect(a.problems[0]).toStartWith(`annotation ${NGINX_PREFIX}${name}=${JSON.stringify(value)}: `);
    expect(a.options.stages![0]!.params[key]).toBe(fallback);
  });

  test("Max-Age and Expires keep 0 and negative values, as ingress-nginx passes them on", () => {
    const p = nginx({ affinity: "cookie", "session-cookie-max-age": "0", "session-cookie-expires": "-60" }).options.stages![0]!.params;
    expect([p.maxAge, p.expires]).toEqual([0, -60]);
  });

  test("a line break is refused", () => {
    const a = nginx({ affinity: "cookie", "session-cookie-name": "A\r\nSet-Cookie: x=y" });
    expect(a.problems[0]).toContain("a value may not contain a line break");
    expect(a.options.stages![0]!.params.name).toBe("INGRESSCOOKIE");
  });

  test("affinity-canary-behavior: sticky by default, legacy as written, read without `affinity` (a canary Ingress sets only it)", () => {
    expect(nginx({}).policies.affinity.canaryBehavior).toBe("sticky");
    const legacy = nginx({ canary: "true", "affinity-canary-behavior": " legacy " });
    expect([legacy.problems, legacy.unsupported, legacy.policies.affinity]).toEqual([[], [], { cookie: null, canaryBehavior: "legacy" }]);
    expect(nginx({ "affinity-canary-behavior": "sticky" }).policies.affinity.canaryBehavior).toBe("sticky");
    // It puts nothing on the route by itself: the compiler reads it from a canary Ingress.
    expect(legacy.options.stages ?? null).toBeNull();
    expect(nginx({ affinity: "cookie", "affinity-canary-behavior": "legacy" }).policies.affinity.canaryBehavior).toBe("legacy");
  });

  test("affinity-canary-behavior: another value (the options are case-sensitive) is a diagnostic and sticky", () => {
    for (const v of ["Legacy", "off"]) {
      const a = nginx({ "affinity-canary-behavior": v });
      expect(a.problems).toEqual([`annotation ${NGINX_PREFIX}affinity-canary-behavior=${JSON.stringify(v)}: expected sticky or legacy; using the default`]);
      expect(a.policies.affinity.canaryBehavior).toBe("sticky");
    }
  });
});

describe("upstream-hash-by", () => {
  test.each([
    ["$request_uri", [{ var: "request_uri" }]],
    ["${request_uri}-text-value", [{ var: "request_uri" }, { text: "-text-value" }]],
    ["$request_uri$host_x".replace("$host_x", "$remote_addr"), [{ var: "request_uri" }, { var: "remote_addr" }]],
    ["$binary_remote_addr", [{ var: "remote_addr" }]],
    ["$http_x_user_id", [{ header: "x-user-id" }]],
    ["$HTTP_X_Tenant", [{ header: "x-tenant" }]],
    ["$cookie_SESSION", [{ cookie: "SESSION" }]],
    ["v1-${cookie_user}_${http_x_team}", [{ text: "v1-" }, { cookie: "user" }, { text: "_" }, { header: "x-team" }]],
    ["constant", [{ text: "constant" }]],
  ])("%p reads as parts", (text, parts) => {
    expect(parseHashBy(text)).toEqual(parts as never);
  });

  test.each([
    ["$host", "$host is not supported"],
    ["$request_uri$args", "$args is not supported"],
    ["$http_", "$http_ is not supported"],
    ["${request_uri", "a `$` must start a variable name"],
    ["abc$", "a `$` must start a variable name"],
    ["$request_uri.x", "expected nginx variables and text"],
    ["$request_uri x", "expected nginx variables and text"],
    ["$uri;", "expected nginx variables and text"],
  ])("%p is refused: %s", (text, why) => {
    expect(parseHashBy(text) as string).toStartWith(why);
    const a = nginx({ "upstream-hash-by": text });
    expect(a.problems).toEqual([expect.stringContaining("; balancing round robin")]);
    expect(a.options.stages).toBeNull();
  });

  test("the stage carries the parts; -subset takes -subset-size (0 means 3)", () => {
    expect(nginx({ "upstream-hash-by": "$request_uri" }).options.stages).toEqual([
      { stage: "backend", kind: "hash", params: { parts: [{ var: "request_uri" }], subsetSize: 0 } },
    ]);
    const sub = (extra: Record<string, string>) => nginx({ "upstream-hash-by": "$remote_addr", "upstream-hash-by-subset": "true", ...extra });
    expect(sub({}).options.stages![0]!.params.subsetSize).toBe(3);
    expect(sub({ "upstream-hash-by-subset-size": "0" }).options.stages![0]!.params.subsetSize).toBe(3);
    expect(sub({ "upstream-hash-by-subset-size": "5" }).options.stages![0]!.params.subsetSize).toBe(5);
    const bad = sub({ "upstream-hash-by-subset-size": "-1" });
    expect(bad.problems).toHaveLength(1);
    expect(bad.options.stages![0]!.params.subsetSize).toBe(3);
    // -subset without -hash-by does nothing (ingress-nginx: chashsubset needs upstream-hash-by).
    expect(nginx({ "upstream-hash-by-subset": "true" }).options).toBe(DEFAULT_ROUTE_OPTIONS);
  });
});

describe("load-balance and precedence", () => {
  test("ewma is a backend stage; round_robin is the default balancer, no stage", () => {
    expect(nginx({ "load-balance": "ewma" }).options.stages).toEqual([{ stage: "backend", kind: "ewma", params: {} }]);
    const rr = nginx({ "load-balance": "round_robin" });
    expect(rr.problems).toEqual([]);
    expect(rr.options).toBe(DEFAULT_ROUTE_OPTIONS);
  });

  test.each([
    ["EWMA", "expected round_robin or ewma"],
    ["least_conn", "expected round_robin or ewma"],
    ["chash", "not supported: use upstream-hash-by or affinity: cookie"],
    ["sticky_persistent", "not supported: use upstream-hash-by or affinity: cookie"],
  ])("%p → a diagnostic and round robin", (value, why) => {
    const a = nginx({ "load-balance": value });
    expect(a.problems).toEqual([`annotation ${NGINX_PREFIX}load-balance=${JSON.stringify(value)}: ${why}; balancing round robin`]);
    expect(a.options.stages).toBeNull();
  });

  test("affinity beats upstream-hash-by, which beats load-balance (one backend-choice stage)", () => {
    const all = { affinity: "cookie", "upstream-hash-by": "$request_uri", "load-balance": "ewma" };
    expect(nginx(all).options.stages!.map((s) => s.kind)).toEqual(["affinity"]);
    expect(nginx({ ...all, affinity: "none-of-these" }).options.stages!.map((s) => s.kind)).toEqual(["hash"]);
    expect(nginx({ "load-balance": "ewma", "upstream-hash-by": "$request_uri" }).options.stages!.map((s) => s.kind)).toEqual(["hash"]);
  });
});

describe("limits", () => {
  const params = (extra: Record<string, unknown>) => ({ rps: 0, rpm: 0, connections: 0, burstMultiplier: 5, allow: [], denied: false, ...extra });

  test("limit-rps, -rpm, -connections, -burst-multiplier, -allowlist into one limits stage, after the backend choice (nginx's pre-access phase)", () => {
    const a = nginx({
      "limit-rps": "10", "limit-rpm": "300", "limit-connections": "4", "limit-burst-multiplier": "2",
      "limit-allowlist": "10.0.0.0/8, 192.168.1.1", affinity: "cookie",
    });
    expect(a.problems).toEqual([]);
    expect(a.options.stages!.map((s) => [s.stage, s.kind])).toEqual([["backend", "affinity"], ["limits", "limits"]]);
    expect(a.options.stages![1]!.params).toEqual(params({ rps: 10, rpm: 300, connections: 4, burstMultiplier: 2, allow: ["10.0.0.0/8", "192.168.1.1/32"] }));
  });

  test("0 and negative limits are off, as ingress-nginx writes a limit only above 0; an allow list alone does nothing", () => {
    for (const v of ["0", "-3", "+0"]) expect(nginx({ "limit-rps": v }).options).toBe(DEFAULT_ROUTE_OPTIONS);
    expect(nginx({ "limit-allowlist": "10.0.0.0/8" }).options).toBe(DEFAULT_ROUTE_OPTIONS);
    expect(nginx({ "limit-rpm": "+7" }).options.stages![0]!.params.rpm).toBe(7);
  });

  test("limit-whitelist is read when limit-allowlist is empty or absent", () => {
    const w = nginx({ "limit-rps": "1", "limit-whitelist": "10.1.0.0/16" });
    expect(w.options.stages![0]!.params.allow).toEqual(["10.1.0.0/16"]);
    const both = nginx({ "limit-rps": "1", "limit-allowlist": "10.2.0.0/16", "limit-whitelist": "10.1.0.0/16" });
    expect(both.options.stages![0]!.params.allow).toEqual(["10.2.0.0/16"]);
  });

  test.each([
    ["limit-rps", "10r/s"],
    ["limit-rpm", "1.5"],
    ["limit-connections", " "],
    ["limit-allowlist", "10.0.0.0/33"],
    ["limit-allowlist", "10.0.0.0/8,,10.1.0.0/16"],
    ["limit-allowlist", "fe80::1%eth0"],
  ])("bad %s=%p: the Ingress refuses every request (ingress-nginx refuses the Ingress), never runs unlimited", (name, value) => {
    const a = nginx({ "limit-rps": "5", [name]: value });
    expect(a.problems).toHaveLength(1);
    expect(a.problems[0]).toEndWith("; every route of the Ingress answers 503");
    expect(a.options.stages).toEqual([{ stage: "limits", kind: "limits", params: expect.objectContaining({ denied: true }) }]);
  });

  test("a bad burst multiplier falls back to 5, as ingress-nginx's parser does", () => {
    for (const v of ["x", "-1", "2.5"]) {
      const a = nginx({ "limit-rps": "5", "limit-burst-multiplier": v });
      expect(a.problems).toEqual([`annotation ${NGINX_PREFIX}limit-burst-multiplier=${JSON.stringify(v)}: ${v === "-1" ? "expected 0 or more" : "expected an integer"}; using the default`]);
      expect(a.options.stages![0]!.params).toEqual(params({ rps: 5 }));
    }
  });

  test("implemented names are no longer unsupported, limit-rate among them", () => {
    const a = nginx({ "limit-rps": "1", "limit-rate": "100", affinity: "cookie", "load-balance": "ewma", "upstream-hash-by": "$request_uri" });
    expect(a.unsupported).toEqual([]);
  });
});
