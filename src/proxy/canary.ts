// The `canary` policy of the `backend` stage: main's backend or the canary's, per request, in
// ingress-nginx's order (rootfs/etc/nginx/lua/balancer.lua, route_to_alternative_balancer):
//   1. the header, when present: with `canary-by-header-value`, equal → canary; with
//      `-pattern`, a match → canary; with neither, `always` → canary and `never` → main;
//      anything else goes on;
//   2. the cookie: `always` → canary, `never` → main; anything else goes on;
//   3. the weight: a uniform pick in 1..total at most `weight` → canary.
// Affinity (a sticky cookie keeping a client on main or on the canary, checked first there)
// belongs to the affinity policy of the same stage. docs/design.md, "Canary Ingresses".
import * as v from "valibot";
import { CANARY_KIND, type CanaryRules } from "../annotations/canary.ts";
import { compileHeaderPattern, type HeaderPattern } from "../regex/header-pattern.ts";
import { ProxyError } from "./errors.ts";
import type { PolicyKind, PolicyStep } from "./policies.ts";

/** A number in [0, 1), as Math.random gives; tests pass a seeded one. */
export type RandomSource = () => number;

const Name = v.nullable(v.pipe(v.string(), v.regex(/^[a-z0-9._~-]+$/i)));
/** The params cross IPC to the workers: checked again where they are used. */
const Params = v.object({
  header: Name,
  headerValue: v.nullable(v.string()),
  headerPattern: v.nullable(v.string()),
  cookie: Name,
  weight: v.pipe(v.number(), v.safeInteger()),
  weightTotal: v.pipe(v.number(), v.safeInteger(), v.minValue(100)),
});

/** The value of cookie `name` in a Cookie header (nginx's `$cookie_<name>`: the first one, name in any case). */
export function cookieValue(header: string | null, name: string): string | null {
  if (header === null) return null;
  const lower = name.toLowerCase();
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim().toLowerCase() === lower) return part.slice(eq + 1).trim();
  }
  return null;
}

/** Whether this request goes to the canary. `pattern` is rules.headerPattern compiled. */
export function chooseCanary(rules: CanaryRules, pattern: HeaderPattern | null, headers: Headers, random: RandomSource): boolean {
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
    const c = cookieValue(headers.get("cookie"), rules.cookie);
    if (c === "always") return true;
    if (c === "never") return false;
  }
  // math.random(total) <= weight: an integer in 1..total.
  return Math.floor(random() * rules.weightTotal) + 1 <= rules.weight;
}

export function canaryKind(random: RandomSource = Math.random): PolicyKind {
  return {
    stage: "backend",
    build(params): PolicyStep {
      const rules: CanaryRules = v.parse(Params, params);
      let pattern: HeaderPattern | null = null;
      if (rules.headerPattern !== null) {
        const r = compileHeaderPattern(rules.headerPattern);
        if (!r.ok) throw new Error(`header pattern ${r.reason}`);
        pattern = r.re;
      }
      return (flow) => {
        const canary = flow.route.canary;
        // The compiler adds this policy only with a canary: a table without it is corrupt.
        if (canary === undefined) throw new ProxyError("Internal", "canary policy on a route without a canary");
        if (chooseCanary(rules, pattern, flow.req.headers, random)) flow.backend = canary.backend;
        return null;
      };
    },
  };
}

export { CANARY_KIND };
