// When a failed attempt is sent to another endpoint: ingress-nginx's proxy-next-upstream,
// proxy-next-upstream-tries and proxy-next-upstream-timeout (annotations/proxy/main.go; the
// template writes them as nginx's proxy_next_upstream* directives, through
// template.go buildNextUpstream). The proxy reads the result from RouteOptions.retry
// (src/proxy/upstream/forward.ts; docs/design.md, "Retries").
import * as v from "valibot";
import { DEFAULT_RETRY } from "../table/routes.ts";
import type { RetryPolicy } from "../table/types.ts";
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";

const STREAMED =
  "A request whose body was streamed (`proxy-request-buffering: off`, or a body over the buffer bounds) moves to another pod only when nothing of it was sent: a refused or timed-out connect; a buffered body is sent again as nginx does.";

export const NEXT_UPSTREAM: AnnotationSpec = {
  portico: "portico.dev/next-upstream",
  nginx: [`${NGINX_PREFIX}proxy-next-upstream`],
  family: "retries",
  default: "error timeout",
  description:
    "space-separated: `error`, `timeout`, `invalid_header`, `http_500`, `http_502`, `http_503`, `http_504`, `http_403`, `http_404`, `http_429`, `non_idempotent`, or `off`: the failures that move a request to another pod",
  compat: {
    kind: "differs",
    difference: `${STREAMED} Never the same pod twice in one request. Retried methods: all but POST, LOCK and PATCH (those with \`non_idempotent\`), as nginx. \`off\` is served the same: no request moves to another pod in either.`,
  },
  sameWhen: (value) => value.trim() === "off",
};

export const NEXT_UPSTREAM_TRIES: AnnotationSpec = {
  portico: "portico.dev/next-upstream-tries",
  nginx: [`${NGINX_PREFIX}proxy-next-upstream-tries`],
  family: "retries",
  default: "3",
  description: "attempts in all, the first included; `0` = one per pod",
  compat: {
    kind: "differs",
    difference: "Also bounded by the number of ready pods, as no pod is tried twice (nginx's `0` is unlimited). `1` is served the same: one attempt, no retry.",
  },
  sameWhen: (value) => /^0*1$/.test(value),
};

export const NEXT_UPSTREAM_TIMEOUT: AnnotationSpec = {
  portico: "portico.dev/next-upstream-timeout",
  nginx: [`${NGINX_PREFIX}proxy-next-upstream-timeout`],
  family: "retries",
  default: "0",
  description: "seconds (or `500ms`, `2m`) after the first attempt began when no new attempt starts; `0` = no limit",
  compat: { kind: "differs", difference: "Also takes `500ms`, `5s`, `2m`, `1h` (ingress-nginx reads whole seconds only). A whole number of seconds is served the same." },
  sameWhen: (value) => /^\d+$/.test(value) && v.is(Budget, value),
};

// ingress-nginx's validUpstreamAnnotation (annotations/proxy/main.go): these tokens, separated
// by white space, nothing else.
const TOKENS = [
  "error", "timeout", "invalid_header", "http_500", "http_502", "http_503", "http_504", "http_403", "http_404", "http_429",
  "non_idempotent", "off",
] as const;
type Token = (typeof TOKENS)[number];
const TOKEN_SET: ReadonlySet<string> = new Set(TOKENS);

const Conditions = v.pipe(
  v.string(),
  v.transform((s) => s.split(/\s+/).filter((t) => t !== "")),
  v.check((ts) => ts.length > 0 && ts.every((t) => TOKEN_SET.has(t)), `expected some of ${TOKENS.join(", ")}`),
  v.transform((ts) => ts as Token[]),
);

/** A whole number of attempts (Go's strconv.Atoi, as ingress-nginx's GetIntAnnotation; no sign). */
const Tries = v.pipe(
  v.string(),
  v.regex(/^\d{1,6}$/, "expected a number of attempts such as 3 (0 = one per endpoint)"),
  v.transform(Number),
);

const UNIT_MS: Readonly<Record<string, number>> = { "": 1000, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Seconds, or a duration with a unit; 0 allowed (no limit), unlike the timeouts family's Duration. */
const Budget = v.pipe(
  v.string(),
  v.trim(),
  v.regex(/^\d{1,9}(ms|s|m|h)?$/, "expected a number of seconds, or 500ms, 5s, 2m (0 = no limit)"),
  v.transform((s) => {
    const m = /^(\d+)(ms|s|m|h)?$/.exec(s) as RegExpExecArray;
    return Number(m[1]) * (UNIT_MS[m[2] ?? ""] ?? 1000);
  }),
  v.maxValue(2_147_483_647, "at most 2147483647 ms"),
);

/** The conditions of a proxy-next-upstream value over the default policy. */
function withConditions(base: RetryPolicy, ts: readonly Token[]): RetryPolicy {
  // nginx: `off` clears every other condition (ngx_http_upstream merges the bitmask to FT_OFF).
  if (ts.includes("off")) return { ...base, error: false, timeout: false, invalidHeader: false, statuses: [], nonIdempotent: false };
  const statuses = ts.filter((t) => t.startsWith("http_")).map((t) => Number(t.slice(5)));
  return {
    ...base,
    error: ts.includes("error"),
    timeout: ts.includes("timeout"),
    invalidHeader: ts.includes("invalid_header"),
    statuses: [...new Set(statuses)].sort((a, b) => a - b),
    // buildNextUpstream: `non_idempotent` in the annotation, or the ConfigMap's
    // retry-non-idempotent (Portico has no ConfigMap: off).
    nonIdempotent: ts.includes("non_idempotent"),
  };
}

export const RETRIES: Family<RetryPolicy | null> = {
  name: "retries",
  annotations: [NEXT_UPSTREAM, NEXT_UPSTREAM_TRIES, NEXT_UPSTREAM_TIMEOUT],
  // null: the route uses DEFAULT_RETRY and carries nothing.
  none: null,
  parse(r) {
    // Each invalid value falls back to its default alone, as ingress-nginx's parser does.
    const conditions = r.value(NEXT_UPSTREAM, Conditions);
    const tries = r.value(NEXT_UPSTREAM_TRIES, Tries);
    const timeoutMs = r.value(NEXT_UPSTREAM_TIMEOUT, Budget);
    if (conditions === undefined && tries === undefined && timeoutMs === undefined) return null;
    let p: RetryPolicy = conditions === undefined ? DEFAULT_RETRY : withConditions(DEFAULT_RETRY, conditions);
    if (tries !== undefined) p = { ...p, tries };
    if (timeoutMs !== undefined) p = { ...p, timeoutMs };
    return Object.freeze({ ...p, statuses: Object.freeze([...p.statuses]) });
  },
};
