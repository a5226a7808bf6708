// Response bandwidth per request: ingress-nginx's limit-rate and limit-rate-after
// (internal/ingress/annotations/ratelimit/main.go: parser.GetIntAnnotation, an int; on any error
// the ConfigMap's value, defaults.Backend LimitRate / LimitRateAfter). template.go buildRateLimit
// writes `limit_rate <n>k;` and `limit_rate_after <n>k;` only for n > 0, so the unit is KiB and a
// value of 0 or less is no limit. The route carries bytes in RouteOptions.limitRate /
// limitRateAfter; the relay paces the body (upstream/respond.ts, pipeline/body.ts;
// docs/design.md "Response bandwidth").
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX, PORTICO_PREFIX } from "./spec.ts";
import { GoInt } from "./values.ts";

export interface LimitRatePolicy {
  /** Bytes per second of each response after `after` bytes; 0 = unlimited; null = the flag's (--limit-rate). */
  readonly rate: number | null;
  /** Bytes sent before the rate applies; null = the flag's (--limit-rate-after). */
  readonly after: number | null;
}

const DIFFERENCE =
  "Counted on the response body as Portico relays it (before compression, without the header block), from the request's start as in nginx, with nginx's first second allowed at once and the rest spread evenly (nginx lets a second's worth out at each whole second). A response the pod declares at most 64 KiB long that must be paced is sent chunked, without its Content-Length. gRPC and custom error pages are not paced. 0 or less (no limit) is served the same.";

export const LIMIT_RATE: AnnotationSpec = {
  portico: `${PORTICO_PREFIX}limit-rate`,
  nginx: [`${NGINX_PREFIX}limit-rate`],
  family: "limits",
  default: "--limit-rate (0: unlimited)",
  description: "KiB per second each response body is sent at to the client, after `limit-rate-after` (nginx's `limit_rate <n>k`); 0 or less: unlimited",
  compat: { kind: "differs", difference: DIFFERENCE },
  sameWhen: (value) => noLimit(value),
};

export const LIMIT_RATE_AFTER: AnnotationSpec = {
  portico: `${PORTICO_PREFIX}limit-rate-after`,
  nginx: [`${NGINX_PREFIX}limit-rate-after`],
  family: "limits",
  default: "--limit-rate-after (0)",
  description: "KiB of each response sent at full speed before `limit-rate` applies (nginx's `limit_rate_after <n>k`)",
  compat: { kind: "differs", difference: DIFFERENCE },
};

/** A value ingress-nginx reads as no limit (template.go writes nothing for n <= 0). */
const noLimit = (value: string): boolean => /^[+-]?[0-9]+$/.test(value) && Number(value) <= 0;

/** KiB as bytes; 0 or less is 0 (template.go writes nothing for it). Capped: a larger value is no limit in practice. */
const kib = (n: number): number => (n <= 0 ? 0 : Math.min(n * 1024, Number.MAX_SAFE_INTEGER));

const NONE: LimitRatePolicy = Object.freeze({ rate: null, after: null });

export const LIMIT_RATE_FAMILY: Family<LimitRatePolicy> = {
  name: "limits",
  annotations: [LIMIT_RATE, LIMIT_RATE_AFTER],
  none: NONE,
  parse(r) {
    // An invalid value falls back to the ConfigMap's, as ratelimit/main.go does (null: the flag's).
    const rate = r.value(LIMIT_RATE, GoInt);
    const after = r.value(LIMIT_RATE_AFTER, GoInt);
    if (rate === undefined && after === undefined) return NONE;
    return Object.freeze({ rate: rate === undefined ? null : kib(rate), after: after === undefined ? null : kib(after) });
  },
};
