// The canary choice at unit level: ingress-nginx's order (balancer.lua
// route_to_alternative_balancer) and the weight's distribution with a seeded random source.
import { describe, expect, test } from "bun:test";
import type { CanaryRules } from "../../src/policy/params.ts";
import { CANARY, chooseCanary, type AffinityCheck } from "../../src/kinds/canary.ts";
import { cookieValue } from "../../src/kinds/cookies.ts";
import { buildKind } from "../../src/proxy/policies/run.ts";
import { compileHeaderPattern } from "../../src/regex/header-pattern.ts";
import { seeded } from "./seeded.ts";

const rules = (r: Partial<CanaryRules>): CanaryRules => ({ header: null, headerValue: null, headerPattern: null, cookie: null, weight: 0, weightTotal: 100, ...r });
const never = () => 0.999999; // pick = total: only weight >= total selects the canary
const share = (r: CanaryRules, n: number, seed: number) => {
  const random = seeded(seed);
  let hits = 0;
  for (let i = 0; i < n; i++) if (chooseCanary(r, null, new Headers(), random)) hits++;
  return hits / n;
};

describe("canary weight", () => {
  test("weight 20 of 100 over 5000 picks with a fixed seed: within 2 points of 20%", () => {
    const s = share(rules({ weight: 20 }), 5000, 42);
    expect(Math.abs(s - 0.2)).toBeLessThan(0.02);
  });
  test("weight 1 of 1000 (a total above 100 is used) over 20000 picks: within 0.1 point of 0.1%", () => {
    const s = share(rules({ weight: 1, weightTotal: 1000 }), 20000, 7);
    expect(Math.abs(s - 0.001)).toBeLessThan(0.001);
  });
  test("weight 0 never, weight = total always (the pick is an integer in 1..total)", () => {
    expect(share(rules({ weight: 0 }), 2000, 1)).toBe(0);
    expect(share(rules({ weight: 100 }), 2000, 1)).toBe(1);
    expect(chooseCanary(rules({ weight: 99 }), null, new Headers(), never)).toBe(false);
    expect(chooseCanary(rules({ weight: 1 }), null, new Headers(), () => 0)).toBe(true);
  });
});

describe("canary precedence", () => {
  const pattern = compileHeaderPattern("^(beta|rc)[0-9]+$");
  if (!pattern.ok) throw new Error(pattern.reason);
  const cases: [string, CanaryRules, Record<string, string>, boolean][] = [
    ["header always beats cookie never", rules({ header: "x-c", cookie: "c" }), { "x-c": "always", cookie: "c=never" }, true],
    ["header never beats cookie always and weight 100", rules({ header: "x-c", cookie: "c", weight: 100 }), { "x-c": "never", cookie: "c=always" }, false],
    ["another header value falls to the cookie", rules({ header: "x-c", cookie: "c" }), { "x-c": "yes", cookie: "c=always" }, true],
    ["a missing header falls to the cookie", rules({ header: "x-c", cookie: "c" }), { cookie: "c=always" }, true],
    ["cookie never beats weight 100", rules({ cookie: "c", weight: 100 }), { cookie: "c=never" }, false],
    ["another cookie value falls to the weight", rules({ cookie: "c", weight: 100 }), { cookie: "c=x" }, true],
    ["the first cookie of that name counts", rules({ cookie: "c" }), { cookie: "c=always; c=never" }, true],
    ["value: equal → canary", rules({ header: "x-v", headerValue: "v2" }), { "x-v": "v2" }, true],
    ["value: never is not a keyword then", rules({ header: "x-v", headerValue: "v2", weight: 100 }), { "x-v": "never" }, true],
  ];
  for (const [name, r, h, want] of cases) {
    test(name, () => expect(chooseCanary(r, null, new Headers(h), never)).toBe(want));
  }
  test("pattern: unanchored match → canary; no match falls through", () => {
    const r = rules({ header: "x-v", headerPattern: "^(beta|rc)[0-9]+$", cookie: "c" });
    expect(chooseCanary(r, pattern.re, new Headers({ "x-v": "rc1" }), never)).toBe(true);
    expect(chooseCanary(r, pattern.re, new Headers({ "x-v": "RC1" }), never)).toBe(false); // case-sensitive
    expect(chooseCanary(r, pattern.re, new Headers({ "x-v": "nope", cookie: "c=always" }), never)).toBe(true);
  });
  test("cookieValue: nginx's $cookie_<name>, name in any case", () => {
    expect(cookieValue("A=1; Canary=always", "canary", true)).toBe("always");
    expect(cookieValue("x=1", "canary", true)).toBeNull();
    expect(cookieValue(null, "canary", true)).toBeNull();
  });
  test("build refuses params that do not hold (a corrupt table fails closed)", () => {
    expect(() => buildKind(CANARY, { header: "bad header", headerValue: null, headerPattern: null, cookie: null, weight: 1, weightTotal: 100 })).toThrow();
    expect(() => buildKind(CANARY, { header: "x", headerValue: null, headerPattern: "(?=x)", cookie: null, weight: 1, weightTotal: 100 })).toThrow();
  });
});

describe("the affinity check before the rules (main with cookie affinity)", () => {
  // sticky.lua: the cookie is `<key>|<backend key>`; is_affinitized compares the backend key.
  const mainKey = "a".repeat(32);
  const canaryKey = "b".repeat(32);
  const sticky: AffinityCheck = { cookie: "SID", sticky: true, mainKey, canaryKey };
  const legacy: AffinityCheck = { ...sticky, sticky: false };
  const w50 = rules({ header: "x-c", cookie: "c", weight: 50 });
  /** Share of `n` decisions (seeded) that go to the canary for one request's headers. */
  const shareWith = (check: AffinityCheck | null, h: Record<string, string>, n: number, seed: number) => {
    const random = seeded(seed);
    let hits = 0;
    for (let i = 0; i < n; i++) if (chooseCanary(w50, null, new Headers(h), random, check)) hits++;
    return hits / n;
  };

  test("weight 50, seed 11, 4000 decisions each: a canary cookie always canary, a main cookie always main, none about half", () => {
    expect(shareWith(sticky, { cookie: `SID=0123456789abcdef|${canaryKey}` }, 4000, 11)).toBe(1);
    expect(shareWith(sticky, { cookie: `x=1; SID=0123456789abcdef|${mainKey}` }, 4000, 11)).toBe(0);
    const fresh = shareWith(sticky, {}, 4000, 11);
    expect(Math.abs(fresh - 0.5)).toBeLessThan(0.03);
    // A cookie of another backend, without a backend part, or under another name: split as new.
    for (const cookie of [`SID=0123456789abcdef|${"c".repeat(32)}`, "SID=0123456789abcdef", `sid=0|${canaryKey}`]) {
      expect(Math.abs(shareWith(sticky, { cookie }, 4000, 11) - 0.5)).toBeLessThan(0.03);
    }
  });

  test("legacy, same seed: a canary cookie is split like a new client, a main cookie still keeps main", () => {
    const s = shareWith(legacy, { cookie: `SID=0123456789abcdef|${canaryKey}` }, 4000, 11);
    expect(s).toBe(shareWith(sticky, {}, 4000, 11)); // the same draws: the cookie changed nothing
    expect(Math.abs(s - 0.5)).toBeLessThan(0.03);
    expect(shareWith(legacy, { cookie: `SID=0|${mainKey}` }, 4000, 11)).toBe(0);
  });

  test("affinity beats header and cookie rules (checked first in route_to_alternative_balancer)", () => {
    const cases: [AffinityCheck, Record<string, string>, boolean][] = [
      [sticky, { "x-c": "never", cookie: `SID=k|${canaryKey}` }, true],
      [sticky, { "x-c": "always", cookie: `c=always; SID=k|${mainKey}` }, false],
      [sticky, { cookie: `c=never; SID=k|${canaryKey}` }, true],
      [legacy, { "x-c": "never", cookie: `SID=k|${canaryKey}` }, false], // legacy: the rules decide
      [legacy, { "x-c": "always", cookie: `SID=k|${mainKey}` }, false],
    ];
    for (const [check, h, want] of cases) expect(chooseCanary(w50, null, new Headers(h), never, check)).toBe(want);
  });

  test("the affinity cookie name is exact (lua-resty-cookie), unlike canary-by-cookie's $cookie_", () => {
    expect(chooseCanary(w50, null, new Headers({ cookie: `sid=k|${canaryKey}` }), never, sticky)).toBe(false);
    expect(chooseCanary(w50, null, new Headers({ cookie: `SID=k|${canaryKey}` }), never, sticky)).toBe(true);
  });

  test("the contract checks the affinity params before the kind builds", () => {
    const base = { header: null, headerValue: null, headerPattern: null, cookie: null, weight: 1, weightTotal: 100 };
    expect(() => buildKind(CANARY, { ...base, affinity: { cookie: "SID", sticky: true } })).not.toThrow();
    expect(() => buildKind(CANARY, { ...base, affinity: { cookie: "S;D", sticky: true } })).toThrow();
    expect(() => buildKind(CANARY, { ...base, affinity: { cookie: "SID", sticky: "yes" } })).toThrow();
  });
});
