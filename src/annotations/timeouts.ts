// Upstream timeouts for the routes of one Ingress (the proxy reads them from RouteOptions).
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX, valueIn } from "./spec.ts";
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

// Declared before RESPONSE_TIMEOUT, whose sameWhen reads it.
export const STREAM_IDLE_TIMEOUT: AnnotationSpec = {
  portico: "portico.dev/stream-idle-timeout",
  nginx: [],
  family: "timeouts",
  default: "--stream-idle-timeout",
  description: "as above: idle time allowed in a streamed body or WebSocket; wins over `response-timeout` / `proxy-read-timeout` for these",
  compat: { kind: "portico-only" },
};

// nginx's proxy_read_timeout is one timer between two successive reads from the pod: it bounds the
// wait for the response head, every gap in the body (ngx_http_upstream.c,
// ngx_http_upstream_process_non_buffered_request and ngx_event_pipe: `ngx_add_timer(upstream->read,
// read_timeout)`) and an upgraded connection quiet both ways (ngx_http_upstream_process_upgraded
// re-arms it on every event of either side). So this annotation sets Portico's response deadline
// and, unless portico.dev/stream-idle-timeout is also set, its body and WebSocket idle time
// (docs/design.md "Upstream timeouts").
export const RESPONSE_TIMEOUT: AnnotationSpec = {
  portico: "portico.dev/response-timeout",
  nginx: [`${NGINX_PREFIX}proxy-read-timeout`],
  family: "timeouts",
  default: "--response-timeout",
  description: "as above: deadline for the response headers (then 504), and the idle time allowed between two reads of a streamed body or in a WebSocket (then the body is cut, the WebSocket closed) unless `stream-idle-timeout` is set too",
  compat: {
    kind: "differs",
    difference: `${UNITS} A whole number of seconds is served the same, unless \`portico.dev/stream-idle-timeout\` is set too: that one then sets the idle time of bodies and WebSockets.`,
  },
  // An empty stream-idle-timeout is unset, as the reader takes it (spec.ts valueIn).
  sameWhen: (value, all) => isWholeSeconds(value) && valueIn(STREAM_IDLE_TIMEOUT, all) === undefined,
};

const NONE: TimeoutsPolicy = Object.freeze({ connectTimeoutMs: null, responseTimeoutMs: null, streamIdleTimeoutMs: null });

export const TIMEOUTS: Family<TimeoutsPolicy> = {
  name: "timeouts",
  annotations: [CONNECT_TIMEOUT, RESPONSE_TIMEOUT, STREAM_IDLE_TIMEOUT],
  none: NONE,
  parse(r) {
    const connectTimeoutMs = r.value(CONNECT_TIMEOUT, Duration) ?? null;
    const responseTimeoutMs = r.value(RESPONSE_TIMEOUT, Duration) ?? null;
    // The read timeout is also the idle time between reads (see RESPONSE_TIMEOUT); Portico's own
    // stream-idle-timeout, when given, wins for bodies and WebSockets.
    const streamIdleTimeoutMs = r.value(STREAM_IDLE_TIMEOUT, Duration) ?? responseTimeoutMs;
    if (connectTimeoutMs === null && responseTimeoutMs === null && streamIdleTimeoutMs === null) return NONE;
    return Object.freeze({ connectTimeoutMs, responseTimeoutMs, streamIdleTimeoutMs });
  },
};
