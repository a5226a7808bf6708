// The `canary` policy of the `backend` stage: main's backend or the canary's, per request, in
// ingress-nginx's order (rootfs/etc/nginx/lua/balancer.lua, route_to_alternative_balancer):
//   0. affinity, when main has cookie affinity: a cookie naming main's backend stays on main;
//      one naming the canary's stays on the canary when the canary has affinity too
//      (`affinity-canary-behavior: sticky`, the default). This beats even `always`/`never`;
//   1. the header, when present: with `canary-by-header-value`, equal → canary; with
//      `-pattern`, a match → canary; with neither, `always` → canary and `never` → main;
//      anything else goes on;
//   2. the cookie: `always` → canary, `never` → main; anything else goes on;
//   3. the weight: a uniform pick in 1..total at most `weight` → canary.
// The compiler puts this step first in the stage; the affinity step after it picks the pod of
// whichever backend this one chose. docs/design.md, "Canary Ingresses" and "Balancing and
// affinity" (Canaries and affinity).
import * as v from "valibot";
import { type CanaryRules } from "../policy/params.ts";
import { compileHeaderPattern, type HeaderPattern } from "../regex/header-pattern.ts";
import { backendKey, cookieBackendKey } from "./affinity.ts";
import { cookieValue } from "./cookies.ts";
import type { EndpointChoice } from "./types.ts";
import { ProxyError } from "../http/errors.ts";
import { defineKind } from "./define.ts";
import { CookieName, NullableStr } from "./schema.ts";

/** A number in [0, 1), as Math.random gives; tests pass a seeded one. */
type RandomSource = () => number;


/** The affinity check's inputs: main's cookie name and stickiness, and the two backends' cookie keys. */
export interface AffinityCheck {
  readonly cookie: string;
  readonly sticky: boolean;
  readonly mainKey: string;
  readonly canaryKey: string;
}

/**
 * Whether this request goes to the canary. `pattern` is rules.headerPattern compiled;
 * `affinity` is null when main has no cookie affinity.
 */
export function chooseCanary(rules: CanaryRules, pattern: HeaderPattern | null, headers: Headers, random: RandomSource, affinity: AffinityCheck | null = null): boolean {
  if (affinity !== null) {
    // sticky.lua is_affinitized: the cookie's backend part equals the balancer's backend key.
    // Main's balancer is asked first, so it wins if both keys were ever equal.
    const key = cookieBackendKey({ headers }, affinity.cookie);
    if (key === affinity.mainKey) return false;
    // In `legacy` the canary's balancer is not a sticky one, and is_affinitized is false.
    if (affinity.sticky && key === affinity.canaryKey) return true;
  }
  if (rules.header !== null) {
    const h = headers.get(rules.header);
    if (h !== null) {
      if (rules.headerValue !== null) {
        if (h === rules.headerValue) return true;
      } else if (pattern !== null) {
        if (pattern.test(h)) return true;
      } else if (h === "always") return true;
      else if (h === "never") return false;
    }
  }
  if (rules.cookie !== null) {
    const c = cookieValue(headers.get("cookie"), rules.cookie, true);
    if (c === "always") return true;
    if (c === "never") return false;
  }
  // math.random(total) <= weight: an integer in 1..total.
  return Math.floor(random() * rules.weightTotal) + 1 <= rules.weight;
}

/** The balancer's own round robin, as an EndpointChoice: a backend without affinity. */
const ROUND_ROBIN: EndpointChoice = {
  pick: (backend, balancer, exclude) => balancer.pick(backend, exclude),
  answered() {},
  setCookie: () => null,
};

const HeaderOrCookie = v.nullable(v.pipe(v.string(), v.regex(/^[a-z0-9._~-]+$/i)));

/** A canary Ingress's rules (policy/params.ts CanaryRules), and main's affinity cookie when it has one. */
export const CANARY = defineKind(
  "canary",
  "backend",
  v.object({
    header: HeaderOrCookie,
    headerValue: NullableStr,
    headerPattern: NullableStr,
    cookie: HeaderOrCookie,
    weight: v.pipe(v.number(), v.safeInteger()),
    weightTotal: v.pipe(v.number(), v.safeInteger(), v.minValue(100)),
    affinity: v.optional(v.object({ cookie: CookieName, sticky: v.boolean() })),
  }),
  (parsed, caps) => {
    const random: RandomSource = caps === undefined ? Math.random : caps.random;
    const rules: CanaryRules = parsed;
    let pattern: HeaderPattern | null = null;
    if (rules.headerPattern !== null) {
      const r = compileHeaderPattern(rules.headerPattern);
      if (!r.ok) throw new Error(`header pattern ${r.reason}`);
      pattern = r.re;
    }
    const affinity = parsed.affinity ?? null;
    return (flow) => {
      const canary = flow.route.canary;
      // The compiler adds this policy only with a canary: a table without it is corrupt.
      if (canary === undefined) throw new ProxyError("Internal", "canary policy on a route without a canary");
      const check = affinity === null ? null : { ...affinity, mainKey: backendKey(flow.route.backend), canaryKey: backendKey(canary.backend) };
      if (!chooseCanary(rules, pattern, flow.req.headers, random, check)) return null;
      flow.backend = canary.backend;
      // `legacy`: the canary has no affinity (mergeAlternativeBackend copies main's only
      // otherwise), so its pods are taken round robin and no cookie is set. Choosing here
      // leaves main's affinity step nothing to do: the first step to set a choice wins.
      if (affinity !== null && !affinity.sticky) flow.choice = ROUND_ROBIN;
      return null;
    };
  },
);
