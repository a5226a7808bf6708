// Upstream timeouts for the routes of one Ingress (the proxy reads them from RouteOptions).
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { Duration, isWholeSeconds } from "./values.ts";

export interface TimeoutsPolicy {
  /** Milliseconds; null = the flag. */
  readonly connectTimeoutMs: number | null;
  readonly responseTimeoutMs: number | null;
  readonly streamIdleTimeoutMs: number | null;
}

const UNITS =
  "Also takes `500ms`, `5s`, `2m`, `1h` (ingress-nginx reads whole seconds only and uses its default for anything else); `0` and values above 2147483647 ms are refused.";

export const CONNECT_TIMEOUT: AnnotationSpec = {
  portico: "portico.dev/connect-timeout",
  nginx: [`${NGINX_PREFIX}proxy-connect-timeout`],
  family: "timeouts",
  default: "--connect-timeout",
  description: "`500ms`, `5s`, `2m`, `1h`, or a number of seconds: deadline to connect to a pod",
  compat: { kind: "differs", difference: `${UNITS} A whole number of seconds is served the same.` },
  sameWhen: isWholeSeconds,
};

export const RESPONSE_TIMEOUT: AnnotationSpec = {
  portico: "portico.dev/response-timeout",
  nginx: [`${NGINX_PREFIX}proxy-read-timeout`],
  family: "timeouts",
  default: "--response-timeout",
  description: "as above: deadline for the response headers, then 504",
  compat: {
    kind: "differs",
    difference: `Bounds the wait for the response headers only; a streamed body is cut after \`stream-idle-timeout\` without data, which this annotation does not set (nginx's read timeout is one idle timer for both). ${UNITS}`,
  },
  // A whole number of seconds reads the same in both: the units do not concern it.
  differenceFor: (value) =>
    `Bounds the wait for the response headers only; a streamed body is cut after \`stream-idle-timeout\` without data, which this annotation does not set (nginx's read timeout is one idle timer for both).${isWholeSeconds(value) ? "" : ` ${UNITS}`}`,
};

export const STREAM_IDLE_TIMEOUT: AnnotationSpec = {
  portico: "portico.dev/stream-idle-timeout",
  nginx: [],
  family: "timeouts",
  default: "--stream-idle-timeout",
  description: "as above: idle time allowed in a streamed body or WebSocket",
  compat: { kind: "portico-only" },
};

const NONE: TimeoutsPolicy = Object.freeze({ connectTimeoutMs: null, responseTimeoutMs: null, streamIdleTimeoutMs: null });

export const TIMEOUTS: Family<TimeoutsPolicy> = {
  name: "timeouts",
  annotations: [CONNECT_TIMEOUT, RESPONSE_TIMEOUT, STREAM_IDLE_TIMEOUT],
  none: NONE,
  parse(r) {
    const connectTimeoutMs = r.value(CONNECT_TIMEOUT, Duration) ?? null;
    const responseTimeoutMs = r.value(RESPONSE_TIMEOUT, Duration) ?? null;
    const streamIdleTimeoutMs = r.value(STREAM_IDLE_TIMEOUT, Duration) ?? null;
    if (connectTimeoutMs === null && responseTimeoutMs === null && streamIdleTimeoutMs === null) return NONE;
    return Object.freeze({ connectTimeoutMs, responseTimeoutMs, streamIdleTimeoutMs });
  },
};
