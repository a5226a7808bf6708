// Canary Ingresses: a second Ingress for the same host, path and pathType that takes some of
// the requests of the first one ("main"). ingress-nginx parses these annotations in
// internal/ingress/annotations/canary/main.go, merges the canary's Service into main's
// upstream as an alternative backend (internal/ingress/controller/controller.go,
// mergeAlternativeBackends) and picks per request in rootfs/etc/nginx/lua/balancer.lua
// (route_to_alternative_balancer). Here the compiler attaches the canary to main's route
// (compile/host-entry.ts) and the proxy's `backend` stage picks (kinds/canary.ts).
import * as v from "valibot";
import { compileHeaderPattern } from "../regex/header-pattern.ts";
import { type StagePolicy } from "../policy/stages.ts";
import type { CanaryRules } from "../policy/params.ts";
import type { AnnotationSpec, Family, ReadResult } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { Bool, isFalse } from "./values.ts";
import * as K from "../kinds/index.ts";
import { stagePolicy } from "../policy/contract.ts";

export type CanaryPolicy =
  /** Not a canary (the Ingress is an ordinary one). */
  | { readonly kind: "none" }
  | { readonly kind: "canary"; readonly rules: CanaryRules }
  /** `canary: "true"` with an invalid canary-* value: not a competitor, and not used. */
  | { readonly kind: "invalid" };

const SAME = { kind: "same" } as const;
const ALL_OR_NOTHING =
  "An invalid value of any canary annotation disables the whole canary (main answers every request, with an InvalidAnnotation diagnostic); ingress-nginx replaces only that value by its default.";

export const CANARY: AnnotationSpec = {
  portico: null,
  nginx: [`${NGINX_PREFIX}canary`],
  family: "canary",
  default: "false",
  description:
    "`true`: this Ingress is the canary of the Ingress with the same host, path and pathType; only its backend (and `affinity-canary-behavior`) is used, and only where such a main route exists; with cookie affinity on main, a client whose cookie names main or the canary stays there",
  compat: {
    kind: "differs",
    difference:
      "The canary applies to the host and path it repeats (ingress-nginx attaches it to main's Service port, so every location sending to that Service port, on any host, splits too); its `spec.defaultBackend` is not used (ingress-nginx makes it a canary of the catch-all). `false` is served the same: the Ingress is no canary in either.",
  },
  sameWhen: isFalse,
  differenceFor: () =>
    "The canary applies to the host and path it repeats (ingress-nginx attaches it to main's Service port, so every location sending to that Service port, on any host, splits too); its `spec.defaultBackend` is not used (ingress-nginx makes it a canary of the catch-all).",
};

export const CANARY_BY_HEADER: AnnotationSpec = {
  portico: null,
  nginx: [`${NGINX_PREFIX}canary-by-header`],
  family: "canary",
  default: "",
  description: "request header (any case): `always` sends to the canary, `never` to main, any other value goes on to the cookie rule",
  compat: { kind: "differs", difference: `Names are HTTP tokens of \`A-Za-z0-9._~-\`. ${ALL_OR_NOTHING} Such a name is served the same.` },
  sameWhen: (value) => v.is(Token, value),
};

export const CANARY_BY_HEADER_VALUE: AnnotationSpec = {
  portico: null,
  nginx: [`${NGINX_PREFIX}canary-by-header-value`],
  family: "canary",
  default: "",
  description: "the header value (exact, case-sensitive) that sends to the canary, instead of `always`; any other value goes on to the cookie rule",
  compat: SAME,
};

export const CANARY_BY_HEADER_PATTERN: AnnotationSpec = {
  portico: null,
  nginx: [`${NGINX_PREFIX}canary-by-header-pattern`],
  family: "canary",
  default: "",
  description: "a regular expression (unanchored, case-sensitive) the header value must match to go to the canary; ignored when `canary-by-header-value` is set",
  compat: {
    kind: "differs",
    difference:
      "Run on a linear-time engine (RE2 syntax after translating PCRE): backreferences and lookaround are refused with a diagnostic (and the canary is not used), and no match can fail at run time (ingress-nginx sends to main on a PCRE run-time error).",
  },
};

export const CANARY_BY_COOKIE: AnnotationSpec = {
  portico: null,
  nginx: [`${NGINX_PREFIX}canary-by-cookie`],
  family: "canary",
  default: "",
  description: "cookie: `always` sends to the canary, `never` to main, any other value goes on to the weight",
  compat: SAME,
};

export const CANARY_WEIGHT: AnnotationSpec = {
  portico: null,
  nginx: [`${NGINX_PREFIX}canary-weight`],
  family: "canary",
  default: "0",
  description: "integer: a request goes to the canary when a uniform pick in 1..total is at most this",
  compat: SAME,
};

export const CANARY_WEIGHT_TOTAL: AnnotationSpec = {
  portico: null,
  nginx: [`${NGINX_PREFIX}canary-weight-total`],
  family: "canary",
  default: "100",
  description: "integer: what `canary-weight` is out of; below 100 counts as 100",
  compat: SAME,
};

const Token = v.pipe(v.string(), v.regex(/^[A-Za-z0-9._~-]{1,256}$/, "expected a header or cookie name (letters, digits, `.`, `_`, `~`, `-`)"));
/** ingress-nginx's BasicCharsRegex (annotations/parser/validators.go). */
const BasicChars = v.pipe(v.string(), v.regex(/^[A-Za-z0-9._~/:-]{1,1024}$/, "expected letters, digits and `-._~/:` only"));
/** ingress-nginx's IsValidRegex character set, then the pattern must compile on the linear-time engine. */
const Pattern = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z0-9._~/:^$[\](){}*+?|&=\\-]+$/, "expected a regular expression of letters, digits and `-._~/:^$[](){}*+?|&=\\`"),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const r = compileHeaderPattern(dataset.value);
    if (!r.ok) addIssue({ message: `the pattern ${r.reason}` });
  }),
);
/** Go's strconv.Atoi spellings, within the safe integers. */
const Int = v.pipe(
  v.string(),
  v.regex(/^[+-]?\d{1,15}$/, "expected an integer"),
  v.transform((s) => Number(s)),
);

const NONE: CanaryPolicy = Object.freeze({ kind: "none" });
const INVALID: CanaryPolicy = Object.freeze({ kind: "invalid" });

const RULES = [CANARY_BY_HEADER, CANARY_BY_HEADER_VALUE, CANARY_BY_HEADER_PATTERN, CANARY_BY_COOKIE, CANARY_WEIGHT, CANARY_WEIGHT_TOTAL] as const;

export const CANARY_FAMILY: Family<CanaryPolicy> = {
  name: "canary",
  annotations: [CANARY, ...RULES],
  none: NONE,
  parse(r) {
    const enabled = r.read(CANARY, Bool, "the Ingress is not a canary");
    if (enabled.state !== "ok" || !enabled.value) {
      // ingress-nginx: canary-* keys without `canary: "true"` are an error of the canary
      // parser; the Ingress is then served as an ordinary one (controller.go skips only
      // Ingresses whose parsed Canary.Enabled is true).
      const set = RULES.filter((s) => r.read(s, v.string(), "ignored").state !== "unset");
      if (set.length > 0) {
        const names = set.map((s) => s.nginx[0]).join(", ");
        r.problem(`annotations ${names} are set but ${CANARY.nginx[0]} is not "true": they are ignored and the Ingress is served as an ordinary one`);
      }
      return NONE;
    }
    const why = "the canary is not used (main answers every request)";
    let bad = false;
    const get = <T>(spec: AnnotationSpec, schema: v.GenericSchema<string, T>): T | null => {
      const res: ReadResult<T> = r.read(spec, schema, why);
      if (res.state === "invalid") bad = true;
      return res.state === "ok" ? res.value : null;
    };
    const header = get(CANARY_BY_HEADER, Token);
    const headerValue = get(CANARY_BY_HEADER_VALUE, BasicChars);
    const headerPattern = get(CANARY_BY_HEADER_PATTERN, Pattern);
    const cookie = get(CANARY_BY_COOKIE, Token);
    const weight = get(CANARY_WEIGHT, Int) ?? 0;
    const total = get(CANARY_WEIGHT_TOTAL, Int) ?? 100;
    if (bad) return INVALID;
    const rules: CanaryRules = {
      header: header === null ? null : header.toLowerCase(),
      // Without a header name, value and pattern have nothing to test (balancer.lua reads
      // `http_` + the name); with a value, the pattern is ignored.
      headerValue: header === null ? null : headerValue,
      headerPattern: header === null || headerValue !== null ? null : headerPattern,
      cookie,
      weight,
      weightTotal: total > 100 ? total : 100,
    };
    return Object.freeze({ kind: "canary", rules: Object.freeze(rules) });
  },
};

/**
 * The affinity check that comes before the rules when main has cookie affinity
 * (balancer.lua route_to_alternative_balancer: `is_affinitized` of main's balancer, then of the
 * canary's). `cookie` is main's session-cookie-name; `sticky` is the canary Ingress's
 * `affinity-canary-behavior` (only with `sticky` does the canary have affinity, so only then
 * does a cookie naming it keep the client there).
 */
export type CanaryAffinity = { readonly cookie: string; readonly sticky: boolean };

/**
 * The `backend`-stage policy of a route with a canary; kinds/canary.ts implements the kind.
 * `affinity` is left out of the params when main has none, so such routes read as before.
 */
export function canaryStagePolicy(rules: CanaryRules, affinity: CanaryAffinity | null = null): StagePolicy {
  return stagePolicy(K.CANARY, affinity === null ? { ...rules } : { ...rules, affinity: { ...affinity } });
}
