// Request and response buffering: ingress-nginx's proxy-request-buffering,
// client-body-buffer-size and proxy-buffering (annotations/proxy/main.go and
// annotations/clientbodybuffersize/main.go; nginx.tmpl writes them as nginx's
// proxy_request_buffering, client_body_buffer_size, proxy_buffering, proxy_buffer_size and
// proxy_buffers). The proxy reads RouteOptions.requestBufferSize (src/proxy/pipeline/buffer.ts;
// docs/design.md, "Request buffering") and proxyBuffering / proxyBufferSize
// (src/proxy/upstream/response-buffering.ts; docs/design.md, "Response buffering").
import * as v from "valibot";
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { oneOf } from "./values.ts";

export interface BufferingPolicy {
  /** Bytes read whole before the upstream is contacted; 0 = streamed; null = --request-buffer-size. */
  readonly requestBufferSize: number | null;
  /** proxy-buffering: a streamed answer is held in buffers (upstream/response-buffering.ts); null = --proxy-buffering. */
  readonly proxyBuffering: boolean | null;
  /** proxy-buffer-size: the size of those buffers; null = --proxy-buffer-size. */
  readonly proxyBufferSize: number | null;
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
      "In nginx it is the part held in memory (default 8k) before the rest goes to a temp file; in Portico it is all that is buffered. An invalid value keeps the default with a diagnostic (ingress-nginx drops the Ingress; a `g` size, which its check lets through, fails nginx's reload, so the last good configuration stays).",
  },
};

const HELD =
  "Portico writes no temporary file and reads the pod only as fast as the client takes the answer: it holds one buffer at most (at most 1 MiB, whatever the size says), where nginx reads on into its other buffers and then a temp file of up to 1 GiB, freeing the pod while a slow client drains.";

export const RESPONSE_BUFFERING: AnnotationSpec = {
  portico: null,
  nginx: [`${NGINX_PREFIX}proxy-buffering`],
  family: "buffering",
  default: "--proxy-buffering (off)",
  description:
    "`on`: a streamed answer reaches the client a buffer (`proxy-buffer-size`) at a time, or at its end, as nginx's proxy_buffering holds it (the pod's `X-Accel-Buffering: yes`/`no` turns it on or off for one answer); `off`: each piece as the pod sends it",
  compat: {
    kind: "differs",
    difference:
      `The client gets the same pieces at the same points for an answer with a Content-Length above 64 KiB or with none (closed by the pod). An answer declaring at most 64 KiB is read whole before it is relayed, with buffering on or off (nginx sends each full buffer as it fills). A chunked answer goes out as each read of the pod comes (Bun's fetch does not tell where a chunk ends; nginx sends a read that ends a chunk at once and holds the rest of a chunk split across reads). ${HELD} \`off\`, ingress-nginx's default, is served the same.`,
  },
  // nginx reads on/off in any case (ngx_conf_set_flag_slot), as oneOf does here.
  sameWhen: (value) => value.trim().toLowerCase() === "off",
};

export const RESPONSE_BUFFER_SIZE: AnnotationSpec = {
  portico: null,
  nginx: [`${NGINX_PREFIX}proxy-buffer-size`],
  family: "buffering",
  default: "--proxy-buffer-size (4k)",
  description: "bytes or `8k`, `1m`: with proxy-buffering on, the size of each buffer; the first holds the pod's status line and header block too",
  compat: {
    kind: "differs",
    difference:
      "Only the response buffers' size: in nginx it also bounds the pod's header block (502 above it), which in Portico is `--max-response-header-size` (64k). Held at most 1 MiB. An invalid value keeps the default with a diagnostic (ingress-nginx drops the Ingress; a `g` size, which its check lets through, fails nginx's reload, so the last good configuration stays).",
  },
};

export const RESPONSE_BUFFERS_NUMBER: AnnotationSpec = {
  portico: null,
  nginx: [`${NGINX_PREFIX}proxy-buffers-number`],
  family: "buffering",
  default: "4",
  description: "a number: checked, and changes nothing the client sees",
  compat: {
    kind: "differs",
    difference: `In nginx it bounds how far the pod is read ahead of a slow client before a temp file is used. ${HELD}`,
  },
};

const OnOff = oneOf(["on", "off"] as const, "expected on or off");

/**
 * nginx's size syntax (`8k`, `1m`, bytes); 0 is zero, not unlimited. client_body_buffer_size and
 * proxy_buffer_size are read by ngx_conf_set_size_slot, whose ngx_parse_size takes k/K and m/M
 * only: `1g` (or `8b`), which ingress-nginx's SizeRegex (`^(?i)\d+[bkmg]?$`) lets through, makes
 * nginx refuse the configuration, so ingress-nginx keeps the last good one; here it is refused
 * with a diagnostic and the default kept. (ngx_parse_offset, for offsets such as
 * client_max_body_size, takes g too: annotations/values.ts Size.)
 */
const BufferSize = v.pipe(
  v.string(),
  v.trim(),
  v.regex(/^\d{1,15}[km]?$/i, "expected a byte size such as 8192, 16k or 1m (nginx takes no g here)"),
  v.transform((s) => {
    const m = /^(\d+)([km]?)$/i.exec(s) as RegExpExecArray;
    const unit = { "": 1, k: 1024, m: 1024 ** 2 }[(m[2] ?? "").toLowerCase()] ?? 1;
    return Number(m[1]) * unit;
  }),
  v.check((n) => Number.isSafeInteger(n), "size too large"),
);

/** A response buffer: at least one byte (nginx refuses a zero size). compile/nginx-configmap.ts reads the ConfigMap key so too. */
export const ResponseBufferSize = v.pipe(BufferSize, v.minValue(1, "expected a size of at least 1 byte"));
/** proxy-buffers-number: ingress-nginx's GetIntAnnotation, and nginx wants at least one buffer; the ConfigMap key's too. */
export const BuffersNumber = v.pipe(v.string(), v.trim(), v.regex(/^[0-9]{1,9}$/, "expected a number of buffers"), v.transform(Number), v.minValue(1, "expected at least 1 buffer"));

const NONE: BufferingPolicy = Object.freeze({ requestBufferSize: null, proxyBuffering: null, proxyBufferSize: null });

export const BUFFERING: Family<BufferingPolicy> = {
  name: "buffering",
  annotations: [REQUEST_BUFFERING, REQUEST_BUFFER_SIZE, RESPONSE_BUFFERING, RESPONSE_BUFFER_SIZE, RESPONSE_BUFFERS_NUMBER],
  none: NONE,
  parse(r) {
    const buffering = r.value(REQUEST_BUFFERING, OnOff);
    const size = r.value(REQUEST_BUFFER_SIZE, BufferSize);
    const response = r.value(RESPONSE_BUFFERING, OnOff);
    const responseSize = r.value(RESPONSE_BUFFER_SIZE, ResponseBufferSize);
    // Read so that a bad value is reported; the number changes nothing the client sees.
    r.value(RESPONSE_BUFFERS_NUMBER, BuffersNumber);
    const requestBufferSize = buffering === "off" ? 0 : size ?? null;
    const proxyBuffering = response === undefined ? null : response === "on";
    const proxyBufferSize = responseSize ?? null;
    if (requestBufferSize === null && proxyBuffering === null && proxyBufferSize === null) return NONE;
    return Object.freeze({ requestBufferSize, proxyBuffering, proxyBufferSize });
  },
};
