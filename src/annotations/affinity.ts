// Session affinity with a cookie (ingress-nginx's internal/ingress/annotations/sessionaffinity
// and rootfs/etc/nginx/lua/balancer/sticky*.lua). The proxy side is kinds/affinity.ts; the route
// carries the policy as a `backend` stage (docs/design.md, "Balancing and affinity").
import * as v from "valibot";
import type { StagePolicy } from "../policy/stages.ts";
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { Bool, exactlyOneOf, isTrue, oneOf } from "./values.ts";
import { stagePolicy } from "../policy/contract.ts";
import * as K from "../kinds/index.ts";

export interface CookieAffinity {
  /** `balanced`: a random key, hashed to a pod (some sessions move on scaling); `persistent`: the pod's own key. */
  readonly mode: "balanced" | "persistent";
  readonly name: string;
  /** null: the route's path as written (ingress-nginx's $location_path). */
  readonly path: string | null;
  readonly domain: string | null;
  /** Seconds, as written (may be 0 or negative, as ingress-nginx passes them on). */
  readonly maxAge: number | null;
  readonly expires: number | null;
  readonly sameSite: "None" | "Lax" | "Strict" | null;
  readonly conditionalSameSiteNone: boolean;
  /** true forces `Secure`; false lets the scheme decide (HTTPS still gets `Secure`). */
  readonly secure: boolean;
  readonly changeOnFailure: boolean;
}

export interface AffinityPolicy {
  readonly cookie: CookieAffinity | null;
  /**
   * `affinity-canary-behavior`, read on a canary Ingress only (ingress-nginx's
   * controller.go mergeAlternativeBackend reads it from the canary's annotations, whatever its
   * `affinity`): `sticky` gives the canary main's affinity, `legacy` none.
   */
  readonly canaryBehavior: "sticky" | "legacy";
}

const n = (name: string): string => `${NGINX_PREFIX}${name}`;

export const AFFINITY: AnnotationSpec = {
  portico: "portico.dev/affinity",
  nginx: [n("affinity")],
  family: "affinity",
  default: "none",
  description: "`cookie`: keep a client on one pod with a cookie; takes precedence over `upstream-hash-by` and `load-balance`",
  compat: {
    kind: "differs",
    difference:
      "Set per Ingress (ingress-nginx: the first Ingress to use a Service port sets it for every Ingress on that port, and the others honour the cookie without setting it). A value other than `cookie` is an InvalidAnnotation diagnostic (ingress-nginx ignores it silently).",
  },
};

export const AFFINITY_MODE: AnnotationSpec = {
  portico: "portico.dev/affinity-mode",
  nginx: [n("affinity-mode")],
  family: "affinity",
  default: "balanced",
  description: "`balanced` (a new pod gets about 1/n of the sessions when the Service scales) or `persistent` (a session stays until its pod goes)",
  compat: { kind: "same" },
};

export const COOKIE_NAME: AnnotationSpec = {
  portico: "portico.dev/session-cookie-name",
  nginx: [n("session-cookie-name")],
  family: "affinity",
  default: "INGRESSCOOKIE",
  description: "name of the affinity cookie (letters, digits, `.`, `_`, `~`, `-`)",
  compat: {
    kind: "differs",
    difference: "`/` and `:`, which ingress-nginx accepts, are refused: they are not allowed in a cookie name (RFC 6265 §4.1.1). Any name Portico accepts is served the same.",
  },
  sameWhen: (value) => v.is(CookieName, value),
};

export const COOKIE_PATH: AnnotationSpec = {
  portico: "portico.dev/session-cookie-path",
  nginx: [n("session-cookie-path")],
  family: "affinity",
  default: "the route's path",
  description: "`Path` of the cookie; an Ingress with `use-regex` and cookie affinity but no session-cookie-path gets a `SessionCookiePath` warning, as ingress-nginx logs one (the route's path is then a regular expression)",
  compat: { kind: "same" },
};

export const COOKIE_DOMAIN: AnnotationSpec = {
  portico: "portico.dev/session-cookie-domain",
  nginx: [n("session-cookie-domain")],
  family: "affinity",
  default: "none",
  description: "`Domain` of the cookie",
  compat: {
    kind: "differs",
    difference: "Only letters, digits, `.`, `_` and `-` (ingress-nginx also takes `/`, `:` and `~`, which no domain holds). Any domain Portico accepts is served the same.",
  },
  sameWhen: (value) => v.is(CookieDomain, value),
};

export const COOKIE_MAX_AGE: AnnotationSpec = {
  portico: "portico.dev/session-cookie-max-age",
  nginx: [n("session-cookie-max-age")],
  family: "affinity",
  default: "none (a session cookie)",
  description: "seconds: `Max-Age` of the cookie",
  compat: { kind: "same" },
};

export const COOKIE_EXPIRES: AnnotationSpec = {
  portico: "portico.dev/session-cookie-expires",
  nginx: [n("session-cookie-expires")],
  family: "affinity",
  default: "none",
  description: "seconds from when the cookie is set: an absolute `Expires` (for clients without `Max-Age`)",
  compat: { kind: "same" },
};

export const COOKIE_SAMESITE: AnnotationSpec = {
  portico: "portico.dev/session-cookie-samesite",
  nginx: [n("session-cookie-samesite")],
  family: "affinity",
  default: "none",
  description: "`None`, `Lax` or `Strict` (any case): `SameSite` of the cookie",
  compat: {
    kind: "differs",
    difference:
      "Written as `None`, `Lax` or `Strict` whatever the case of the annotation (ingress-nginx copies it as written and applies the conditional rule only to `None` spelt so). `None`, `Lax` and `Strict` spelt so are served the same.",
  },
  sameWhen: (value) => ["None", "Lax", "Strict"].includes(value.trim()),
};

export const COOKIE_CONDITIONAL_SAMESITE_NONE: AnnotationSpec = {
  portico: "portico.dev/session-cookie-conditional-samesite-none",
  nginx: [n("session-cookie-conditional-samesite-none")],
  family: "affinity",
  default: "false",
  description: "`true`: leave out `SameSite=None` for clients that reject it (Chrome 51-66, iOS 12, macOS 10.14 Safari)",
  compat: { kind: "same" },
};

export const COOKIE_SECURE: AnnotationSpec = {
  portico: "portico.dev/session-cookie-secure",
  nginx: [n("session-cookie-secure")],
  family: "affinity",
  default: "false",
  description: "`true`: always `Secure`; otherwise `Secure` when the client came over HTTPS",
  compat: { kind: "same" },
};

export const COOKIE_CHANGE_ON_FAILURE: AnnotationSpec = {
  portico: "portico.dev/session-cookie-change-on-failure",
  nginx: [n("session-cookie-change-on-failure")],
  family: "affinity",
  default: "false",
  description: "`true`: when the cookie's pod fails, retry on another and reissue the cookie; `false`: retry the same pod",
  compat: { kind: "same" },
};

export const AFFINITY_CANARY_BEHAVIOR: AnnotationSpec = {
  portico: "portico.dev/affinity-canary-behavior",
  nginx: [n("affinity-canary-behavior")],
  family: "affinity",
  default: "sticky",
  description:
    "on a canary Ingress: `sticky` (the canary gets main's cookie affinity, and a client whose cookie names the canary's pods stays on the canary, whatever the header, cookie or weight) or `legacy` (the canary has no affinity: such a client is split again on every request)",
  compat: {
    kind: "differs",
    difference:
      "With `legacy` the canary's pods are taken round robin (ingress-nginx: by the canary Ingress's own `load-balance` or `upstream-hash-by`). In both modes a cookie naming main's backend keeps the client on main, as ingress-nginx's sticky balancer of main does. An invalid value is an InvalidAnnotation diagnostic and `sticky` (ingress-nginx: `sticky`, with a log line). Set on a main Ingress it does nothing, as in ingress-nginx. So `sticky`, and either value on an Ingress that is not a canary, is served the same.",
  },
  sameWhen: (value, all) => {
    const behavior = value.trim();
    return behavior === "sticky" || (behavior === "legacy" && !isTrue(all[n("canary")] ?? ""));
  },
};

const COOKIE_SETTINGS = [
  COOKIE_NAME, COOKIE_PATH, COOKIE_DOMAIN, COOKIE_MAX_AGE, COOKIE_EXPIRES, COOKIE_SAMESITE,
  COOKIE_CONDITIONAL_SAMESITE_NONE, COOKIE_SECURE, COOKIE_CHANGE_ON_FAILURE,
] as const;

const CookieName = v.pipe(v.string(), v.trim(), v.regex(/^[A-Za-z0-9._~-]{1,128}$/, "expected a cookie name of letters, digits, ., _, ~ or -"));
// ingress-nginx's URLIsValidRegex character set: nothing that could end the attribute (`;`) or the header.
const CookiePath = v.pipe(v.string(), v.trim(), v.regex(/^[A-Za-z0-9._~:/,?&=-]{1,1024}$/, "expected a path of letters, digits and . _ ~ : / , ? & = -"));
const CookieDomain = v.pipe(v.string(), v.trim(), v.regex(/^[A-Za-z0-9._-]{1,253}$/, "expected a domain of letters, digits, ., _ or -"));
// ingress-nginx's affinityCookieExpiresRegex, anchored: its unanchored `^0` also took "0abc",
// which its Lua then failed on.
const Seconds = v.pipe(v.string(), v.trim(), v.regex(/^(0|-?[1-9]\d{0,9})$/, "expected a whole number of seconds"), v.transform(Number));

const NONE: AffinityPolicy = Object.freeze({ cookie: null, canaryBehavior: "sticky" });
const LEGACY: AffinityPolicy = Object.freeze({ cookie: null, canaryBehavior: "legacy" });

export const AFFINITY_FAMILY: Family<AffinityPolicy> = {
  name: "affinity",
  annotations: [AFFINITY, AFFINITY_MODE, AFFINITY_CANARY_BEHAVIOR, ...COOKIE_SETTINGS],
  none: NONE,
  parse(r) {
    // ingress-nginx's ValidateOptions(sticky, legacy; case-sensitive, trimmed); anything else
    // is not "legacy", so sticky.
    const canaryBehavior = r.value(AFFINITY_CANARY_BEHAVIOR, exactlyOneOf(["sticky", "legacy"], "expected sticky or legacy")) ?? "sticky";
    // ingress-nginx reads the cookie settings only for `affinity: cookie`; without it they do nothing.
    const kind = r.read(AFFINITY, exactlyOneOf(["cookie"], "expected cookie"), "no affinity");
    if (kind.state !== "ok") return canaryBehavior === "legacy" ? LEGACY : NONE;
    // ingress-nginx: an invalid Max-Age or Expires is left out of the cookie.
    const maxAge = r.read(COOKIE_MAX_AGE, Seconds, "Max-Age is left out");
    const expires = r.read(COOKIE_EXPIRES, Seconds, "Expires is left out");
    const sameSite = r.value(COOKIE_SAMESITE, oneOf(["None", "Lax", "Strict"], "expected None, Lax or Strict")) ?? null;
    return Object.freeze({
      canaryBehavior,
      cookie: Object.freeze({
        mode: r.value(AFFINITY_MODE, exactlyOneOf(["balanced", "persistent"], "expected balanced or persistent")) ?? "balanced",
        name: r.value(COOKIE_NAME, CookieName) ?? "INGRESSCOOKIE",
        path: r.value(COOKIE_PATH, CookiePath) ?? null,
        domain: r.value(COOKIE_DOMAIN, CookieDomain) ?? null,
        maxAge: maxAge.state === "ok" ? maxAge.value : null,
        expires: expires.state === "ok" ? expires.value : null,
        sameSite,
        conditionalSameSiteNone: r.value(COOKIE_CONDITIONAL_SAMESITE_NONE, Bool) ?? false,
        secure: r.value(COOKIE_SECURE, Bool) ?? false,
        changeOnFailure: r.value(COOKIE_CHANGE_ON_FAILURE, Bool) ?? false,
      }),
    });
  },
};

/** The route's `backend` stage policy for cookie affinity (kinds/affinity.ts runs it). */
export function affinityStage(c: CookieAffinity): StagePolicy {
  return stagePolicy(K.AFFINITY, { ...c });
}
