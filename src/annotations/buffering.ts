// Request and response buffering: ingress-nginx's proxy-request-buffering,
// client-body-buffer-size and proxy-buffering (annotations/proxy/main.go and
// annotations/clientbodybuffersize/main.go; nginx.tmpl writes them as nginx's
// proxy_request_buffering, client_body_buffer_size and proxy_buffering). The proxy reads
// RouteOptions.requestBufferSize (src/proxy/pipeline/buffer.ts; docs/design.md, "Request buffering").
import * as v from "valibot";
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { oneOf } from "./values.ts";

export interface BufferingPolicy {
  /** Bytes read whole before the upstream is contacted; 0 = streamed; null = --request-buffer-size. */
  readonly requestBufferSize: number | null;
}

const NO_DISK =
  "Portico writes no temporary file: a body larger than the route's buffer size (`client-body-buffer-size`, else `--request-buffer-size`, 1m), or one that does not fit in `--request-buffer-budget` (64m per process) beside the bodies already held, is streamed to the pod as with `off` (nginx keeps it in a temp file and still reads it whole).";

export const REQUEST_BUFFERING: AnnotationSpec = {
  portico: "portico.dev/request-buffering",
  nginx: [`${NGINX_PREFIX}proxy-request-buffering`],
  family: "buffering",
  default: "on",
  description:
    "`on`: read the whole request body before a pod is contacted (a slow client holds no pod connection; the body can be sent to another pod on a retry; the pod gets Content-Length); `off`: stream it",
  compat: { kind: "differs", difference: `${NO_DISK} \`off\` is served the same: the body streams to the pod in both.` },
  sameWhen: (value) => value.trim().toLowerCase() === "off",
};

export const REQUEST_BUFFER_SIZE: AnnotationSpec = {
  portico: "portico.dev/request-buffer-size",
  nginx: [`${NGINX_PREFIX}client-body-buffer-size`],
  family: "buffering",
  default: "--request-buffer-size",
  description: "bytes or `8k`, `1m`: the largest request body buffered, in memory; larger bodies stream; `0` = stream every body",
  compat: {
    kind: "differs",
    difference:
      "In nginx it is the part held in memory (default 8k) before the rest goes to a temp file; in Portico it is all that is buffered. An invalid value keeps the default with a diagnostic (ingress-nginx drops the Ingress).",
  },
};

export const RESPONSE_BUFFERING: AnnotationSpec = {
  portico: null,
  nginx: [`${NGINX_PREFIX}proxy-buffering`],
  family: "buffering",
  default: "off",
  description: "`on` or `off`; accepted, and responses are relayed as with `off` (ingress-nginx's default)",
  compat: {
    kind: "differs",
    difference:
      "`on` changes nothing: a response declaring up to 64 KiB is read whole before it is relayed (the pod is freed at once, as with nginx's buffers); a larger one streams at the client's pace, so a slow client keeps the pod's connection busy, where nginx would read up to 1 GiB ahead into a temp file. `off`, ingress-nginx's default, is served the same.",
  },
  // nginx reads on/off in any case (ngx_conf_set_flag_slot), as oneOf does here.
  sameWhen: (value) => value.trim().toLowerCase() === "off",
};

const OnOff = oneOf(["on", "off"] as const, "expected on or off");

/** nginx's size syntax as ingress-nginx emits it (`8k`, `1m`, bytes); 0 is zero, not unlimited. */
const BufferSize = v.pipe(
  v.string(),
  v.trim(),
  v.regex(/^\d{1,15}[kmg]?$/i, "expected a byte size such as 8192, 16k or 1m"),
  v.transform((s) => {
    const m = /^(\d+)([kmg]?)$/i.exec(s) as RegExpExecArray;
    const unit = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[(m[2] ?? "").toLowerCase()] ?? 1;
    return Number(m[1]) * unit;
  }),
  v.check((n) => Number.isSafeInteger(n), "size too large"),
);

const NONE: BufferingPolicy = Object.freeze({ requestBufferSize: null });
const STREAMED: BufferingPolicy = Object.freeze({ requestBufferSize: 0 });

export const BUFFERING: Family<BufferingPolicy> = {
  name: "buffering",
  annotations: [REQUEST_BUFFERING, REQUEST_BUFFER_SIZE, RESPONSE_BUFFERING],
  none: NONE,
  parse(r) {
    const buffering = r.value(REQUEST_BUFFERING, OnOff);
    const size = r.value(REQUEST_BUFFER_SIZE, BufferSize);
    // Read so that a bad value is reported; either value relays responses the same way.
    r.value(RESPONSE_BUFFERING, OnOff);
    if (buffering === "off") return STREAMED;
    return size === undefined ? NONE : Object.freeze({ requestBufferSize: size });
  },
};
