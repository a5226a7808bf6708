// ingress-nginx's regex paths and rewrite-target for the routes of one Ingress
// (docs/design.md "Regular expressions"). The compiler reads the policy to decide a host's
// regex mode (compile/host-entry.ts); the rewrite itself is a `rewrite` stage policy that the
// proxy runs with the captures of the location that matched (kinds/rewrite.ts).
//
// Values as ingress-nginx reads them (internal/ingress/annotations/rewrite/main.go and
// xforwardedprefix/main.go, parser/validators.go): use-regex is a Go bool, false when invalid;
// rewrite-target and x-forwarded-prefix must match RegexPathWithCapture,
// `^/?[-._~a-zA-Z0-9/:$]*$` (x-forwarded-prefix after removing spaces). An invalid
// rewrite-target is dropped ("defaulting to empty"): no rewrite and no regex mode.
import * as v from "valibot";
import { isValidRewriteTarget } from "../regex/index.ts";
import type { StagePolicy } from "../policy/stages.ts";
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { Bool, isFalse } from "./values.ts";
import { stagePolicy } from "../policy/contract.ts";
import * as K from "../kinds/index.ts";

export interface RegexRewritePolicy {
  /** Match the paths of every host this Ingress has rules for as ingress-nginx's regexes. */
  readonly useRegex: boolean;
  /** The target, or "" when absent or invalid (ingress-nginx then uses ""). */
  readonly rewriteTarget: string;
  /** X-Forwarded-Prefix sent with rewritten requests, or null. */
  readonly xForwardedPrefix: string | null;
}

export const USE_REGEX: AnnotationSpec = {
  portico: "portico.dev/use-regex",
  nginx: [`${NGINX_PREFIX}use-regex`],
  family: "regex-rewrite",
  default: "false",
  description:
    "`true`: every path of every host this Ingress names, in every Ingress of those hosts, is a case-insensitive regular expression anchored at the start only; the longest location is tried first and the first match wins",
  compat: {
    kind: "differs",
    difference:
      "Same matching and order, run on RE2 (linear time) instead of PCRE: a path that needs backtracking (backreferences, lookaround, atomic groups, possessive quantifiers) or is over 1024 characters or 1000 instructions is left out with an InvalidPath diagnostic. `.` and case folding work on characters, not bytes. The path matched is the fully decoded one (an encoded `/` is a 400 before any match, where nginx decodes it). `false` is served the same: it adds no regex mode in either.",
  },
  sameWhen: isFalse,
  differenceFor: () =>
    "Same matching and order, run on RE2 (linear time) instead of PCRE: a path that needs backtracking (backreferences, lookaround, atomic groups, possessive quantifiers) or is over 1024 characters or 1000 instructions is left out with an InvalidPath diagnostic. `.` and case folding work on characters, not bytes. The path matched is the fully decoded one (an encoded `/` is a 400 before any match, where nginx decodes it).",
};

export const REWRITE_TARGET: AnnotationSpec = {
  portico: "portico.dev/rewrite-target",
  nginx: [`${NGINX_PREFIX}rewrite-target`],
  family: "regex-rewrite",
  default: "none",
  description:
    "letters, digits and `- . _ ~ / : $`: the path sent upstream, with `$1`…`$9` (and named groups) from the path's regex; the query string is kept; `http://`/`https://` answers 302 to it instead. Implies regex mode for the hosts (unless equal to the path)",
  compat: {
    kind: "differs",
    difference:
      "The rewritten path is normalised like a request path (dot segments resolved, `//` merged) and characters a path may not carry are escaped (`;` as `%3B`, which nginx sends raw); a result that is empty or does not start with `/` answers 500 (nginx: 500 when empty, otherwise sends it). Variables other than the captures (`$host`…) leave the path out with a diagnostic (nginx expands them). The host's implicit `/` location takes the oldest Ingress's target, as in ingress-nginx, when the target names no capture group (`/` has none; nginx expands them to nothing).",
  },
  // Without variables other than the captures, the sentence on them does not apply.
  differenceFor: (value) => {
    const others = /\$(?![1-9])/.test(value);
    return `The rewritten path is normalised like a request path (dot segments resolved, \`//\` merged) and characters a path may not carry are escaped (\`;\` as \`%3B\`, which nginx sends raw); a result that is empty or does not start with \`/\` answers 500 (nginx: 500 when empty, otherwise sends it).${others ? " Variables other than the captures (`$host`…) leave the path out with a diagnostic (nginx expands them)." : ""} The implicit \`/\` location does not rewrite (ingress-nginx gives it the host's first Ingress's target).`;
  },
};

export const X_FORWARDED_PREFIX: AnnotationSpec = {
  portico: "portico.dev/x-forwarded-prefix",
  nginx: [`${NGINX_PREFIX}x-forwarded-prefix`],
  family: "regex-rewrite",
  default: "none",
  description: "a path, `$1`… allowed: sent as X-Forwarded-Prefix on requests that `rewrite-target` rewrites (only those)",
  compat: {
    kind: "differs",
    difference:
      "Sent only with a rewrite, as ingress-nginx's template does (its documentation presents it as standalone). An invalid value is reported and no header is sent (ingress-nginx refuses the whole Ingress). A valid value is served the same.",
  },
  sameWhen: (value) => v.is(XForwardedPrefix, value),
};

const RewriteTarget = v.pipe(
  v.string(),
  v.check((s) => s !== "", "empty (ingress-nginx ignores it, so no rewrite and no regex mode)"),
  v.check(isValidRewriteTarget, "may contain only letters, digits and - . _ ~ / : $ (ingress-nginx ignores it, so no rewrite and no regex mode)"),
);

const XForwardedPrefix = v.pipe(
  v.string(),
  v.trim(),
  v.check((s) => s !== "", "empty"),
  v.check((s) => isValidRewriteTarget(s.replaceAll(" ", "")), "may contain only letters, digits, spaces and - . _ ~ / : $"),
);

const NONE: RegexRewritePolicy = Object.freeze({ useRegex: false, rewriteTarget: "", xForwardedPrefix: null });

export const REGEX_REWRITE: Family<RegexRewritePolicy> = {
  name: "regex-rewrite",
  annotations: [USE_REGEX, REWRITE_TARGET, X_FORWARDED_PREFIX],
  none: NONE,
  stages: (p) => {
    const s = rewriteStage(p);
    return s === null ? [] : [s];
  },
  parse(r) {
    const useRegex = r.value(USE_REGEX, Bool);
    const target = r.read(REWRITE_TARGET, RewriteTarget, "no rewrite, and the host's regex mode does not count it");
    const xfp = r.read(X_FORWARDED_PREFIX, XForwardedPrefix, "the header is not sent");
    const rewriteTarget = target.state === "ok" ? target.value : "";
    const xForwardedPrefix = xfp.state === "ok" ? xfp.value : null;
    if (useRegex === undefined && rewriteTarget === "" && xForwardedPrefix === null) return NONE;
    return Object.freeze({ useRegex: useRegex ?? false, rewriteTarget, xForwardedPrefix });
  },
};

/** The `rewrite` stage policy of an Ingress with a rewrite-target (kinds/rewrite.ts runs it). */
export function rewriteStage(p: RegexRewritePolicy): StagePolicy | null {
  if (p.rewriteTarget === "") return null;
  return stagePolicy(K.REWRITE_TARGET, { target: p.rewriteTarget, xForwardedPrefix: p.xForwardedPrefix });
}
