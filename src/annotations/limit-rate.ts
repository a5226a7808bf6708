// Response bandwidth per request: ingress-nginx's limit-rate and limit-rate-after
// (internal/ingress/annotations/ratelimit/main.go: parser.GetIntAnnotation, an int; on any error
// the ConfigMap's value, defaults.Backend LimitRate / LimitRateAfter). template.go buildRateLimit
// writes `limit_rate <n>k;` and `limit_rate_after <n>k;` only for n > 0, so the unit is KiB and a
// value of 0 or less is no limit. The route carries bytes in RouteOptions.limitRate /
// limitRateAfter; the relay paces the body (upstream/respond.ts, pipeline/body.ts;
// docs/design.md "Response bandwidth"), of a buffered answer only: nginx's
// ngx_http_upstream_send_response sets `r->limit_rate = 0` when the answer is not buffered
// (proxy_buffering off, ingress-nginx's default), so there the annotation has no effect, and the
// migration report says so.
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX, PORTICO_PREFIX, valueIn, type AnnotationValues } from "./spec.ts";
import { RESPONSE_BUFFERING } from "./buffering.ts";
import { GoInt } from "./values.ts";

export interface LimitRatePolicy {
  /** Bytes per second of each response after `after` bytes; 0 = unlimited; null = the flag's (--limit-rate). */
  readonly rate: number | null;
  /** Bytes sent before the rate applies; null = the flag's (--limit-rate-after). */
  readonly after: number | null;
}

/** What ingress-nginx does too, stated because a team may expect otherwise (docs/design.md "Response bandwidth"). */
const BUFFERED_ONLY =
  "As in ingress-nginx, only a buffered answer is paced (`proxy-buffering: on`, or the pod's `X-Accel-Buffering: yes`), at the pod's `X-Accel-Limit-Rate` (bytes per second; `0`: no limit) when it sends one.";
const PACED =
  "Counted on the response body as Portico relays it (before compression, without the header block), from the request's start as in nginx, with nginx's first second allowed at once and the rest spread evenly (nginx lets a second's worth out at each whole second). A response the pod declares at most 64 KiB long that must be paced is sent chunked, without its Content-Length. gRPC and custom error pages are not paced.";
const DIFFERENCE = `${BUFFERED_ONLY} ${PACED} 0 or less (no limit) is served the same.`;

/**
 * The difference as it applies to this Ingress: with its proxy-buffering not `on` (off, or unset
 * so the ConfigMap's decides, off by default), its answers are unbuffered and not paced, in
 * ingress-nginx as in Portico; the report says so first, so a team sees it before switching.
 */
function differenceFor(_value: string, all: AnnotationValues): string {
  const buffering = valueIn(RESPONSE_BUFFERING, all)?.trim().toLowerCase();
  if (buffering === "on") return PACED;
  const why = buffering === undefined ? "this Ingress sets no proxy-buffering, and the ConfigMap's is off unless set" : `this Ingress sets proxy-buffering: ${JSON.stringify(buffering)}`;
  return `No effect on answers that are not buffered (${why}): as in ingress-nginx, limit-rate paces only buffered answers: set proxy-buffering: on. Only an answer the pod marks \`X-Accel-Buffering: yes\` is paced then. ${PACED}`;
}

export const LIMIT_RATE: AnnotationSpec = {
  portico: `${PORTICO_PREFIX}limit-rate`,
  nginx: [`${NGINX_PREFIX}limit-rate`],
  family: "limits",
  default: "--limit-rate (0: unlimited)",
  description: "KiB per second each buffered response body is sent at to the client, after `limit-rate-after` (nginx's `limit_rate <n>k`); 0 or less: unlimited",
  compat: { kind: "differs", difference: DIFFERENCE },
  sameWhen: (value) => noLimit(value),
  differenceFor,
};

export const LIMIT_RATE_AFTER: AnnotationSpec = {
  portico: `${PORTICO_PREFIX}limit-rate-after`,
  nginx: [`${NGINX_PREFIX}limit-rate-after`],
  family: "limits",
  default: "--limit-rate-after (0)",
  description: "KiB of each response sent at full speed before `limit-rate` applies (nginx's `limit_rate_after <n>k`)",
  compat: { kind: "differs", difference: DIFFERENCE },
  differenceFor,
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
